"""Every sample trace in specs/traces/ is judged as its name says: valid, or invalid at the named line."""

import re
from pathlib import Path

import pytest
from kcm.checkers.oracle_trace import check_lines
from kcm.model.tables import rule_set

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "specs" / "traces").glob("*.jsonl"))


def test_samples_exist():
    assert any(p.name.startswith("valid") for p in SAMPLES) and any(p.name.startswith("invalid") for p in SAMPLES)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_verdict(path):
    v = check_lines(path.read_text().splitlines(), rule_set("seeds"))
    m = re.match(r"invalid_line(\d+)_", path.name)
    if m is None:
        assert v.ok, v
    else:
        assert (v.ok, v.malformed, v.line) == (False, False, int(m.group(1)))
