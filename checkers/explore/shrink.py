"""Shrinking a counterexample: delete steps (chunks, then single steps) while the trace still breaks the property.

A candidate trace counts only if it is a trace of the bounded system (every action is offered by
`model.actions`, is accepted, changes the state and stays inside the boundary) and it still breaks the same
property. Each accepted candidate is cut right after its first violation. The result is 1-minimal: deleting
any single step gives a trace that no longer replays or no longer breaks the property.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kcm.checkers.explore.verdicts import state_checks, step_checks
from kcm.model.interface import ALWAYS, STEP, find


def advance(model: Any, state: Any, action: Any) -> tuple[Any, Any] | None:
    """(next state, effects) when the bounded system can take this action here, else None."""
    if action not in model.actions(state):
        return None
    # The model's kept step (accepted, changing the state, inside the boundary), as the walks took it: a model that
    # folds steps (a reduction) folds them here too.
    return model.successor(state, action)


def violation_length(model: Any, trace: Sequence[Any], name: str, start: Any = None) -> int | None:
    """How many steps of the trace it takes to break the property, or None (it does not replay, or never breaks)."""
    prop = find(model.properties(), name)
    if prop.expectation not in (ALWAYS, STEP):
        raise ValueError(f"{name} is a {prop.expectation} property: only always and step properties have "
                         "counterexamples")
    state = model.init_states()[0] if start is None else start
    if prop.expectation == ALWAYS and name in state_checks(model, state, [prop])[0]:
        return 0
    for i, action in enumerate(trace):
        moved = advance(model, state, action)
        if moved is None:
            return None
        nxt, effects = moved
        if prop.expectation == STEP:
            if name in step_checks(model, state, action, nxt, effects, [prop])[0]:
                return i + 1
        elif name in state_checks(model, nxt, [prop])[0]:
            return i + 1
        state = nxt
    return None


def shrink(model: Any, trace: Sequence[Any], name: str, start: Any = None) -> list[Any]:
    """A 1-minimal sub-trace of a counterexample to the named property (ValueError if the trace is not one)."""
    k = violation_length(model, trace, name, start)
    if k is None:
        raise ValueError(f"the trace does not replay to a violation of {name}")
    best = list(trace[:k])
    size = max(1, len(best) // 2)
    while best:
        removed = False
        i = 0
        while i < len(best):
            candidate = best[:i] + best[i + size:]
            k = violation_length(model, candidate, name, start)
            if k is not None:
                best = candidate[:k]
                removed = True
            else:
                i += size
        if size == 1 and not removed:
            break  # a whole pass of single deletions failed against this very trace: 1-minimal
        size = max(1, size // 2)
    return best


def is_one_minimal(model: Any, trace: Sequence[Any], name: str, start: Any = None) -> bool:
    """Whether the trace breaks the property and no trace with one step deleted does."""
    if violation_length(model, trace, name, start) is None:
        return False
    return all(violation_length(model, list(trace[:i]) + list(trace[i + 1:]), name, start) is None
               for i in range(len(trace)))


__all__ = ["advance", "is_one_minimal", "shrink", "violation_length"]
