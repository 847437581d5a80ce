"""A zombie controller: the previous controller finishing one in-flight election after it lost /controller.

Kafka's controller processes one event at a time. When its ZooKeeper session expires mid-event (a long GC
pause, KAFKA-3083) another broker is elected, and the old one still completes the event in hand with its
cached context before it learns it resigned. Since KAFKA-6082's fix (2.1.0) every controller write checks the
/controller_epoch zkVersion, so that write is refused (`leadership.check_controller_epoch`); brokers that have
already heard from the new controller refuse the zombie's requests by controller epoch.
"""

from __future__ import annotations

from kcm.model.actions import ZombieElect
from kcm.model.cluster import LeaderAndIsr
from kcm.model.errors import (
    NoLeaderAvailable,
    NotController,
    StaleControllerEpoch,
    StaleZkVersion,
    UnknownTopicOrPartition,
)
from kcm.model.names import tp_name
from kcm.model.txn import Txn, thaw_context
from kcm.reference import leadership, requests
from kcm.reference.handlers import handles


@handles(ZombieElect)
def zombie_elect(t: Txn, a: ZombieElect) -> None:
    """The zombie elects another ISR replica it believes live as leader of tp, from its cache, and tells the AR."""
    if t.zombie is None:
        raise NotController("no previous controller is still acting")
    live_ctx = t.swap_context(thaw_context(t.zombie))
    try:
        c = t.ctx
        cached = c.leadership.get(a.tp)
        if cached is None or a.tp not in c.assignments:
            raise UnknownTopicOrPartition(f"the zombie controller knows no partition {tp_name(a.tp)}")
        candidates = [b for b in c.assignments[a.tp] if b in cached.isr and b in c.live_brokers and b != cached.leader]
        if not candidates:
            raise NoLeaderAvailable(f"the zombie controller sees no other live ISR replica of {tp_name(a.tp)}")
        new = LeaderAndIsr(candidates[0], cached.leader_epoch + 1, cached.isr, c.epoch, cached.zk_version + 1)
        # Kafka's write is conditional on the zkVersion in the controller's cache.
        if t.config.has("KAFKA-12315"):
            # Variant KAFKA-12315: the fenced write raises ControllerMovedException after requests were batched.
            try:
                leadership.check_controller_epoch(t)
            except StaleControllerEpoch:
                # ControllerMovedException: the zombie resigns, but its request batch is not cleared.
                t.brokers[c.controller_id] = t.brokers[c.controller_id]._replace(leftover_batch=True)
                t.note(f"zombie controller {c.controller_id} is fenced; its request batch is left non-empty")
                t.zombie = None
                return
        if not leadership.conditional_write(t, a.tp, new, cached.zk_version):
            raise StaleZkVersion(f"the zombie controller's write of {tp_name(a.tp)} carries a stale zkVersion")
        requests.add_leader_and_isr(t, c.assignments[a.tp], a.tp)
        requests.flush(t)
    finally:
        t.swap_context(live_ctx)
    t.zombie = None  # having acted, it handles its resignation
