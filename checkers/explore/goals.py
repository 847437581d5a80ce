"""The reachability goals each bounded configuration names, and where a complete run first reaches each.

A config's goals are the `Some...` properties it checks (`BoundedSystem.properties()`): those it names, or, when
it names none, every goal its families and delivery can reach (each goal's declared `needs`). A goal that a
complete run never reaches is printed as a warning (`verdicts.goal_warnings`); a config may say in
`unreached_goals` that it is not meant to reach one, and why.

The audit (`audit`, used by `ci/audit_goals.py` and `tests/test_config_goals.py`) finds the depth at which each
goal is first reached by checking each goal's negation as a rule: breadth-first search reports the shortest run
that breaks a rule, so the length of that run is the goal's first depth, and a complete run that never breaks it
never reaches the goal. The search judges nothing else and applies no reduction; it stops once every goal is
reached, and goes through the whole space only for goals that are not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.explore.verdicts import GOAL_KINDS
from kcm.model.interface import ALWAYS, SOMETIMES, STEP, Property


def shipped_configs() -> list[str]:
    """The names of every shipped config (`specs/configs/*.json` and `bugs/*.json`), as `--config` takes them."""
    root = resources.files("kcm.specs").joinpath("configs")
    names = [p.name[:-5] for p in root.iterdir() if p.name.endswith(".json")]
    names += ["bugs/" + p.name[:-5] for p in root.joinpath("bugs").iterdir() if p.name.endswith(".json")]
    return sorted(names)


def goal_names(model: Any) -> list[str]:
    """The reachability goals a model checks, in its properties' order."""
    return [p.name for p in model.properties() if p.expectation in GOAL_KINDS]


def _negated(goal: Property) -> Property:
    """The goal's negation as a rule of states (or of steps): broken exactly where the goal is reached."""
    condition = goal.condition
    if goal.expectation == SOMETIMES:
        def never(model: Any, state: Any) -> bool:
            return not condition(model, state)
        kind = ALWAYS
    else:
        def never(model: Any, before: Any, action: Any, after: Any, effects: Any) -> bool:  # type: ignore[misc]
            return not condition(model, before, action, after, effects)
        kind = STEP
    if hasattr(condition, "reads"):  # the same parts read: a state judged already keeps its verdict
        never.reads = condition.reads  # type: ignore[attr-defined]
    return Property(goal.name, kind, never, goal.rule)


class _GoalsOnly(BoundedSystem):
    """The config's bounded system judging only the negations of the named goals."""

    def __init__(self, cfg: dict[str, Any], names: list[str]) -> None:
        super().__init__(cfg)
        self._negations = [_negated(p) for p in super().properties() if p.name in names]

    def properties(self) -> list[Property]:
        """The negated goals (see the module docstring)."""
        return self._negations


@dataclass
class GoalAudit:
    """One config's goals: where each is first reached (None: never, in a complete run), and the stated reasons."""

    config: str
    states: int  # of the last run: the whole space if `whole`, else up to the level that reached the last goal
    transitions: int
    depth: int
    seconds: float
    complete: bool  # every goal settled: reached, or never reached in a run through the whole space
    first_reached: dict[str, int | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # the config's `unreached_goals`
    whole: bool = False  # whether the last run explored the whole space (its counts are the config's)

    def problems(self) -> list[str]:
        """What is wrong with the config's goals: one never reached without a reason, a reason for a goal that is
        reached or that the config does not check."""
        out = []
        for name, depth in self.first_reached.items():
            if depth is None and self.complete and name not in self.reasons:
                out.append(f"{self.config}: {name} is never reached and the config gives no reason "
                           f"(\"unreached_goals\")")
            if depth is not None and name in self.reasons:
                out.append(f"{self.config}: {name} is reached at depth {depth}, yet \"unreached_goals\" says it is "
                           f"not meant to be")
        out += [f"{self.config}: \"unreached_goals\" names {name}, which the config does not check"
                for name in self.reasons if name not in self.first_reached]
        return out

    def row(self, name: str) -> str:
        """How the goal fared, in words: its first depth, or never with the reason."""
        depth = self.first_reached[name]
        if depth is not None:
            return f"reached at depth {depth}"
        if not self.complete:
            return f"not reached within {self.states:,} states"
        reason = self.reasons.get(name)
        return f"never reached: {reason}" if reason else "NEVER REACHED (no reason given)"


def audit(config: str, max_states: int | None = None, whole: bool = False) -> GoalAudit:
    """Explore a config (up to `max_states`) and say where each of its goals is first reached.

    A goal reached is settled at the level that reaches it; only a goal not reached yet needs the rest of the
    space. So each run stops after the level where one of the goals left is first reached, and the next run
    looks for the others (from the start: the explorer keeps no state between runs); the last one, left with the
    goals no run reaches, explores everything. `whole`: one run through the whole space (its full counts).
    """
    cfg = load_config(config)
    left = goal_names(BoundedSystem(cfg))
    first: dict[str, int | None] = dict.fromkeys(left)
    start = time.perf_counter()
    while True:
        model = _GoalsOnly(cfg, left)
        found = bfs.explore(model, max_states, stop_at=None if whole else set(left))
        for name, trace in found.violations.items():
            first[name] = len(trace)
        left = [name for name in left if name not in found.violations]
        if not left or not found.stopped:  # all reached, or the last run went through the space (or its bound)
            break
    return GoalAudit(cfg.get("name", config), found.distinct_states, found.transitions, found.depth,
                     time.perf_counter() - start, found.complete or not left, first,
                     dict(cfg.get("unreached_goals", {})), whole=found.complete and not found.stopped)
