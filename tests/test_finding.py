"""One verdict shape: check-trace, check-log and conform report a failure as the same Finding (rule id, message,
location, evidence), beside the keys each has always printed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kcm.checkers.conformance import conform
from kcm.checkers.oracle import finding, log_rules, oracle_trace

from kcm.cli import main

ROOT = Path(__file__).resolve().parent.parent
SHAPE = {"rule_id", "message", "location", "evidence"}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_oracles_and_conform_share_one_finding_class() -> None:
    assert log_rules.Finding is finding.Finding
    assert oracle_trace.Finding is finding.Finding
    assert conform.Finding is finding.Finding


def test_check_trace_reports_its_violation_as_a_finding(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "specs" / "traces" / "invalid_broker_up_twice.jsonl")
    code, doc = _json(capsys, "check-trace", path)
    found = doc["finding"]
    assert code == 1 and set(found) == SHAPE
    assert found["rule_id"] == doc["rule_id"] == "TraceConsistent" and found["message"] == doc["rule"]
    assert found["location"] == {"source": path, "line": doc["line"]}
    assert found["evidence"] == {"event": doc["event"], "state_before": doc["state_focus"]}
    valid = str(ROOT / "specs" / "traces" / "valid_create_online.jsonl")
    assert _json(capsys, "check-trace", valid)[1]["finding"] is None


def test_check_log_reports_its_violation_as_a_finding(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "specs" / "logs" / "kafka-0.10-invalid.log")
    code, doc = _json(capsys, "check-log", path)
    v = doc["first_violation"]
    assert code == 1 and SHAPE <= set(v)
    assert v["rule_id"] == v["rule"] == "ControllerEpochMonotone"
    assert v["location"] == {"source": path, "line": v["line"]} and v["line"] == 27
    assert v["evidence"] == {"state_before": v["state_before"]}


def test_conform_reports_each_failure_as_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    scenario = ROOT / "specs" / "scenarios" / "ops" / "broker-failure.json"
    (folder / "broker-failure.json").write_text(scenario.read_text())
    toy = f"{sys.executable} {ROOT / 'examples' / 'toy_controller' / 'adapter.py'}"
    for bug, kind, rid in (("no-leader-epoch-bump", "violation", None), ("divergent-election", "divergence",
                                                                         "divergence")):
        code, doc = _json(capsys, "conform", "--adapter", f"{toy} --bug {bug}", "--scenarios", str(folder))
        (r,) = doc["results"]
        found = r["finding"]
        assert code == 1 and r["verdict"] == kind and set(found) == SHAPE, r
        assert found["rule_id"] == (rid or r["rule_id"]) and found["message"] == r["message"]
        assert found["location"]["source"] == r["file"]
        if kind == "violation":
            assert found["location"]["line"] == r["line"] and found["evidence"]["event"] == r["event"]
        else:
            assert found["evidence"]["differences"] == r["differences"]
    code, doc = _json(capsys, "conform", "--adapter", toy, "--scenarios", str(folder))
    assert code == 0 and "finding" not in doc["results"][0]
