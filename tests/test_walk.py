"""Random walks and shrinking: reproducible runs, BFS's verdicts, counterexamples that replay and are 1-minimal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.core.scenario import parse_text, run
from kcm.checkers.explore import bfs
from kcm.checkers.explore.shrink import advance, is_one_minimal, shrink, violation_length
from kcm.checkers.explore.walk import walk
from kcm.checkers.reductions.dead_brokers import DeadBrokersModel
from kcm.model import actions as A

from kcm.cli import main

# Pre-KIP-101 truncation (to the HW) on three replicas: an acked record is lost after two failures.
KIP101 = {"name": "kip101", "brokers": [0, 1, 2], "truncation": "high_watermark", "topics": {"t": {"0": [0, 1, 2]}},
          "families": ["broker_failure", "data_plane"],
          "bounds": {"max_failures": 2, "max_restarts": 1, "max_leader_epoch": 3, "max_records": 2}}
LOSS = "AckedRecordsSurvive"
TP = ("t", 0)


def _without_time(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("seconds", "states_per_second")}


def test_same_seed_same_run_other_seed_other_run():
    model = BoundedSystem(load_config("tiny"))
    first, again = walk(model, 40, 25, seed=5), walk(model, 40, 25, seed=5)
    assert _without_time(first.to_json(model)) == _without_time(again.to_json(model))
    other = walk(model, 40, 25, seed=6)
    assert (other.distinct_states, other.transitions) != (first.distinct_states, first.transitions)


def test_walks_agree_with_bfs_on_tiny():
    model = BoundedSystem(load_config("tiny"))
    full = bfs.explore(model)
    found = walk(model, 60, 30, seed=1)
    assert 1 < found.distinct_states <= full.distinct_states
    assert not found.complete and found.violations == {}
    assert found.reached <= full.reached and found.reached  # some sometimes-property is reached by a walk
    assert found.depth <= 30 and found.transitions >= found.depth
    verdicts = found.verdicts(model.properties())
    within = f"not violated within {found.distinct_states:,} states"  # a walk run never says "holds"
    assert all(verdicts[p] == within for p, v in full.verdicts(model.properties()).items() if v == "holds")


def test_depth_bounds_every_walk():
    model = BoundedSystem(load_config("tiny"))
    assert walk(model, 10, 0, seed=1).distinct_states == 1
    assert walk(model, 10, 3, seed=1).depth <= 3
    with pytest.raises(ValueError, match="walks must be at least 1"):
        walk(model, 0, 5, seed=1)


def test_walk_counterexample_is_shrunk_one_minimal_and_replays():
    model = BoundedSystem(KIP101)
    found = walk(model, 200, 20, seed=1)
    assert LOSS in found.violations
    trace = found.violations[LOSS]
    assert found.raw_lengths[LOSS] > len(trace)  # this walk took detours that shrinking removed
    assert violation_length(model, trace, LOSS) == len(trace)
    assert is_one_minimal(model, trace, LOSS)
    shortest = bfs.explore(model, max_states=1000)  # the violation is at depth 5, reached after about 2,000 states
    assert len(trace) <= len(shortest.violations[LOSS]) + 2
    outcome = run(parse_text(json.dumps(model.scenario(trace)).encode()))
    assert outcome.mismatches == []
    summary = found.to_json(model)["counterexamples"][LOSS]
    assert (summary["raw_length"], summary["length"]) == (found.raw_lengths[LOSS], len(trace))


def test_shrinking_removes_detours_and_keeps_the_violation():
    model = BoundedSystem(KIP101)
    # Broker 1 restarts and a second record is produced before the leader fails: neither step is needed.
    detour = [A.Produce(TP), A.Replicate(TP), A.Replicate(TP), A.BrokerFail(1), A.BrokerStart(1), A.Produce(TP),
              A.BrokerFail(0)]
    assert violation_length(model, detour, LOSS) == len(detour)
    small = shrink(model, detour, LOSS)
    assert small == detour[:4] + detour[6:]
    assert is_one_minimal(model, small, LOSS) and not is_one_minimal(model, detour, LOSS)
    # A trace that breaks nothing is not a counterexample, and an action the bounds do not offer does not replay.
    with pytest.raises(ValueError, match="does not replay"):
        shrink(model, detour[:-1], LOSS)
    assert violation_length(model, [A.BrokerStart(1)] + detour, LOSS) is None  # broker 1 is not down
    state = model.init_states()[0]
    for action in (A.BrokerFail(1), A.BrokerFail(2)):
        state, _ = advance(model, state, action)
    assert advance(model, state, A.BrokerFail(0)) is None  # a third failure is past max_failures
    with pytest.raises(ValueError, match="sometimes"):
        violation_length(model, detour, "SomeRecordAcked")


def test_cli_walk_mode_writes_scenarios_and_refuses_bad_numbers(capsys, tmp_path):
    args = ["explore", "--config", "unclean", "--quiet", "--walks", "60", "--depth", "20", "--seed", "3"]
    assert main(args + ["--json", "--out", str(tmp_path)]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["engine"] == "walk" and summary["walks"] == {"walks": 60, "depth": 20, "seed": 3}
    cex = summary["counterexamples"][LOSS]
    assert cex["raw_length"] >= cex["length"] >= 1
    written = json.loads((tmp_path / f"{LOSS}.json").read_text())
    assert written == cex["scenario"]
    assert main(args) == 1
    assert "shrunk to" in capsys.readouterr().out
    assert main(["explore", "--config", "tiny", "--walks", "0", "--depth", "5"]) == 2
    assert "--walks" in capsys.readouterr().err


def test_same_seed_same_run_in_other_processes():
    # Python's string hashing changes per process; nothing a walk chooses may depend on it.
    runs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-m", "kcm.cli", "explore", "--config", "tiny", "--quiet", "--json",
                              "--walks", "20", "--depth", "15", "--seed", "9"],
                             capture_output=True, text=True, env=env)
        assert out.returncode == 3, out.stderr  # a walk run is partial: no violation found, nothing shown to hold
        runs.append(_without_time(json.loads(out.stdout)))
    assert runs[0] == runs[1]
    # a walk of tiny: no broker symmetry, no partial order; the dead-broker reduction counts states by their class
    assert runs[0].pop("reductions")["applied"] == ["dead-brokers"]
    model = BoundedSystem(load_config("tiny"))
    walked = walk(DeadBrokersModel(model, model), 20, 15, seed=9)
    assert runs[0] == _without_time({**walked.to_json(model), "config": "tiny"})
