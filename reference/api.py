"""The reference controller's entry points: start(config) and step(config, state, action).

Both return (Cluster, Effects). A refused step raises a KcmError and the caller keeps its state: the
handler works on a Txn that is simply dropped.
"""

from __future__ import annotations

from typing import Any

from kcm.model import actions as A
from kcm.model import channels
from kcm.model.cluster import Cluster, ClusterConfig, initial_cluster
from kcm.model.effects import Effects
from kcm.model.errors import ControllerBlocked, KcmError
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

# Variant KAFKA-1305: the steps whose controller work takes the controller lock, and so wait while the controller,
# holding it, is blocked on a full request queue. The others only write ZooKeeper or queue an event (a listener that
# waits for the lock), are a broker's own, or end the controller (a failover).
_TAKE_LOCK = (A.ControllerEvent, A.PreferredElection, A.Reassign, A.ControlledShutdown, A.PartitionTransition,
              A.ReplicaTransition, A.SessionExpiry, A.BrokerBounce)


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
    bounded = channels.VARIANT in config.variants
    if bounded and isinstance(action, _TAKE_LOCK) and not getattr(action, "zombie", False):
        waited = channels.blocked(config, state)
        if waited is not None:
            raise ControllerBlocked(f"the controller holds its lock, blocked putting a request into the full queue "
                                    f"of broker {waited[0]}: {action.to_step()['op']} waits for the lock")
    t = Txn(config, state)
    if limits is not None:
        t.max_leader_epoch, t.max_controller_epoch = limits
    handler(t, action)
    if config.grain == "coarse":
        if bounded:
            # The queued events wait while the controller is blocked holding its lock, and run once it is free.
            while channels.blocked_on(config, t.ctx.controller_id, t.ctx.epoch, t.items("inflight")) is None:
                if not events.process_next(t):
                    break
        else:
            events.drain(t)
    requests.flush(t)
    return t.commit()


__all__ = ["HANDLERS", "KcmError", "start", "step"]
