"""Every scenario of the library runs through the same code path as `kcm run` and holds its expectations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.core.scenario import parse_text, run

LIBRARY = Path(__file__).resolve().parent.parent / "specs" / "scenarios"
FILES = sorted(p for p in LIBRARY.rglob("*.json"))


def test_the_library_is_not_empty():
    assert len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(LIBRARY)))
def test_scenario_holds(path):
    outcome = run(parse_text(path.read_bytes()), trace=True)
    assert outcome.mismatches == []


@pytest.mark.parametrize("name", ["ops/errors.json", "ops/reassignment-seed-example.json"])
def test_cli_runs_a_scenario(name):
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", "--trace", str(LIBRARY / name)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {"controller", "live_brokers", "partitions", "replicas", "reassignments", "log"} <= set(doc)


def test_a_failed_expectation_exits_1_and_names_the_field(tmp_path):
    doc = json.loads((LIBRARY / "ops" / "broker-failure.json").read_text())
    doc["expect"]["partitions"]["t-0"]["leader"] = 0
    f = tmp_path / "wrong.json"
    f.write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", str(f)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "expect.partitions.t-0.leader: expected 0, got 2" in done.stderr


def test_expect_error_that_does_not_happen_exits_1():
    doc = {"config": {"brokers": [0, 1]}, "steps": [
        {"op": "create_topic", "topic": "t", "assignment": {"0": [0, 1]}},
        {"op": "broker_fail", "broker": 1, "expect_error": "BrokerNotAvailable"}]}
    outcome = run(parse_text(json.dumps(doc).encode()))
    assert outcome.exit_code == 1 and "expected BrokerNotAvailable" in outcome.mismatches[0]


def test_refused_steps_leave_the_result_unchanged():
    base = {"config": {"brokers": [0, 1, 2]}, "steps": [
        {"op": "create_topic", "topic": "t", "assignment": {"0": [0, 1]}}]}
    plain = run(parse_text(json.dumps(base).encode())).result
    refused = dict(base, steps=base["steps"] + [
        {"op": "partition_transition", "partitions": ["t-0"], "target": "NewPartition",
         "expect_error": "IllegalStateTransition"},
        {"op": "broker_start", "broker": 2, "expect_error": "BrokerNotAvailable"},
        {"op": "reassign", "partition": "t-0", "replicas": [0, 9], "expect_error": "InvalidReplicaAssignment"}])
    outcome = run(parse_text(json.dumps(refused).encode()))
    assert outcome.mismatches == [] and outcome.result == plain


def test_seed_reassignment_table_step_by_step(capsys):
    """Seeds 000/002: OAR {1,2,3} -> RAR {4,5,6}; AR, ISR and leader as the seeds' table, in rule 8's order."""
    doc = {"config": {"brokers": [1, 2, 3, 4, 5, 6]}, "steps": [
        {"op": "create_topic", "topic": "t", "assignment": {"0": [1, 2, 3]}},
        {"op": "reassign", "partition": "t-0", "replicas": [4, 5, 6]},
        {"op": "replicate", "partition": "t-0"}]}
    rows = []
    for n in range(1, 4):
        result = run(parse_text(json.dumps(dict(doc, steps=doc["steps"][:n])).encode())).result["partitions"]["t-0"]
        rows.append((result["replicas"], result["leader"], result["isr"], result["leader_epoch"]))
    print("\nAR | leader | ISR | leader epoch")
    for row in rows:
        print(" | ".join(str(x) for x in row))
    assert rows[0][:3] == ([1, 2, 3], 1, [1, 2, 3])              # initial state
    assert rows[1][:3] == ([4, 5, 6, 1, 2, 3], 1, [1, 2, 3])     # step 2: AR = OAR + RAR
    assert rows[2][:3] == ([4, 5, 6], 4, [4, 5, 6])              # steps 4-10: RAR joined, leader 4, AR = RAR
    assert rows[0][3] == 0 and rows[1][3] == 1 and rows[2][3] > rows[1][3]  # rule 11's bumps
