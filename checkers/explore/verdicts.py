"""What an exploration found, shared by every engine: counts, verdicts, counterexamples, the summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcm.model.interface import ALWAYS, EVENTUALLY, SOMETIMES, SOMETIMES_STEP, STEP, Property
from kcm.properties import user


@dataclass
class Exploration:
    """The outcome of one exploration."""

    engine: str
    distinct_states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True  # False when --max-states or the first violation stopped it
    stopped: bool = False  # True when it stopped after the level of the first violation (states were left)
    bytes_per_state: float = 0.0  # memory of the visited set (fingerprints and parent links) per distinct state
    levels: list[tuple[int, float]] = field(default_factory=list)  # (states, seconds) of each level expanded
    visited: Any = field(default=None, repr=False)  # the compact visited set (checkers.visited.Visited)
    violations: dict[str, list[Any]] = field(default_factory=dict)  # property -> shortest action trace
    reached: set[str] = field(default_factory=set)  # sometimes-properties reached
    # EVENTUALLY properties violated: where the lasso's loop starts in its trace (the loop runs to the end of it;
    # an empty loop: the run stops there with nothing fair left to do)
    loops: dict[str, int] = field(default_factory=dict)
    judged: set[str] = field(default_factory=set)  # EVENTUALLY properties judged on the whole graph
    tally: Any = field(default=None, repr=False)  # the transitions counted for coverage (checkers.coverage.Tally)
    goals: dict[str, list[Any]] = field(default_factory=dict)  # goal reached -> an action trace that reaches it

    def verdicts(self, properties: list[Property]) -> dict[str, str]:
        """Each property's verdict: holds / violated for always and step rules, reached / never reached otherwise."""
        out = {}
        for p in properties:
            if p.expectation in (ALWAYS, STEP):
                out[p.name] = "violated" if p.name in self.violations else "holds" if self.complete else \
                    f"not violated within {self.distinct_states:,} states"
            elif p.expectation in (SOMETIMES, SOMETIMES_STEP):
                out[p.name] = "reached" if p.name in self.reached else "never reached" if self.complete else \
                    f"not reached within {self.distinct_states:,} states"
            elif p.expectation == EVENTUALLY:
                out[p.name] = ("violated" if p.name in self.violations else "holds" if p.name in self.judged
                               else "not judged (needs a complete exploration and its graph)")
        return out

    def collision_probability(self) -> float:
        """Upper estimate that a 64-bit fingerprint collision hid a state: n^2 / 2^65 (birthday bound)."""
        return min(1.0, self.distinct_states ** 2 / 2.0 ** 65)

    def to_json(self, model: Any) -> dict[str, Any]:
        """The machine-readable summary."""
        props = model.properties()
        counterexamples = {name: self._counterexample(model, name, trace)
                           for name, trace in sorted(self.violations.items())}
        verdicts = self.verdicts(props)
        for name, cex in counterexamples.items():
            if "error" in cex["evidence"]:  # a user's predicate that failed there (kcm.properties.user)
                verdicts[name] = "error"
        return {"engine": self.engine, "distinct_states": self.distinct_states, "transitions": self.transitions,
                "depth": self.depth, "seconds": round(self.seconds, 3), "complete": self.complete,
                "stopped_at_violation": self.stopped,
                "states_per_second": round(self.distinct_states / self.seconds) if self.seconds else None,
                "collision_probability": self.collision_probability(),
                "bytes_per_state": round(self.bytes_per_state, 1),
                "levels": [[n, round(t, 3)] for n, t in self.levels],
                "verdicts": verdicts, "warnings": goal_warnings(verdicts, props, declared_unreached(model)),
                "counterexamples": counterexamples,
                "goals": {name: self._goal(model, name, trace) for name, trace in sorted(self.goals.items())}}

    def _goal(self, model: Any, name: str, trace: list[Any]) -> dict[str, Any]:
        """A path that reaches a goal, as a `kcm run` scenario and as evidence (the step that reaches it marked)."""
        from kcm.checkers.core import evidence

        trace = model.expand(trace)
        scenario = model.scenario(trace)
        setup = len(scenario["steps"]) - len(trace)
        return {"length": len(trace), "scenario": scenario, "evidence": evidence.build(model, name, trace, None, setup)}

    def _counterexample(self, model: Any, name: str, trace: list[Any]) -> dict[str, Any]:
        """One counterexample for the summary; a lasso also says where its loop starts (0: the first step)."""
        from kcm.checkers.core import evidence

        trace = model.expand(trace)  # the reference's own steps (a reduction may fold some into one)
        scenario = model.scenario(trace)
        setup = len(scenario["steps"]) - len(trace)
        loop = self.loops.get(name)
        found = evidence.build(model, name, trace, loop, setup)
        prop = next((p for p in model.properties() if p.name == name), None)
        mine = prop is not None and user.is_user(prop)
        error = user.error_of(model, prop, trace) if mine else None
        if error is not None:
            found["error"] = error
            found["witness"]["why"] = "the predicate failed here (not True or False): see its error"
        if found["kind"] != EVENTUALLY and trace and not mine:  # `kcm run` knows the catalogue's ids only
            # `kcm run` of the scenario then exits 0 only if the property breaks right there.
            scenario["expect_violation"] = {"property": name, "step": len(scenario["steps"]) - 1}
        out: dict[str, Any] = {"length": len(trace), "scenario": scenario, "evidence": found}
        if loop is not None:
            out["loop_start"] = loop
        return out


