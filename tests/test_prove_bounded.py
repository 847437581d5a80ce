"""The exact symbolic encoding of the `tiny` explorer config against the explicit bounded system.

Moves: for every state the explorer reaches, the successors the Z3 relation admits from its projection are
exactly the projections of the explicit successors. The projection keeps /controller and /controller_epoch,
each broker's liveness, incarnation and accepted controller epoch, the controller's partition and replica
states, the partition znode (leader, leader epoch, ISR, writer's controller epoch), each broker's followed
leader and leader epoch, and the ghost leader per leader epoch. It leaves out zkVersions, the controller
context's copies of ZooKeeper, ghost.max_controller_epoch, the (constant) assignment, shutting-down flags and
the replica logs, high watermarks and cached ISR / replica lists; the test also checks that on tiny the
projection tells every reachable state apart, so nothing the explorer distinguishes is lost.

Verdicts: BMC gives the explorer's verdict for every property both check, at a depth the explicit model shows
is enough (see test_bmc_verdicts_equal_the_explorer_on_tiny).
"""

from __future__ import annotations

import argparse
import json

import pytest
import z3
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore.bfs import explore
from kcm.checkers.explore.verdicts import successors
from kcm.checkers.prove import bounded_bmc
from kcm.checkers.prove.bounded import BoundedEncoding, UnsupportedConfig, shown
from kcm.checkers.prove.vocabulary import BMC_FIELDS, Sym
from kcm.model import actions as A

from kcm.commands import prove as prove_command

BMC_DEPTH = 5


def _reachable(system: BoundedSystem) -> list:
    (init,) = system.init_states()
    seen, frontier = {init}, [init]
    while frontier:
        following = []
        for state in frontier:
            for _action, nxt, _effects in successors(system, state):
                if nxt not in seen:
                    seen.add(nxt)
                    following.append(nxt)
        frontier = following
    return list(seen)


def _key(values: dict) -> tuple:
    return tuple(sorted(values.items()))


def _constant(term: z3.ExprRef, value: object) -> z3.ExprRef:
    if z3.is_bool(term):
        return z3.BoolVal(bool(value))
    return z3.BitVecVal(int(value), term.size())


def _admitted(enc: BoundedEncoding, relation: z3.ExprRef, s: Sym, values: dict, t: Sym) -> set[tuple]:
    """Every successor the relation admits from the concrete state `values` (all solutions, one by one)."""
    pairs = []
    for field in BMC_FIELDS:
        term = getattr(s, field)
        terms = term if isinstance(term, tuple) else (term,)
        vals = values[field] if isinstance(values[field], tuple) else (values[field],)
        pairs += [(x, _constant(x, v)) for x, v in zip(terms, vals, strict=True)]
    solver = z3.Solver()
    solver.add(z3.simplify(z3.substitute(relation, *pairs)))
    found = set()
    while solver.check() == z3.sat:
        v = enc.values(solver.model(), t)
        found.add(_key(v))
        solver.add(z3.Not(enc.equals(t, v)))
    return found


def test_symbolic_and_explicit_moves_agree_on_every_tiny_state() -> None:
    system = BoundedSystem(load_config("tiny"))
    enc = BoundedEncoding(system)
    s, t = enc.state("s"), enc.state("t")
    relation = enc.next(s, t)
    states = _reachable(system)
    assert len(states) == explore(system).distinct_states
    assert len({_key(enc.project(x)) for x in states}) == len(states)  # the projection loses no distinction
    differ = []
    moves = 0
    for state in states:
        explicit = {_key(enc.project(nxt)) for _a, nxt, _e in successors(system, state)}
        symbolic = _admitted(enc, relation, s, enc.project(state), t)
        moves += len(explicit)
        if symbolic != explicit:
            differ.append((enc.project(state), explicit ^ symbolic))
    assert moves > len(states)
    assert differ == []


def test_init_is_the_explicit_initial_state() -> None:
    system = BoundedSystem(load_config("tiny"))
    enc = BoundedEncoding(system)
    s = enc.state("0")
    solver = z3.Solver()
    solver.add(enc.init(s))
    assert solver.check() == z3.sat
    assert enc.values(solver.model(), s) == enc.project(system.init_states()[0])


def _first_depths(system: BoundedSystem, names: list[str]) -> dict[str, int]:
    """The explicit BFS level at which each named state property is first true (reachability goals)."""
    props = {p.name: p for p in system.properties() if p.name in names}
    (init,) = system.init_states()
    seen, frontier, first, level = {init}, [init], {}, 0
    while frontier:
        for state in frontier:
            for name, p in props.items():
                if name not in first and p.condition(system, state):
                    first[name] = level
        following = []
        for state in frontier:
            for _action, nxt, _effects in successors(system, state):
                if nxt not in seen:
                    seen.add(nxt)
                    following.append(nxt)
        frontier, level = following, level + 1
    return first


