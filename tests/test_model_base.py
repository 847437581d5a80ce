"""ModelBase's defaults: a model that defines only the required methods is explored, judged and checked for
liveness by the engines, which call successor, outcome and fair on it without probing."""

from __future__ import annotations

from typing import Any, NamedTuple

from kcm.checkers.explore import bfs
from kcm.checkers.explore.liveness import build_graph
from kcm.model.effects import Effects
from kcm.model.errors import KcmError
from kcm.model.interface import ALWAYS, NEXT, REFUSED, UNCHANGED, ModelBase, named


class Add(NamedTuple):
    """Add n to the counter."""

    n: int


class Counter(ModelBase):
    """A counter from 0 that may add 1 or 2, stays put on 0, refuses to pass 5 and stops exploring at 4."""

    config = None

    def init_states(self) -> list[int]:
        return [0]

    def actions(self, state: int) -> list[Add]:
        return [Add(0), Add(1), Add(2)]

    def step(self, state: int, action: Add) -> tuple[int, Effects]:
        if state + action.n > 5:
            raise KcmError(f"{state} + {action.n} passes 5")
        return state + action.n, Effects()

    def properties(self) -> list[Any]:
        return [named("BelowFive", ALWAYS, lambda model, state: state < 5)]

    def within_boundary(self, state: int) -> bool:
        return state <= 4

    def fingerprint(self, state: int) -> int:
        return state


def test_defaults_follow_step_and_boundary() -> None:
    model = Counter()
    assert model.outcome(1, Add(2))[0] == NEXT and model.successor(1, Add(2))[0] == 3
    assert model.outcome(1, Add(0)) == (UNCHANGED, None) and model.successor(1, Add(0)) is None
    assert model.outcome(4, Add(2)) == (REFUSED, None) and model.next_state(4, Add(2)) is None
    assert model.outcome(3, Add(2)) == (REFUSED, None)  # 5 lies past the boundary: the default cannot tell
    assert model.next_state(3, Add(1)) == 4 and model.fair(Add(1)) is False


def test_engines_run_on_the_defaults() -> None:
    found = bfs.explore(Counter())
    assert (found.complete, found.distinct_states, found.violations) == (True, 5, {})
    graph = build_graph(Counter(), [])
    assert graph is not None and len(graph.parent) == 5 and all(not f for f in graph.fair_enabled)
