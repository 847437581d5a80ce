"""A model that explores its base model's graph differently: every Model method forwarded to the base.

The reductions (`symmetry.py`, `por.py`) each change one or two methods (which states are the
same, which actions are expanded) and must keep every other answer the base model's own, including the ones
`ModelBase` has defaults for (`expand`, `fair`), which a fallback through `__getattr__` would never reach.
"""

from __future__ import annotations

from typing import Any

from kcm.model.interface import ModelBase


class ReducedModel(ModelBase):
    """The base model under another name: a reduction subclasses this and overrides what it changes."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.cfg = base.cfg
        self.config = base.config

    def init_states(self) -> list[Any]:
        """The base model's initial states."""
        return self.base.init_states()

    def actions(self, state: Any) -> Any:
        """The base model's actions."""
        return self.base.actions(state)

    def step(self, state: Any, action: Any) -> Any:
        """The base model's step."""
        return self.base.step(state, action)

    def next_state(self, state: Any, action: Any) -> Any:
        """The base model's next state."""
        return self.base.next_state(state, action)

    def outcome(self, state: Any, action: Any) -> Any:
        """The base model's outcome (its early stops at the bounds and any reduction it applies)."""
        return self.base.outcome(state, action)

    def successor(self, state: Any, action: Any) -> Any:
        """The base model's kept successor."""
        return self.base.successor(state, action)

    def properties(self) -> list[Any]:
        """The base model's properties."""
        return self.base.properties()

    def within_boundary(self, state: Any) -> bool:
        """The base model's boundary."""
        return self.base.within_boundary(state)

    def scenario(self, actions: list[Any]) -> dict[str, Any]:
        """The base model's `kcm run` scenario of a trace."""
        return self.base.scenario(actions)

    def expand(self, actions: list[Any]) -> list[Any]:
        """The base model's steps of a trace."""
        return self.base.expand(actions)

    def fair(self, action: Any) -> bool:
        """The base model's fairness."""
        return self.base.fair(action)

    def fingerprint(self, state: Any) -> int:
        """The base model's fingerprint."""
        return self.base.fingerprint(state)


__all__ = ["ReducedModel"]