def test_bmc_verdicts_equal_the_explorer_on_tiny() -> None:
    system = BoundedSystem(load_config("tiny"))
    found = explore(system)
    explicit = found.verdicts(system.properties())
    # The explorer's depth on tiny is 9, where one joint BMC query takes minutes (README); BMC_DEPTH is checked
    # instead, and the explicit model shows nothing deeper matters: every violation the explorer reports and
    # every goal it reaches is first seen within BMC_DEPTH steps, so deeper states can only repeat "holds".
    assert all(len(trace) <= BMC_DEPTH for trace in found.violations.values())
    goals = [n for n in bounded_bmc.GOALS if explicit.get(n) == "reached"]
    assert all(d <= BMC_DEPTH for d in _first_depths(system, goals).values())
    enc = BoundedEncoding(system)
    findings = bounded_bmc.bmc(enc, BMC_DEPTH, list(explicit))
    symbolic = {f.name: f.verdict for f in findings}
    assert symbolic == {name: explicit[name] for name in symbolic}
    # Every property the explorer checks is either checked here too or listed with the reason it is not.
    assert set(explicit) == set(symbolic) | (set(explicit) & set(bounded_bmc.EXPLORER_ONLY))
    assert set(symbolic).isdisjoint(bounded_bmc.EXPLORER_ONLY)
    # Each witness is a real run: replayed on the explicit model it passes through the same projected states.
    for f in findings:
        if f.verdict != bounded_bmc.REACHED:
            continue
        (state,) = system.init_states()
        assert shown(enc.project(state)) == f.states[0]
        for name, expected in zip(f.actions, f.states[1:], strict=True):
            state = system.next_state(state, _action(name))
            assert state is not None and shown(enc.project(state)) == expected, (f.name, name)


def _action(name: str) -> object:
    if name.startswith("BrokerFail("):
        return A.BrokerFail(int(name[11:-1]))
    if name.startswith("BrokerStart("):
        return A.BrokerStart(int(name[12:-1]))
    return {"ControllerResign": A.ControllerResign(), "PreferredElection": A.PreferredElection()}[name]


def test_bmc_reports_a_violation_with_its_shortest_trace() -> None:
    # Seeded bug in the encoding: a znode write keeps the leader epoch, so a new leader reuses it.
    enc = BoundedEncoding(BoundedSystem(load_config("tiny")), bump_leader_epoch=False)
    findings = {f.name: f for f in bounded_bmc.bmc(enc, 3, ["OneLeaderPerEpoch", "NoBrokerAheadOfZk"])}
    bad = findings["OneLeaderPerEpoch"]
    assert bad.verdict == bounded_bmc.VIOLATED
    assert len(bad.actions) == 1 and len(bad.states) == 2  # the first election already reuses epoch 0
    before, after = bad.states
    assert before["elected"][0] != after["elected"][0] and before["elected"][0] != -1
    assert findings["NoBrokerAheadOfZk"].verdict == bounded_bmc.HOLDS


def _args(**kw: object) -> argparse.Namespace:
    base = dict(rules="seeds", brokers=5, invariant=None, bmc=None, config=None, bug=[], json=True, trace_depth=7)
    base.update(kw)
    return argparse.Namespace(**base)


def test_cli_bmc_of_an_explorer_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert prove_command.main(_args(bmc=2, config="tiny")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"] == "tiny" and out["depth"] == 2
    verdicts = {r["property"]: r["verdict"] for r in out["results"]}
    assert verdicts["OneLeaderPerEpoch"] == "holds" and verdicts["SomeControllerFailover"] == "reached"
    assert all(r["solver_seconds"] >= 0 for r in out["results"])
    assert "AckedRecordsSurvive" in out["explorer_only"]
    assert prove_command.main(_args(bmc=1, config="tiny", json=False)) == 0
    text = capsys.readouterr().out
    assert "OneLiveLeaderPerEpoch" in text and "checked by kcm explore only" in text


def test_cli_refuses_configs_the_encoding_does_not_cover(capsys: pytest.CaptureFixture[str]) -> None:
    assert prove_command.main(_args(bmc=2, config="controller")) == 2
    assert "not encoded symbolically" in capsys.readouterr().err
    assert prove_command.main(_args(bmc=2, config="tiny", bug=["no-leader-epoch-bump"])) == 2
    assert "--bug" in capsys.readouterr().err
    with pytest.raises(UnsupportedConfig, match="one partition"):
        BoundedEncoding(BoundedSystem({"brokers": [0, 1], "topics": {"a": {"0": [0, 1], "1": [1, 0]}}}))
