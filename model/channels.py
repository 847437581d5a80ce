"""The controller's request channels as Kafka 0.8.1 bounded them (variant KAFKA-1305): who waits for whom.

Under `"delivery": "async"` each connection (broker, controller epoch) holds the requests sent and not yet taken
by the broker (`Cluster.inflight`). In Kafka 0.8.1 the connection was a queue of `controller.message.queue.size`
requests (10 by default) and a send thread that takes the head, sends it, reads the response and runs the
response's callback. The send thread takes the next request as soon as it is done, so the head of a connection
is the request in its hands, and the queue proper is the rest. The controller put requests into the queue while
holding the controller lock, and a put into a full queue blocked it there, lock held: the requests past the queue's
capacity are the controller's puts not yet made. A response callback of topic deletion (the answer to StopReplica
with delete) took the controller lock, so a send thread holding such a request waits for the controller while the
controller waits for room in that thread's queue: the deadlock of KAFKA-1305. Since 0.8.2 the queue is unbounded.

The reference reads these views to block the controller and the send threads; the deadlock property reads them to
judge a state. Both read the state only, so every engine judges the deadlock with no engine of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcm.model.effects import StopReplicaRequest

VARIANT = "KAFKA-1305"


def bounded(config: Any) -> bool:
    """Whether the controller's request queues are bounded (variant KAFKA-1305 on)."""
    return VARIANT in config.variants


def needs_controller_lock(request: Any) -> bool:
    """Whether the response callback of a request takes the controller lock (topic deletion's StopReplica)."""
    return type(request) is StopReplicaRequest and bool(request.delete)


def blocked_on(config: Any, controller_id: int, epoch: int,
               connections: Iterable[tuple[tuple[int, int], tuple[Any, ...]]]) -> tuple[int, int] | None:
    """The connection the active controller is blocked on, putting a request into its full queue, or None.

    A connection holds the send thread's request (its head) and the queue; the controller is blocked when the
    queue holds more than its capacity, the surplus being the puts it has not made yet.
    """
    if controller_id < 0 or not bounded(config):
        return None
    limit = config.controller_message_queue_size + 1
    for key, queue in connections:
        if key[1] == epoch and len(queue) > limit:
            return key
    return None


def blocked(config: Any, state: Any) -> tuple[int, int] | None:
    """The connection the active controller of a Cluster is blocked on, or None (see `blocked_on`)."""
    return blocked_on(config, state.ctx.controller_id, state.ctx.epoch, state.inflight)


def deadlocked(config: Any, state: Any) -> list[tuple[int, int]]:
    """The connections on which the controller and a send thread wait for each other: the controller, lock held,
    waits for room in the queue, and the send thread holds a request whose callback waits for the lock."""
    if blocked(config, state) is None:
        return []
    limit = config.controller_message_queue_size + 1
    return [key for key, queue in state.inflight
            if key[1] == state.ctx.epoch and len(queue) > limit and needs_controller_lock(queue[0])]


__all__ = ["VARIANT", "blocked", "blocked_on", "bounded", "deadlocked", "needs_controller_lock"]
