"""The reference controller's entry points: start(config) and step(config, state, action).

Both return (Cluster, Effects). A refused step raises a KcmError and the caller keeps its state: the
handler works on a Txn that is simply dropped.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import Cluster, ClusterConfig, initial_cluster
from kcm.model.effects import Effects
from kcm.model.errors import KcmError
from kcm.model.txn import Txn
from kcm.reference import (  # noqa: F401 (importing a handler's module registers it: reference/handlers.py)
    brokers,
    controller,
    dataplane,
    direct,
    events,
    preferred,
    reassignment,
    requests,
    topics,
    zombie,
)
from kcm.reference.handlers import HANDLERS


def start(config: ClusterConfig) -> tuple[Cluster, Effects]:
    """All brokers registered, then the first controller election (config.first_controller if live)."""
    t = Txn(config, initial_cluster(config))
    controller.elect_controller(t, config.first_controller)
    requests.flush(t)
    return t.commit()


def step(config: ClusterConfig, state: Cluster, action: Any,
         limits: tuple[int | None, int | None] | None = None) -> tuple[Cluster, Effects]:
    """The next state and effects of one action; a KcmError when it is refused (nothing applied).

    `limits` (max leader epoch, max controller epoch; an explorer's bounds) stops the step with OutOfBounds as
    soon as a ZooKeeper write passes one of them; the caller must know that such a state is never explored.
    """
    handler = HANDLERS.get(type(action))
    if handler is None:
        raise TypeError(f"no handler for {type(action).__name__}; known: {', '.join(c.__name__ for c in HANDLERS)}")
    t = Txn(config, state)
    if limits is not None:
        t.max_leader_epoch, t.max_controller_epoch = limits
    handler(t, action)
    if config.grain == "coarse":
        events.drain(t)
    requests.flush(t)
    return t.commit()


__all__ = ["HANDLERS", "KcmError", "start", "step"]
