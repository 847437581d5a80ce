"""`kcm prove`: the invariants are inductive under both rule sets, seeded bugs break the matching proofs."""

from __future__ import annotations

import argparse
import json

import pytest
import z3
from kcm.checkers.prove.encoding import PARTITION_CODES, REPLICA_CODES, Encoding
from kcm.checkers.prove.invariants import INVARIANTS, invariant
from kcm.checkers.prove.proofs import NO_VIOLATION, NOT_INDUCTIVE, PROVED, VIOLATED, bmc, prove
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import rule_set

from kcm.commands import prove as prove_command


@pytest.mark.parametrize("rules", ["seeds", "kafka"])
def test_every_invariant_is_proved_inductive(rules: str) -> None:
    enc = Encoding(rule_set(rules), 3)
    results = {inv.name: prove(enc, inv) for inv in INVARIANTS}
    assert {name: r.verdict for name, r in results.items()} == {inv.name: PROVED for inv in INVARIANTS}
    # The three that need a strengthening say so and keep the counterexample to induction that needed it.
    for name in ("OneLiveLeaderPerEpoch", "ArShrinksLast", "LeaderInIsrInAr"):
        assert results[name].strengthening, name
        assert results[name].needed_because is not None, name
    assert results["OneLiveLeaderPerEpoch"].needed_because.conjunct == "OneLiveLeaderPerEpoch"
    # ISR outside AR is allowed for a leaderless partition's last member (a replaced reassignment's); the
    # reassignment selector would elect it if RAR could leave AR, which ReassignmentArIsUnion excludes.
    assert results["LeaderInIsrInAr"].needed_because.conjunct == "LeaderInIsrInAr"
    for name in ("ControllerEpochMonotone", "ValidTransition"):
        assert results[name].needed_because is None, name


def test_one_leader_per_epoch_on_five_brokers() -> None:
    assert prove(Encoding(rule_set("seeds"), 5), invariant("OneLiveLeaderPerEpoch")).verdict == PROVED


def test_no_leader_epoch_bump_breaks_one_leader_per_epoch() -> None:
    enc = Encoding(rule_set("seeds"), 3, bump_epoch_on_election=False)
    r = prove(enc, invariant("OneLiveLeaderPerEpoch"))
    assert r.verdict == NOT_INDUCTIVE
    cex = r.counterexample
    assert cex.conjunct == "BelievedLeadersWereElected"
    assert cex.action.startswith("ElectLeader(")
    before, after = cex.states
    assert before["leader_epoch"] == after["leader_epoch"]  # the election reused the epoch
    # BMC turns it into a real execution: two brokers lead with the same epoch.
    trace = prove(Encoding(rule_set("seeds"), 2, bump_epoch_on_election=False), invariant("OneLiveLeaderPerEpoch"), 6)
    assert trace.verdict == VIOLATED and trace.cti.conjunct == "BelievedLeadersWereElected"
    last = trace.counterexample.states[-1]
    assert len(last["believes_leader"]) == 2
    assert len({last["broker_leader_epoch"][b] for b in last["believes_leader"]}) == 1
    assert trace.counterexample.actions[0].startswith("ControllerElection")


def test_no_controller_epoch_check_breaks_fencing() -> None:
    enc = Encoding(rule_set("kafka"), 3, brokers_check_controller_epoch=False)
    r = prove(enc, invariant("ControllerEpochMonotone"))
    assert r.verdict == NOT_INDUCTIVE
    cex = r.counterexample
    assert cex.conjunct == "ControllerEpochMonotone"
    assert cex.action.startswith("BrokerAcceptsLeaderAndIsr(")
    before, after = cex.states
    assert any(a < b for a, b in zip(after["broker_controller_epoch"], before["broker_controller_epoch"], strict=True))


def test_correct_model_survives_bmc() -> None:
    enc = Encoding(rule_set("seeds"), 2)
    assert bmc(enc, invariant("OneLiveLeaderPerEpoch"), 5).verdict == NO_VIOLATION
    assert bmc(enc, invariant("LeaderInIsrInAr"), 4).verdict == NO_VIOLATION