GOAL_KINDS = (SOMETIMES, SOMETIMES_STEP)


def declared_unreached(model: Any) -> dict[str, str]:
    """The goals a model's config says it is not meant to reach (`unreached_goals`), each with its reason."""
    cfg = getattr(model, "cfg", None)
    reasons = cfg.get("unreached_goals") if isinstance(cfg, dict) else None
    return dict(reasons) if isinstance(reasons, dict) else {}


def goal_warnings(verdicts: dict[str, str], properties: list[Property], reasons: dict[str, str]) -> list[str]:
    """One line per reachability goal worth a warning: never reached in a complete run, or reached though the
    config says it is not meant to be (its stated reason is then stale)."""
    out = []
    for p in properties:
        if p.expectation not in GOAL_KINDS:
            continue
        verdict, reason = verdicts.get(p.name), reasons.get(p.name)
        if verdict == "never reached":
            # A goal no run reaches leaves every rule about what it names checked only on runs that stop short of it.
            out.append(f"{p.name} never reached: not meant to be reached: {reason}" if reason else
                       f"{p.name} never reached in a complete run: the config checks it, yet no run inside its "
                       f"bounds gets there (add what it needs, or say why in \"unreached_goals\")")
        elif verdict == "reached" and reason:
            out.append(f"{p.name} reached, though the config says it is not meant to be ({reason})")
    return out


def state_checks(model: Any, state: Any, props: list[Property]) -> tuple[list[str], list[str]]:
    """(always-properties violated, sometimes-properties reached) in one state."""
    bad, reached = [], []
    for p in props:
        if p.expectation == ALWAYS:
            if not p.condition(model, state):
                bad.append(p.name)
        elif p.expectation == SOMETIMES and p.condition(model, state):
            reached.append(p.name)
    return bad, reached


def step_checks(model: Any, before: Any, action: Any, after: Any, effects: Any,
                props: list[Property]) -> tuple[list[str], list[str]]:
    """(step-properties violated, sometimes-step properties reached) on one transition."""
    bad, reached = [], []
    for p in props:
        if p.expectation == STEP:
            if not p.condition(model, before, action, after, effects):
                bad.append(p.name)
        elif p.expectation == SOMETIMES_STEP and p.condition(model, before, action, after, effects):
            reached.append(p.name)
    return bad, reached


def successors(model: Any, state: Any) -> list[tuple[Any, Any, Any]]:
    """(action, next state, effects) of every enabled action that changes the state, inside the boundary."""
    return [(action, nxt, effects) for _, action, nxt, effects in indexed_successors(model, state)]


def indexed_successors(model: Any, state: Any) -> list[tuple[int, Any, Any, Any]]:
    """Like `successors`, with each action's position in `model.actions(state)` first (for compact parent links).

    Each step goes through the model's `successor(state, action)` (ModelBase's default or the model's own, which may
    give up early on a step that leaves its bounds; every engine then gets that saving).
    """
    out = []
    successor = model.successor
    for i, action in enumerate(model.actions(state)):
        found = successor(state, action)
        if found is not None:
            out.append((i, action, found[0], found[1]))
    return out
