"""Golden traces: `kcm run --emit-trace` writes the reference's own run; each shipped scenario's passes check-trace."""

import json
from pathlib import Path

import pytest
from kcm.checkers.core.scenario import read_file
from kcm.checkers.oracle.oracle_inputs import scenario_trace
from kcm.checkers.oracle.oracle_trace import JUDGED

from kcm.cli import main
from kcm.oracle import check_events, check_trace_file

SCENARIOS = Path(__file__).resolve().parent.parent / "specs" / "scenarios"
SHIPPED = sorted(SCENARIOS.rglob("*.json"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_golden_trace_of_every_shipped_scenario(path):
    """A correct controller's trace is valid; a bug variant's is judged as the scenario expects: it fails at the
    property the scenario says breaks when the oracle judges that property, and is valid otherwise (the bug lies
    in what a trace does not carry)."""
    doc = read_file(path)
    events = scenario_trace(doc)
    assert events[0]["type"] == "broker_up"
    v = check_events(events, doc["config"].get("rules", "seeds"))
    wanted = doc.get("expect_violation", {}).get("property")
    if doc["config"].get("variants") and wanted in JUDGED:
        assert not v.ok and v.rule_id == wanted, v.message()
    else:
        assert v.ok, v.message()


def test_emit_trace_writes_a_file_check_trace_accepts(tmp_path, capsys):
    trace = tmp_path / "golden.jsonl"
    scenario = SCENARIOS / "ops" / "reassignment-in-flight.json"
    assert main(["run", str(scenario), "--emit-trace", str(trace)]) == 0
    json.loads(capsys.readouterr().out)  # stdout is still the result document alone
    lines = trace.read_text().splitlines()
    assert lines and all(json.loads(x)["type"] for x in lines)
    assert check_trace_file(trace, "seeds").ok
    assert main(["check-trace", "--rules", "seeds", str(trace)]) == 0


def test_emit_trace_carries_every_znode_value_a_step_wrote():
    """A reassignment completing in a replicate step: the leader's ISR expansion, the controller's election of the
    new replica and its ISR shrink are three writes, each in the trace (one net write would hide the ISR the
    election chose from)."""
    doc = read_file(SCENARIOS / "kafka" / "ci-partition-reassignment.json")
    writes = [(e["leader"], e["isr"], e["zk_version"]) for e in scenario_trace(doc)
              if e["type"] == "leader_and_isr_write"]
    assert writes[-3:] == [(0, [0, 1], 2), (1, [0, 1], 3), (1, [1], 4)]


def test_emit_trace_unwritable_is_exit_2_one_line(tmp_path, capsys):
    scenario = SCENARIOS / "ops" / "broker-failure.json"
    assert main(["run", str(scenario), "--emit-trace", str(tmp_path / "no" / "such" / "dir.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "--emit-trace" in captured.err


def test_emit_trace_marks_elections_and_writes_the_data_plane():
    doc = read_file(SCENARIOS / "ops" / "preferred-election.json")
    marks = [e.get("election") for e in scenario_trace(doc) if e["type"] == "leader_and_isr_write"
             and e["leader_epoch"] > 0 and e["leader"] >= 0]
    assert "preferred" in marks and "offline" in marks
    doc = read_file(SCENARIOS / "bugs" / "kip101-log-divergence.json")
    kinds = {e["type"] for e in scenario_trace(doc)}
    assert {"produce", "fetch"} <= kinds
    v = check_events(scenario_trace(doc), "seeds")
    assert v.ok and "OffsetsConsistent" not in v.not_judged, v.message()


def test_a_leaders_isr_write_after_a_controller_failover_is_legal():
    """The leader's own ISR write carries the controller epoch its znode had, older than a new controller's that has
    not rewritten the partition: not a fenced write. A controller's write with an old epoch still is."""
    doc = {"name": "leader ISR write after failover", "config": {"brokers": [0, 1, 2]},
           "steps": [{"op": "create_topic", "topic": "t", "assignment": {"0": [1, 2]}},
                     {"op": "controller_resign", "broker": 2}, {"op": "isr_shrink", "partition": "t-0", "broker": 2},
                     {"op": "produce", "partition": "t-0"}, {"op": "replicate", "partition": "t-0"},
                     {"op": "replicate", "partition": "t-0"}]}
    events = scenario_trace(doc)
    own = [e for e in events if e["type"] == "leader_and_isr_write" and e["controller_epoch"] == 1][1:]
    assert own and check_events(events, "seeds").ok
    stale = dict(own[0], leader=2, leader_epoch=1, zk_version=own[-1]["zk_version"] + 1, isr=[1, 2])
    v = check_events(events + [stale], "seeds")
    assert v.rule_id == "ZkEpochFencing"
