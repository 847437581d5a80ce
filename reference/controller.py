"""Controller election, failover (onControllerFailover) and resignation."""

from __future__ import annotations

from kcm.model.actions import ControllerMove, ControllerResign
from kcm.model.cluster import NO_CONTROLLER, NO_LEADER, Reassignment
from kcm.model.errors import BrokerNotAvailable
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import OutOfBounds, Txn, draft_lookup, draft_peek, draft_sorted_items, freeze_context
from kcm.reference import requests
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import trigger_online_partition_state_change
from kcm.reference.reassignment import on_partition_reassignment
from kcm.reference.replica_machine import handle_replica_changes
from kcm.reference.topics import resume_deletion


def reset_context(t: Txn) -> None:
    """Drop the controller's in-memory state (it resigned or its broker died)."""
    c = t.ctx
    c.controller_id, c.epoch, c.epoch_zk_version = NO_CONTROLLER, 0, 0
    for name in ("assignments", "leadership", "partition_states", "replica_states", "reassignments"):
        setattr(c, name, {})
    for name in ("live_brokers", "shutting_down", "topics_to_delete", "topics_ineligible"):
        setattr(c, name, set())
    c.events = ()  # a controller's queue dies with it
    t.request_batch = requests.RequestBatch()  # type: ignore[attr-defined]


def elect_controller(t: Txn, preferred: int = NO_CONTROLLER) -> None:
    """Live brokers race for /controller: the preferred one if live, else the lowest live id; then failover."""
    reset_context(t)
    live = sorted([b for b, s in t.brokers.items() if s.alive])
    if not live:
        t.zk.controller = NO_CONTROLLER
        return
    winner = preferred if preferred in live else live[0]
    t.zk.controller = winner
    t.zk.controller_epoch += 1
    limit = t.max_controller_epoch
    if limit is not None and t.zk.controller_epoch > limit:
        raise OutOfBounds(f"controller epoch {t.zk.controller_epoch} passes the bound {limit}")
    t.zk.controller_epoch_zk_version += 1
    t.ghost.max_controller_epoch = max(t.ghost.max_controller_epoch, t.zk.controller_epoch)
    if t.brokers[winner].leftover_batch:
        # Variant KAFKA-12315: newBatch() finds the old batch non-empty and failover aborts (IllegalStateException).
        t.note(f"broker {winner} cannot become controller: its request batch is not empty")
        return
    t.ctx.controller_id = winner
    t.ctx.epoch = t.zk.controller_epoch
    t.ctx.epoch_zk_version = t.zk.controller_epoch_zk_version
    on_controller_failover(t)


def on_controller_failover(t: Txn) -> None:
    """Load the context from ZooKeeper, start both state machines, resume reassignments and deletions."""
    c = t.ctx
    zk = t.zk  # read only: peeked at, not thawed
    c.live_brokers = set(draft_peek(zk, "brokers"))
    # A broker in controlled shutdown retries its request with the new controller.
    c.shutting_down = {b for b in c.live_brokers if t.brokers[b].shutting_down}
    c.assignments = dict(draft_peek(zk, "assignments"))
    c.leadership = dict(draft_peek(zk, "partitions"))
    c.topics_to_delete = set(draft_peek(zk, "delete_topics"))
    # ZooKeeper keeps the target, AR = RAR + (OAR - RAR) and (KIP-455) OAR; without a recorded OAR the AR is taken.
    c.reassignments = {tp: Reassignment(tuple(get(t.zk.reassign_original, tp, c.assignments[tp])), tuple(target))
                       for tp, target in draft_sorted_items(zk, "reassign_partitions") if tp in c.assignments}
    if t.config.has("KAFKA-4214"):
        _drop_reassignments_with_dead_targets(t)
    # fetchTopicDeletionsInProgress / TopicDeletionManager.init: a queued topic with a replica on a dead broker or
    # a partition being reassigned is ineligible; resumeDeletions then deletes nothing of it.
    for topic in sorted(c.topics_to_delete):
        tps = [tp for tp in c.assignments if tp[0] == topic]
        if any(tp in c.reassignments or any(b not in c.live_brokers for b in c.assignments[tp]) for tp in tps):
            c.topics_ineligible.add(topic)
    replica_state_machine_startup(t)
    partition_state_machine_startup(t)
    for tp, r in sorted(c.reassignments.items()):
        if tp in c.reassignments:
            on_partition_reassignment(t, tp, r)
    for topic in sorted(c.topics_to_delete):
        resume_deletion(t, topic)
    requests.add_update_metadata(t, sorted(c.live_brokers), sorted(c.assignments))
    requests.flush(t)


