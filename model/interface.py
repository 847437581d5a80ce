"""The one model interface every engine consumes, in the shape of stateright's `Model`.

A model gives its initial states, the actions enabled in a state, the next state of an action (a
pure function), named properties (always / sometimes / eventually) and a boundary. The explorer,
the Spark explorer, the Hypothesis machines, the Z3 cross-check and the scenario runner all read a
model through this interface and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from kcm.model.effects import Effects
from kcm.model.errors import KcmError

ALWAYS = "always"
SOMETIMES = "sometimes"
EVENTUALLY = "eventually"
STEP = "step"  # a rule about every transition: condition(model, before, action, after, effects)
SOMETIMES_STEP = "sometimes_step"  # some transition must satisfy condition(model, before, action, after, effects)
STATE_KINDS = (ALWAYS, SOMETIMES, EVENTUALLY)
# What an action does in a state, as a model's optional `outcome(state, action)` reports it.
NEXT, REFUSED, UNCHANGED, OUTSIDE = "next", "refused", "unchanged", "outside"
STEP_KINDS = (STEP, SOMETIMES_STEP)


class Property(NamedTuple):
    """A named property: `condition(model, state)` must hold always, sometimes, or eventually.

    STEP and SOMETIMES_STEP properties judge transitions instead:
    `condition(model, before, action, after, effects)` must hold on every transition (STEP) or on at least
    one reachable transition (SOMETIMES_STEP).
    """

    name: str
    expectation: str  # ALWAYS | SOMETIMES | EVENTUALLY | STEP | SOMETIMES_STEP
    condition: Callable[[Any, Any], bool]
    rule: str  # the rule in words, one line


def named(name: str, expectation: str, condition: Callable[..., bool]) -> Property:
    """A Property whose rule in words is its condition's docstring."""
    return Property(name, expectation, condition, (condition.__doc__ or "").strip())


def find(properties: Sequence[Property], name: str) -> Property:
    """The property of that name in a list; KeyError names the known ones."""
    for p in properties:
        if p.name == name:
            return p
    raise KeyError(f"unknown property {name!r}; known: {', '.join(p.name for p in properties)}")


class Model(Protocol):
    """What an engine needs to know about a system to explore, test, replay or prove it.

    `ModelBase` below gives every optional method a default; engines call them on any model built on it:
    `successor(state, action)` (the step an explorer keeps, or None, possibly cut short at the bounds),
    `outcome(state, action)` (which also tells a step past the bounds from a refused one) and `fair(action)` (weak
    fairness, for EVENTUALLY properties).
    """

    def init_states(self) -> Sequence[Any]:
        """The initial states."""
        ...

    def actions(self, state: Any) -> Iterable[Any]:
        """The actions worth trying in a state (each a small, printable, comparable value)."""
        ...

    def step(self, state: Any, action: Any) -> tuple[Any, Effects]:
        """The next state and effects of an action; raises a KcmError when the step is refused."""
        ...

    def next_state(self, state: Any, action: Any) -> Any | None:
        """The next state of an action, or None when the action is refused or changes nothing."""
        ...

    def properties(self) -> Sequence[Property]:
        """The named properties to check."""
        ...

    def within_boundary(self, state: Any) -> bool:
        """Whether exploration continues past this state."""
        ...

    def fingerprint(self, state: Any) -> int:
        """The state's stable 64-bit fingerprint."""
        ...


class ModelBase:
    """The optional methods of a Model with their defaults, like stateright's Model trait: a model subclasses this,
    defines init_states, actions, step, properties, within_boundary and fingerprint, and overrides a default only
    where it knows better (the bounded system stops a step at its bounds; brokers' own timers are fair)."""

    def step(self, state: Any, action: Any) -> tuple[Any, Effects]:
        """The next state and effects of an action; raises a KcmError when the step is refused."""
        raise NotImplementedError(f"{type(self).__name__} defines no step")

    def within_boundary(self, state: Any) -> bool:
        """Whether exploration continues past this state (by default it always does)."""
        return True

    def next_state(self, state: Any, action: Any) -> Any | None:
        """The next state of an action, or None when the action is refused or changes nothing."""
        try:
            nxt, _ = self.step(state, action)
        except KcmError:
            return None
        return None if nxt == state else nxt

    def outcome(self, state: Any, action: Any) -> tuple[str, tuple[Any, Effects] | None]:
        """What an action does: (NEXT, (next state, effects)), or (REFUSED | UNCHANGED, None).

        A step past the boundary counts as refused here: only a model that knows its bounds (the bounded system)
        can tell it apart, as OUTSIDE, and then overrides this.
        """
        try:
            nxt, effects = self.step(state, action)
        except KcmError:
            return REFUSED, None
        if nxt == state:
            return UNCHANGED, None
        if not self.within_boundary(nxt):
            return REFUSED, None
        return NEXT, (nxt, effects)

    def successor(self, state: Any, action: Any) -> tuple[Any, Effects] | None:
        """(next state, effects) of a transition an explorer keeps; None when refused, a no-op or out of bounds."""
        kind, found = self.outcome(state, action)
        return found if kind == NEXT else None

    def expand(self, actions: list[Any]) -> list[Any]:
        """The steps of `step` that a trace of `next_state` stands for (the same list unless the model folds steps)."""
        return list(actions)

    def fair(self, action: Any) -> bool:
        """Whether weak fairness applies to the action (by default none does: no EVENTUALLY property can hold)."""
        return False
