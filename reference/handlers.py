"""The handler of each action type, registered next to the handler itself (@handles) and read by reference/api.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcm.model.txn import Txn

Handler = Callable[[Txn, Any], None]
HANDLERS: dict[type, Handler] = {}


def handles(action: type) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `action` (one handler per action type)."""
    def register(handler: Handler) -> Handler:
        taken = HANDLERS.get(action)
        if taken is not None:
            raise ValueError(f"{action.__name__} is already handled by {taken.__name__}")
        HANDLERS[action] = handler
        return handler
    return register
