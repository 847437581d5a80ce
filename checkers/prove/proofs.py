"""Induction proofs (Init => Inv, Inv and Next => Inv') and bounded model checking over the encoding."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import z3
from kcm.checkers.prove.encoding import Action, Encoding, State
from kcm.checkers.prove.invariants import Invariant
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R

PROVED, NOT_INDUCTIVE, VIOLATED = "proved", "not inductive", "violated"
NO_VIOLATION = "no violation"  # BMC: no execution of up to the depth breaks it (not a proof)


class SolverGaveUp(Exception):
    """Z3 answered unknown: neither a proof nor a counterexample."""


def _sat(solver: z3.Solver) -> bool:
    answer = solver.check()
    if answer == z3.unknown:
        raise SolverGaveUp(f"z3 answered unknown: {solver.reason_unknown()}")
    return answer == z3.sat


class Counterexample(NamedTuple):
    """A state (or trace) and the step that breaks a conjunct, as plain data."""

    conjunct: str
    action: str
    states: tuple[dict[str, Any], ...]  # before and after (a CTI), or a whole trace from Init
    actions: tuple[str, ...] = ()  # for a trace: the action of each step


class Result(NamedTuple):
    """The verdict on one invariant and what it took."""

    invariant: str
    verdict: str
    seconds: float
    strengthening: tuple[str, ...] = ()
    needed_because: Counterexample | None = None  # the CTI of the invariant alone, when it needed a strengthening
    counterexample: Counterexample | None = None
    cti: Counterexample | None = None  # when a trace shows the violation: the failed induction step that led to it


def _value(model: z3.ModelRef, term: Any) -> Any:
    v = model.eval(term, model_completion=True)
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return v.as_long()


def _members(enc: Encoding, model: z3.ModelRef, bv: Any) -> list[int]:
    x = _value(model, bv)
    return [b for b in range(enc.n) if x >> b & 1]


def describe(enc: Encoding, model: z3.ModelRef, s: State) -> dict[str, Any]:
    """A concrete state of the model, readable: Kafka's names, brokers as lists."""
    n = range(enc.n)
    epochs = {_value(model, s.replica_leader_epoch[b]) for b in n} | {_value(model, s.leader_epoch)}
    return {
        "controller_epoch": _value(model, s.controller_epoch),
        "controller": _value(model, s.controller),
        "alive": [b for b in n if _value(model, s.alive[b])],
        "broker_controller_epoch": [_value(model, s.broker_controller_epoch[b]) for b in n],
        "believes_leader": [b for b in n if _value(model, s.replica_leader[b]) == b],
        "broker_leader_epoch": [_value(model, s.replica_leader_epoch[b]) for b in n],
        "partition_state": _name(P.ALL, _value(model, s.partition_state)),
        "replica_state": [_name(R.ALL, _value(model, s.replica_state[b])) for b in n],
        "leader": _value(model, s.leader),
        "leader_epoch": _value(model, s.leader_epoch),
        "isr": _members(enc, model, s.isr),
        "ar": _members(enc, model, s.ar),
        "reassigning": _value(model, s.reassigning),
        "oar": _members(enc, model, s.original_replicas),
        "rar": _members(enc, model, s.target_replicas),
        "elected": {e: _value(model, s.elected[e]) for e in sorted(epochs) if e >= 0},
    }


def _name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 <= code < len(names) else f"<code {code}>"


def _conjuncts(enc: Encoding, inv: Invariant, s: State, with_strengthening: bool) -> list[tuple[str, Any]]:
    parts = [("well-typed", enc.well_typed(s))] + [(name, f(s)) for name, f in inv.state]
    if with_strengthening:
        parts += [(name.split(":")[0], f(s)) for name, f in inv.strengthening]
    return parts


