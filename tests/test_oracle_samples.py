"""Every sample trace in specs/traces/ is judged as the manifest (or its name) says, through the CLI too."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.oracle.oracle_trace import check_file, rule_id
from kcm.model.tables import rule_set

TRACES = Path(__file__).resolve().parent.parent / "specs" / "traces"
SAMPLES = sorted(TRACES.glob("*.jsonl"))
EXPECTED = json.loads((TRACES / "manifest.json").read_text())["expected"]
NEW_TYPES = ("request_sent", "request_received", "broker_up", "broker_down", "produce", "fetch",
             "leader_and_isr_write", "controller_elected")


def test_every_failing_sample_is_in_the_manifest_and_exists():
    for path in SAMPLES:
        assert ("invalid" in path.name or path.name.startswith("malformed")) == (path.name in EXPECTED), path.name
    assert set(EXPECTED) <= {p.name for p in SAMPLES}


def test_every_event_type_appears_in_a_valid_sample_and_breaks_some_invalid_one():
    valid_types = {json.loads(line)["type"] for p in SAMPLES if p.name.startswith("valid")
                   for line in p.read_text().splitlines() if line.strip()}
    assert set(NEW_TYPES) <= valid_types
    failing_types = set()
    for name, exp in EXPECTED.items():
        if exp["verdict"] == "violation":
            lines = (TRACES / name).read_text().splitlines()
            failing_types.add(json.loads(lines[exp["line"] - 1])["type"])
    assert set(NEW_TYPES) <= failing_types


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_verdict(path):
    v = check_file(str(path), rule_set("seeds"))
    exp = EXPECTED.get(path.name)
    if exp is None:
        assert v.ok, v.message()
    else:
        assert (v.ok, v.malformed, v.line) == (False, exp["verdict"] == "malformed", exp["line"])
        if v.malformed:
            assert exp["rule"] in v.rule
        else:
            assert rule_id(v.rule) == exp["rule"]


@pytest.mark.parametrize("name", ["valid_failover_produce_fetch.jsonl",
                                  "invalid_stale_controller_request_applied.jsonl",
                                  "malformed_binary.jsonl", "malformed_truncated.jsonl"])
def test_cli_exit_codes(name):
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "check-trace", str(TRACES / name)],
                          capture_output=True, text=True)
    exp = EXPECTED.get(name)
    assert done.returncode == (0 if exp is None else 1 if exp["verdict"] == "violation" else 2)
    assert "Traceback" not in done.stderr
    if exp is not None:
        assert f"line {exp['line']}:" in done.stdout + done.stderr
