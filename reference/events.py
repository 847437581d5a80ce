"""The controller's event queue (Kafka's ControllerEventManager): enqueue, process one, run to quiescence.

A ZooKeeper watch that fires (a broker's registration comes or goes, a topic is queued in /admin/delete_topics)
puts an event on the controller's queue, and the controller thread processes the queue one event at a time. At the
coarse grain (the default) every step runs the queue to quiescence before it ends (`drain`), so no state between
steps holds an event; at the event grain each `controller_event` step processes one (`process_next`), and the other
steps may come between two events. Work an event begins and Kafka does in several ZooKeeper calls (the recursive
delete of a topic's znodes) goes back to the head of the queue, so that only steps outside the controller (a
failover, a broker's death) come between its parts.

The processors register themselves next to the code they run (`@processes`); this module knows only the queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcm.model.actions import ControllerEvent
from kcm.model.errors import NoEventQueued, NotController, StaleControllerEpoch
from kcm.model.txn import Txn, freeze_context, thaw_context
from kcm.reference import requests
from kcm.reference.handlers import handles

Processor = Callable[[Txn, Any], None]
PROCESSORS: dict[str, Processor] = {}


def processes(name: str) -> Callable[[Processor], Processor]:
    """Register the decorated function as the processor of the controller event `name`."""
    def register(processor: Processor) -> Processor:
        if name in PROCESSORS:
            raise ValueError(f"controller event {name} is already processed by {PROCESSORS[name].__name__}")
        PROCESSORS[name] = processor
        return processor
    return register


def enqueue(t: Txn, name: str, arg: Any, first: bool = False) -> None:
    """Put the event on the controller's queue: last, or first for the rest of work the event in hand began."""
    queue = t.ctx.events
    t.ctx.events = ((name, arg),) + queue if first else queue + ((name, arg),)


def process_next(t: Txn) -> bool:
    """Process the event at the head of the working context's queue; False when it is empty."""
    queue = t.ctx.events
    if not queue:
        return False
    t.ctx.events = queue[1:]
    name, arg = queue[0]
    PROCESSORS[name](t, arg)
    return True


def drain(t: Txn) -> None:
    """Run the queue to quiescence (the coarse grain's end of every step)."""
    while process_next(t):
        pass


@processes("Reelect")
def reelect(t: Txn, _: Any) -> None:
    """Reelect on a controller that moved: /controller names another broker, so it resigns (maybeResign), and its
    election finds /controller taken; nothing it still had queued would run as the active controller."""
    t.ctx.events = ()


@handles(ControllerEvent)
def controller_event(t: Txn, a: ControllerEvent) -> None:
    """The (zombie) controller processes the event at the head of its queue."""
    if not a.zombie:
        if not t.ctx.events:
            raise NoEventQueued("the controller has no event queued")
        process_next(t)
        return
    if t.zombie is None:
        raise NotController("no previous controller is still acting")
    if not t.zombie.events:
        raise NoEventQueued("the previous controller has no event queued")
    if _refused(t):
        # ControllerMovedException: the event's first ZooKeeper write fails the /controller_epoch zkVersion check,
        # so it changed nothing in ZooKeeper and sent nothing; the controller resigns (maybeResign) and what else it
        # had queued finds it inactive.
        name = t.zombie.events[0][0]
        t.note(f"controller {t.zombie.controller_id} moved: its {name} write was refused by the /controller_epoch "
               f"zkVersion (ControllerMovedException); it resigns")
        t.zombie = None
        return
    live_ctx = t.swap_context(thaw_context(t.zombie))
    try:
        process_next(t)
        requests.flush(t)  # what the zombie sends carries its own controller epoch
    finally:
        zombie = freeze_context(t.swap_context(live_ctx))
    # Once its queue is empty it handles the loss of its session (onControllerResignation) and stops acting.
    t.zombie = zombie if zombie.events else None


def _refused(t: Txn) -> bool:
    """Whether the zombie's next event makes a controller write that its stale epoch zkVersion gets refused.

    The event is tried on a scratch copy of the step, so that a refusal part-way leaves nothing of it behind.
    """
    if t.zombie is None or t.zombie.epoch_zk_version == t.zk.controller_epoch_zk_version:
        return False
    scratch = Txn(t.config, t.base)
    scratch.max_leader_epoch, scratch.max_controller_epoch = t.max_leader_epoch, t.max_controller_epoch
    scratch.swap_context(thaw_context(t.zombie))
    try:
        process_next(scratch)
        requests.flush(scratch)
    except StaleControllerEpoch:
        return True
    return False
