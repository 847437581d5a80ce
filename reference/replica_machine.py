"""The replica state machine (Kafka's ReplicaStateMachine.handleStateChanges)."""

from __future__ import annotations

from collections.abc import Iterable

from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn, draft_lookup, draft_peek
from kcm.reference import leadership, requests
from kcm.reference.context import is_deleting


def handle_replica_changes(t: Txn, replicas: Iterable[tuple[tuple, int]], target: str,
                           strict: bool = False) -> None:
    """Move replicas to target, then send the batch.

    Controller operations (strict False) skip moves the table refuses, as Kafka does; a direct call
    (strict True) raises IllegalStateTransition.
    """
    for tp, b in replicas:
        if not strict and not t.can_move_replica(tp, b, target):
            continue
        _move(t, tp, b, target)
    requests.flush(t)


def _move(t: Txn, tp: tuple, b: int, target: str) -> None:
    current = t.replica_state(tp, b)
    lai = draft_lookup(t.ctx, "leadership", tp)
    if target == R.NEW:
        t.set_replica_state(tp, b, target)
        if lai is not None and lai.leader != b:
            requests.add_leader_and_isr(t, (b,), tp)
    elif target == R.ONLINE:
        t.set_replica_state(tp, b, target)
        if current == R.NEW:
            ar = draft_lookup(t.ctx, "assignments", tp, ())
            if b not in ar:
                # Seeds 000/003: NewReplica -> OnlineReplica adds the replica to the cached AR if needed.
                t.ctx.assignments[tp] = tuple(ar) + (b,)
        elif lai is not None:
            requests.add_leader_and_isr(t, (b,), tp)
    elif target == R.OFFLINE:
        if lai is None and t.config.has("KAFKA-2937"):
            # Variant KAFKA-2937 (before 0.10.0.0): taking a replica out of the ISR fails when the partition has
            # no leader and ISR znode, even for a topic being deleted; Kafka logs it and leaves the replica.
            t.note(f"state change of replica {b} of {tp[0]}-{tp[1]} to OfflineReplica failed: "
                   "the leader and ISR path in ZooKeeper is empty")
            return
        if lai is None and t.config.has("KAFKA-6650"):
            # Variant KAFKA-6650 (1.1): only replicas whose partition has leadership information in the controller's
            # cache are moved to OfflineReplica; after a failover cut a topic's deletion half way, the partitions
            # whose state znode was already deleted have none, so their replicas never leave OnlineReplica.
            t.note(f"replica {b} of {tp[0]}-{tp[1]} has no leadership information: left in {current}")
            return
        t.set_replica_state(tp, b, target)
        requests.add_stop_replica(t, b, tp, delete=False)
        if lai is None:
            # Kafka still queues UpdateMetadata to every live or shutting-down broker; the batch leaves the
            # partition out (no leader and ISR), so each gets an UpdateMetadata with no partition states.
            requests.add_update_metadata(t, draft_peek(t.ctx, "live_brokers"), (tp,))
            return
        new = leadership.remove_replica_from_isr(t, tp, b)
        znode = draft_lookup(t.zk, "partitions", tp)
        if new is None and znode is not None and b not in znode.isr:
            # removeReplicasFromIsr returns the partitions that did not hold the replica unchanged, and Kafka
            # caches and sends them as it does the changed ones.
            leadership.refresh_from_zk(t, tp)
            new = znode
        if new is not None and not is_deleting(t, tp[0]):
            others = tuple([r for r in draft_lookup(t.ctx, "assignments", tp, ()) if r != b])
            requests.add_leader_and_isr(t, others, tp)
    elif target == R.DELETION_STARTED:
        t.set_replica_state(tp, b, target)
        requests.add_stop_replica(t, b, tp, delete=True)
    elif target == R.NON_EXISTENT:
        t.set_replica_state(tp, b, target)
        if current == R.OFFLINE:
            # Kafka 0.8 (no deletion states): OfflineReplica -> NonExistentReplica deletes the log itself.
            requests.add_stop_replica(t, b, tp, delete=True)
        ar = draft_lookup(t.ctx, "assignments", tp)
        if ar is not None and b in ar:
            t.ctx.assignments[tp] = tuple([r for r in ar if r != b])
    else:
        t.set_replica_state(tp, b, target)