def _find_cti(enc: Encoding, inv: Invariant, with_strengthening: bool) -> Counterexample | None:
    """A state satisfying the (strengthened) invariant and a step from it that breaks a conjunct, if any."""
    s, t = enc.state("s"), enc.state("t")
    before = _conjuncts(enc, inv, s, with_strengthening)
    after = _conjuncts(enc, inv, t, with_strengthening)
    steps = [(name, f(s, t, enc.step(s, t))) for name, f in inv.step]
    solver = z3.Solver()
    solver.add(*[f for _, f in before])
    for act in enc.actions(s, t):
        solver.push()
        solver.add(act.formula)
        for name, goal in [*after, *steps]:
            solver.push()
            solver.add(z3.Not(goal))
            if _sat(solver):
                m = solver.model()
                return Counterexample(name, _action_name(m, act), (describe(enc, m, s), describe(enc, m, t)))
            solver.pop()
        solver.pop()
    return None


def _action_name(model: z3.ModelRef, act: Action) -> str:
    if not act.params:
        return act.name
    vals = ", ".join(f"{p.decl().name().split('!')[0]}={_value(model, p)}" for p in act.params)
    return f"{act.name}[{vals}]"


def _init_violation(enc: Encoding, inv: Invariant) -> Counterexample | None:
    s = enc.state("init")
    solver = z3.Solver()
    solver.add(enc.init(s))
    for name, goal in _conjuncts(enc, inv, s, True):
        solver.push()
        solver.add(z3.Not(goal))
        if _sat(solver):
            return Counterexample(name, "Init", (describe(enc, solver.model(), s),))
        solver.pop()
    return None


def prove(enc: Encoding, inv: Invariant, trace_depth: int = 0) -> Result:
    """Check Init => Inv and Inv and Next => Inv' (plus the step conjuncts), strengthening when needed.

    When the (strengthened) invariant is not inductive and trace_depth > 0, BMC to that depth looks for an
    execution from Init that breaks it: found, the verdict is violated with the trace.
    """
    start = time.perf_counter()
    bad = _init_violation(enc, inv)
    if bad is not None:
        return Result(inv.name, VIOLATED, time.perf_counter() - start, counterexample=bad)
    alone = _find_cti(enc, inv, with_strengthening=False)
    if alone is None:
        return Result(inv.name, PROVED, time.perf_counter() - start)
    names = tuple(name for name, _ in inv.strengthening)
    if inv.strengthening:
        strong = _find_cti(enc, inv, with_strengthening=True)
        if strong is None:
            return Result(inv.name, PROVED, time.perf_counter() - start, names, alone)
    else:
        strong, alone = alone, None
    if trace_depth > 0:
        found = bmc(enc, inv, trace_depth)
        if found.verdict == VIOLATED:
            return Result(
                inv.name, VIOLATED, time.perf_counter() - start, names, alone, found.counterexample, cti=strong
            )
    return Result(inv.name, NOT_INDUCTIVE, time.perf_counter() - start, names, alone, strong)


def bmc(enc: Encoding, inv: Invariant, depth: int) -> Result:
    """Search every execution of up to depth steps from Init for one breaking the invariant (no strengthening)."""
    start = time.perf_counter()
    states = [enc.state("0")]
    solver = z3.Solver()
    solver.add(enc.init(states[0]))
    labels: list[list[Action]] = []
    for k in range(depth + 1):
        s = states[k]
        goals = [(name, f(s)) for name, f in inv.state]
        if k > 0:
            goals += [(name, f(states[k - 1], s, enc.step(states[k - 1], s))) for name, f in inv.step]
        for name, goal in goals:
            solver.push()
            solver.add(z3.Not(goal))
            if _sat(solver):
                m = solver.model()
                trace = tuple(describe(enc, m, x) for x in states)
                acts = tuple(_taken(m, options) for options in labels)
                cex = Counterexample(name, acts[-1] if acts else "Init", trace, acts)
                return Result(inv.name, VIOLATED, time.perf_counter() - start, counterexample=cex)
            solver.pop()
        if k == depth:
            break
        t = enc.state(str(k + 1))
        options = enc.actions(s, t)
        solver.add(z3.Or([a.formula for a in options]))
        labels.append(options)
        states.append(t)
    return Result(inv.name, NO_VIOLATION, time.perf_counter() - start)


def _taken(model: z3.ModelRef, options: list[Action]) -> str:
    for act in options:
        if z3.is_true(model.eval(act.formula, model_completion=True)):
            return _action_name(model, act)
    return "?"