def _drop_reassignments_with_dead_targets(t: Txn) -> None:
    """Variant KAFKA-4214 (before 0.10.1.0): a resumed reassignment whose new replicas are not all live fails.

    The controller removes it from /admin/reassign_partitions instead of waiting for the new replicas to
    join the ISR, so AR stays OAR + RAR and the reassignment never completes.
    """
    c = t.ctx
    for tp, r in sorted(c.reassignments.items()):
        if not all(b in c.live_brokers for b in r.target):
            t.note(f"{tp[0]}-{tp[1]}: new replicas {list(r.target)} are not all live; reassignment abandoned")
            del c.reassignments[tp]
            t.zk.reassign_partitions.pop(tp, None)
            t.zk.reassign_original = tuple([kv for kv in t.zk.reassign_original if kv[0] != tp])


def replica_state_machine_startup(t: Txn) -> None:
    """Replicas on live brokers -> OnlineReplica; those on dead brokers -> OfflineReplica.

    Kafka >= 2.3 (KAFKA-8152) initializes dead replicas as ReplicaDeletionIneligible and moves them
    to OfflineReplica, which takes them out of the ISR. Under rules without deletion states
    (kafka-0.8) they are initialized OfflineReplica directly. Variant KAFKA-8152 (before 2.3.0) leaves them
    ReplicaDeletionIneligible: never taken offline nor out of the ISR.
    """
    c = t.ctx
    online, offline = [], []
    for tp, ar in sorted(c.assignments.items()):
        for b in ar:
            (online if b in c.live_brokers else offline).append((tp, b))
    for tp, b in online:
        c.replica_states[(tp[0], tp[1], b)] = R.ONLINE
    initial_offline = R.DELETION_INELIGIBLE if t.rules.has_deletion_states() else R.OFFLINE
    for tp, b in offline:
        c.replica_states[(tp[0], tp[1], b)] = initial_offline
    handle_replica_changes(t, online, R.ONLINE)
    if initial_offline != R.OFFLINE and not t.config.has("KAFKA-8152"):
        handle_replica_changes(t, offline, R.OFFLINE)


def partition_state_machine_startup(t: Txn) -> None:
    """Partitions New (no leadership), Online (live leader) or Offline; then New/Offline -> Online."""
    c = t.ctx
    live = c.live_brokers - c.shutting_down
    for tp in c.assignments:
        lai = draft_lookup(c, "leadership", tp)
        if lai is None:
            c.partition_states[tp] = P.NEW
        elif lai.leader != NO_LEADER and lai.leader in live:
            c.partition_states[tp] = P.ONLINE
        else:
            c.partition_states[tp] = P.OFFLINE
    trigger_online_partition_state_change(t)


@handles(ControllerResign)
def controller_resign(t: Txn, a: ControllerResign) -> None:
    """/controller goes away; a new election runs (the named broker wins if live)."""
    if a.broker >= 0 and not (a.broker in t.brokers and t.brokers[a.broker].alive):
        raise BrokerNotAvailable(f"broker {a.broker} is not live and cannot win the election")
    if not [b for b, s in t.items("brokers") if s.alive]:
        raise BrokerNotAvailable("no live broker to elect as controller")
    # The old controller may still be finishing an event with its stale context when another broker wins. Since
    # Kafka 1.1 the loss of its session clears its queue (Expire goes first); variant KAFKA-3083 (before 1.1): the
    # events already queued are still processed, with the stale context, before it learns it resigned.
    _hand_over(t, a.broker, t.config.has("KAFKA-3083") and bool(t.ctx.events), ())


@handles(ControllerMove)
def controller_move(t: Txn, a: ControllerMove) -> None:
    """/controller is deleted and re-created by the named broker; the old controller keeps its session.

    Its /controller watch queues Reelect behind the events it holds (a plain put, not Expire's clearAndPut), so it
    goes on processing them as the active controller until a write is refused or the Reelect tells it it moved. With
    nothing queued it resigns at once: the Reelect would be its next event and nothing else is between.
    """
    if not (a.broker in t.brokers and t.brokers[a.broker].alive):
        raise BrokerNotAvailable(f"broker {a.broker} is not live and cannot take /controller")
    if a.broker == t.zk.controller:
        raise BrokerNotAvailable(f"broker {a.broker} already holds /controller")
    _hand_over(t, a.broker, bool(t.ctx.events), (("Reelect", ""),))


def _hand_over(t: Txn, broker: int, keeps_queue: bool, learns_by: tuple) -> None:
    """Elect `broker` (or the lowest live id); the old controller may go on acting from its stale context."""
    old = t.ctx.controller_id
    zombie = None
    if (t.config.zombie_controller or keeps_queue) and old >= 0 and t.brokers[old].alive:
        zombie = freeze_context(t.ctx)
        zombie = zombie._replace(events=zombie.events + learns_by if keeps_queue else ())
    elect_controller(t, broker)
    t.zombie = zombie if zombie is not None and t.ctx.controller_id != old else None
