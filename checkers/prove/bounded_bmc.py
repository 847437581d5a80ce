"""Bounded model checking of an explorer config over its exact symbolic encoding (bounded.py).

The properties the explorer checks are read from formulas.py by id (the formulas the induction uses too), with
the explorer's names and verdicts (holds / violated for state and step rules, reached / never reached for
reachability goals), so the two can be compared name by name. Properties about what the encoding leaves out are
listed in EXPLORER_ONLY with the reason; the explorer alone judges them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import z3
from kcm.checkers.prove import formulas
from kcm.checkers.prove.bounded import BoundedEncoding, shown
from kcm.checkers.prove.vocabulary import Step, Sym
from kcm.properties import catalogue

HOLDS, VIOLATED, REACHED, NEVER_REACHED = "holds", "violated", "reached", "never reached"
IDLE = "(stop)"  # the unrolling's idle step: an execution may end before the depth

# The properties BMC checks, by id; each formula is the one of formulas.py, shared with the induction.
STATE_PROPERTIES: dict[str, Callable[[Sym], Any]] = {
    i: formulas.STATE[i] for i in ("LeaderInIsrInAr", "ElectedLeaderRecorded", "OneLiveLeaderPerEpoch",
                                   "NoBrokerAheadOfZk", "DeletionStatesOnlyWhileDeleting")
}
STEP_PROPERTIES: dict[str, Callable[[Sym, Sym, Step], Any]] = {
    i: formulas.STEP[i] for i in ("OneLeaderPerEpoch", "LeaderEpochMonotone", "ControllerEpochMonotone",
                                  "EpochFencing", "ValidTransition")
}
GOALS: dict[str, Callable[[Sym], Any]] = dict(formulas.GOALS)
# Every catalogue id BMC leaves to the explorer, with the reason: declared on each property (`@rule(..., bmc=...)`,
# or its kind).
EXPLORER_ONLY: dict[str, str] = catalogue.not_judged("bmc")


class Finding(NamedTuple):
    """One property's BMC verdict, the solver time spent on it and, when found, the shortest trace."""

    name: str
    verdict: str
    seconds: float
    depth: int  # the depth the verdict covers (holds / never reached) or where the trace ends
    actions: tuple[str, ...] = ()
    states: tuple[dict[str, Any], ...] = ()


def symbolic_properties(names: list[str] | None = None) -> list[str]:
    """The property names BMC checks (all of them, or those of `names` it can check)."""
    known = [*STATE_PROPERTIES, *STEP_PROPERTIES, *GOALS]
    return known if names is None else [n for n in known if n in names]


def bmc(enc: BoundedEncoding, depth: int, names: list[str] | None = None) -> list[Finding]:
    """Check each property on every execution of up to `depth` steps from the config's initial state.

    The unrolling lets an execution stop early (an idle step keeps the state), so one query covers every
    depth up to `depth`. The state and step properties are first asked together (one query: does any of them
    fail anywhere?); only when that finds something is each asked alone, depth by depth, for its shortest trace.
    Reachability goals are asked alone, depth by depth (witnesses are short). A finding's seconds are the solver
    time of every query it took part in.
    """
    todo = symbolic_properties(names)
    spent = dict.fromkeys(todo, 0.0)
    states = [enc.state(str(k)) for k in range(depth + 1)]
    unrolled = [enc.init(states[0])]
    choices: list[tuple[Any, list[str]]] = []  # per step: the action variable and the action names
    records: list[Step] = []  # per step: the moves and deliveries of every action, each guarded by its choice
    for k in range(depth):
        s, t = states[k], states[k + 1]
        act = z3.BitVec(f"action_{k}", 8)
        steps = enc.steps(s, t, changes_only=False)  # a step that changes nothing is the idle step anyway
        idle = len(steps)
        unrolled.append(z3.Or(*[z3.And(act == j, f) for j, (_, f, _) in enumerate(steps)],
                              z3.And(act == idle, enc.same(s, t))))
        records.append(Step(
            enc.rules,
            tuple(m._replace(guard=z3.And(act == j, m.guard)) for j, (_, _, st) in enumerate(steps) for m in st.moves),
            tuple(d._replace(applied=z3.And(act == j, d.applied))
                  for j, (_, _, st) in enumerate(steps) for d in st.deliveries),
        ))
        choices.append((act, [n for n, _, _ in steps] + [IDLE]))

    def ask(goals: list[Any], upto: int, charged: list[str]) -> z3.ModelRef | None:
        solver = z3.SolverFor("QF_BV")
        solver.add(*unrolled[: upto + 1], z3.Or(goals))
        start = time.perf_counter()
        answer = solver.check()
        for name in charged:
            spent[name] += time.perf_counter() - start
        if answer == z3.unknown:
            raise RuntimeError(f"z3 answered unknown: {solver.reason_unknown()}")
        return solver.model() if answer == z3.sat else None

    def goals_at(name: str, k: int) -> list[Any]:
        goal = _goal(name, states, records, k)
        return [] if goal is None else [goal]

    safety = [n for n in todo if n not in GOALS]
    suspects = list(safety)
    if safety and ask([g for n in safety for k in range(depth + 1) for g in goals_at(n, k)], depth, safety) is None:
        suspects = []
    found: dict[str, Finding] = {}
    for name in [*suspects, *[n for n in todo if n in GOALS]]:
        for k in range(depth + 1):
            goals = goals_at(name, k)
            m = ask(goals, k, [name]) if goals else None
            if m is not None:
                acts = [names_[m.eval(var, model_completion=True).as_long()] for var, names_ in choices[:k]]
                trace = [shown(enc.values(m, s)) for s in states[: k + 1]]
                kept = [0] + [i + 1 for i, a in enumerate(acts) if a != IDLE]
                found[name] = Finding(name, REACHED if name in GOALS else VIOLATED, 0.0, len(kept) - 1,
                                      tuple(a for a in acts if a != IDLE), tuple(trace[i] for i in kept))
                break
    out = []
    for name in todo:
        if name in found:
            out.append(found[name]._replace(seconds=spent[name]))
        else:
            out.append(Finding(name, NEVER_REACHED if name in GOALS else HOLDS, spent[name], depth))
    return out


def _goal(name: str, states: list[Sym], records: list[Step], k: int) -> Any:
    """What a counterexample (or witness) at depth k must satisfy; None when there is nothing to check there."""
    if name in STATE_PROPERTIES:
        return z3.Not(STATE_PROPERTIES[name](states[k]))
    if name in GOALS:
        return GOALS[name](states[k])
    if k == 0:
        return None
    return z3.Not(STEP_PROPERTIES[name](states[k - 1], states[k], records[k - 1]))