@pytest.mark.parametrize("rules", ["seeds", "kafka", "kafka-0.8"])
def test_symbolic_tables_allow_exactly_the_explicit_moves(rules: str) -> None:
    rs = rule_set(rules)
    enc = Encoding(rs, 1)
    solver = z3.Solver()
    for f in P.ALL:
        for t in P.ALL:
            formula = enc.partition_allows(z3.IntVal(PARTITION_CODES[f]), z3.IntVal(PARTITION_CODES[t]))
            assert z3.is_true(z3.simplify(formula)) == rs.allows_partition(f, t), (f, t)
    for f in R.ALL:
        for t in R.ALL:
            formula = enc.replica_allows(z3.IntVal(REPLICA_CODES[f]), z3.IntVal(REPLICA_CODES[t]))
            assert (solver.check(formula) == z3.sat) == rs.allows_replica(f, t), (f, t)


def _args(**kw: object) -> argparse.Namespace:
    base = dict(rules="seeds", brokers=2, invariant=None, bmc=None, config=None, bug=[], json=True, trace_depth=7)
    base.update(kw)
    return argparse.Namespace(**base)


def test_cli_json_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert prove_command.main(_args(invariant=["ValidTransition"])) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["invariant"], r["verdict"]) for r in out] == [("ValidTransition", "proved")]
    assert out[0]["solver_seconds"] >= 0
    assert prove_command.main(_args(invariant=["ControllerEpochMonotone"], bug=["no-controller-epoch-check"])) == 1
    out = json.loads(capsys.readouterr().out)
    # The failed induction step, then a trace from Init to a live broker accepting an older controller epoch.
    assert out[0]["verdict"] == "violated"
    assert out[0]["counterexample_to_induction"]["action"].startswith("BrokerAccepts")
    trace = out[0]["counterexample"]
    assert trace["actions"][-1].startswith("BrokerAccepts") and len(trace["states"]) == len(trace["actions"]) + 1
    before, after = trace["states"][-2:]
    assert any(a < b for a, b in zip(after["broker_controller_epoch"], before["broker_controller_epoch"], strict=True))


def test_cli_rejects_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert prove_command.main(_args(brokers=0)) == 2
    assert "--brokers" in capsys.readouterr().err
    assert prove_command.main(_args(bmc=2, config="no-such-config")) == 2
    assert "no config 'no-such-config'" in capsys.readouterr().err
    assert prove_command.main(_args(bmc=-1)) == 2
    assert "--bmc depth" in capsys.readouterr().err


def test_cli_bmc_on_a_scenario_config(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "two.json"
    cfg.write_text(json.dumps({"config": {"brokers": [0, 1], "rules": "kafka"}}))
    assert prove_command.main(_args(bmc=3, config=str(cfg), invariant=["LeaderInIsrInAr"])) == 0
    assert json.loads(capsys.readouterr().out)[0]["verdict"] == "no violation"
    cfg.write_text(json.dumps({"config": {"brokers": [0, 1], "rules": "nope"}}))
    assert prove_command.main(_args(bmc=3, config=str(cfg))) == 2
    assert '$.config.rules: must be one of "seeds", "kafka", "kafka-0.8", not "nope"' in capsys.readouterr().err


def test_every_action_is_enabled_somewhere_in_the_invariant() -> None:
    # A contradictory guard would make every proof about that action vacuously true.
    enc = Encoding(rule_set("kafka"), 2)
    s, t = enc.state("s"), enc.state("t")
    solver = z3.Solver()
    solver.add(enc.well_typed(s))
    for inv in INVARIANTS:
        solver.add(*[f(s) for _, f in inv.state], *[f(s) for _, f in inv.strengthening])
    dead = [a.name for a in enc.actions(s, t) if solver.check(a.formula) != z3.sat]
    assert dead == []


def test_a_leader_is_reachable_from_init() -> None:
    # Non-vacuity of the BMC runs: within four steps some broker believes it leads (its negation is violated).
    enc = Encoding(rule_set("seeds"), 2)
    s = enc.state("0")
    solver = z3.Solver()
    solver.add(enc.init(s))
    states = [s]
    for k in range(4):
        t = enc.state(str(k + 1))
        solver.add(enc.next(states[-1], t))
        states.append(t)
    assert solver.check(z3.Or([states[-1].leads(b) for b in range(2)])) == z3.sat
    assert solver.check(z3.Or([states[2].leads(b) for b in range(2)])) == z3.unsat  # creation and election come first
