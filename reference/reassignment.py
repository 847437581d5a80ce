"""Partition reassignment (onPartitionReassignment in the seeds' twelve steps) and the ISR-change hook."""

from __future__ import annotations

from collections.abc import Sequence

from kcm.model.actions import Reassign
from kcm.model.cluster import Reassignment
from kcm.model.errors import InvalidReplicaAssignment, UnknownTopicOrPartition
from kcm.model.fmap import get, put, remove
from kcm.model.names import tp_name
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn, draft_has, draft_lookup, draft_peek
from kcm.reference import leadership, requests, selectors
from kcm.reference.context import eligible_brokers, has_controller
from kcm.reference.events import enqueue, processes
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import handle_partition_changes
from kcm.reference.replica_machine import handle_replica_changes
from kcm.reference.topics import resume_deletion


@handles(Reassign)
def reassign(t: Txn, a: Reassign) -> None:
    """Write /admin/reassign_partitions; the controller starts (or replaces, rule 9) the reassignment it reads."""
    tp = a.tp
    if not draft_has(t.zk, "assignments", tp) or draft_has(t.zk, "delete_topics", tp[0]):
        raise UnknownTopicOrPartition(f"partition {tp_name(tp)} does not exist")
    target = tuple(a.replicas)
    registered = set(t.config.brokers)
    if not target or len(set(target)) != len(target) or any(b not in registered for b in target):
        raise InvalidReplicaAssignment(
            f"{tp_name(tp)}: target {list(target)} must be distinct registered brokers, at least one")
    t.zk.reassign_partitions[tp] = target
    if not has_controller(t):
        # As a controller would (rule 9): a replacement keeps the original replicas recorded by the first one.
        if get(t.zk.reassign_original, tp) is None:
            t.zk.reassign_original = put(t.zk.reassign_original, tp, tuple(t.zk.assignments[tp]))
        return
    enqueue(t, "ZkPartitionReassignment", tp)


@processes("ZkPartitionReassignment")
def zk_partition_reassignment(t: Txn, tp: tuple) -> None:
    """ZkPartitionReassignment: the controller reads the partition's target from /admin/reassign_partitions and
    starts (or replaces) its reassignment; one gone meanwhile, or of a topic being deleted, is skipped."""
    target = draft_lookup(t.zk, "reassign_partitions", tp)
    if target is None or not draft_has(t.ctx, "assignments", tp) or draft_has(t.ctx, "topics_to_delete", tp[0]):
        return
    start(t, tp, tuple(target))


def is_noop(t: Txn, tp: tuple, target: tuple[int, ...]) -> bool:
    """Whether reassigning tp to target is no reassignment: none is in flight and the target is the current AR."""
    return (draft_lookup(t.ctx, "reassignments", tp) is None
            and target == tuple(draft_lookup(t.ctx, "assignments", tp, ())))


def drops_noop_requests(t: Txn) -> bool:
    """Whether the controller removes a request it will not act on from /admin/reassign_partitions at once."""
    return not t.config.has("KAFKA-9478")  # the variant leaves the entry there


def start(t: Txn, tp: tuple, target: tuple[int, ...]) -> None:
    """Begin tracking a reassignment towards target and run its first round."""
    # Kafka's reassignTo: a replacement starts from the original replicas (OAR) of the one in flight, so AR is
    # the new target followed by OAR - target; the replicas only in the abandoned target are stopped and deleted
    # in the first round (on_partition_reassignment). The same target again keeps the record as it is.
    if is_noop(t, tp, target) and not drops_noop_requests(t):
        # KAFKA-9478's controller neither acts on the request nor removes it from /admin/reassign_partitions.
        t.note(f"{tp_name(tp)}: target equals the current replicas; the request is left in ZooKeeper")
        return
    # Kafka 3.8's maybeBuildReassignment builds even a target equal to the current replicas; it is no
    # reassignment (isBeingReassigned is false), so onPartitionReassignment completes it at once: a leader epoch
    # write and its LeaderAndIsr (moveReassignedPartitionLeaderIfRequired), and the request removed.
    current = draft_lookup(t.ctx, "reassignments", tp)
    original = current.original if current is not None else tuple(t.ctx.assignments[tp])
    r = Reassignment(original, target)
    t.ctx.reassignments[tp] = r
    t.zk.reassign_original = put(t.zk.reassign_original, tp, original)
    on_partition_reassignment(t, tp, r)


def on_partition_reassignment(t: Txn, tp: tuple, r: Reassignment) -> None:
    """One round: complete if RAR is in the ISR, else write AR = RAR + (OAR - RAR) and start the new replicas.

    First, as Kafka's updateCurrentReassignment, AR becomes RAR + (OAR - RAR) and the replicas it no longer holds
    (those only in a replaced reassignment's target) are stopped and deleted. A reassignment back to the original
    replicas is not a reassignment (Kafka's isBeingReassigned) and completes at once.
    """
    previous = tuple(draft_lookup(t.ctx, "assignments", tp, ()))
    ar = r.replicas
    if previous != ar:
        t.zk.assignments[tp] = ar  # step 1
        t.ctx.assignments[tp] = ar
        stop_removed_replicas(t, tp, [b for b in previous if b not in ar])
    lai = draft_lookup(t.zk, "partitions", tp)
    if not (r.adding or r.removing) or (lai is not None and set(r.target).issubset(lai.isr)):
        complete(t, tp, r)
        return
    if lai is not None:  # step 2: LeaderAndIsr to OAR + RAR with the next leader epoch (rule 11)
        leadership.update_leader_and_isr(t, tp, lambda cur: (cur.leader, cur.isr))
        requests.add_leader_and_isr(t, ar, tp)
        requests.flush(t)
    handle_replica_changes(t, [(tp, b) for b in r.adding], R.NEW)  # step 3


def complete(t: Txn, tp: tuple, r: Reassignment) -> None:
    """Steps 5 to 12: RAR online, leader in RAR, OAR - RAR offline and deleted, AR = RAR in ZooKeeper."""
    # Step 5. Kafka 3.8 moves only the adding replicas (B1); for a target equal to the original replicas (a
    # no-op request or a cancellation) there are none, and a replica of a dead broker stays offline.
    if r.adding or r.removing:
        handle_replica_changes(t, [(tp, b) for b in r.target], R.ONLINE)
    t.ctx.assignments[tp] = r.target  # step 6
    lai = draft_lookup(t.ctx, "leadership", tp)
    if lai is None:
        pass  # no leader and ISR yet (a cancelled reassignment of a partition never led): nothing to move
    elif lai.leader not in r.target or lai.leader not in eligible_brokers(t):  # step 7
        if handle_partition_changes(t, [tp], P.ONLINE, selectors.REASSIGNED):
            t.note(f"{tp_name(tp)}: no live RAR replica in the ISR to lead; leader kept")
    else:
        leadership.update_leader_and_isr(t, tp, lambda cur: (cur.leader, cur.isr))
        requests.add_leader_and_isr(t, r.target, tp)
        requests.flush(t)
    stop_removed_replicas(t, tp, r.removing)  # steps 8 and 9
    t.zk.assignments[tp] = r.target  # step 10
    t.zk.reassign_partitions.pop(tp, None)  # step 11
    t.zk.reassign_original = remove(t.zk.reassign_original, tp)
    t.ctx.reassignments.pop(tp, None)
    requests.add_update_metadata(t, sorted(draft_peek(t.ctx, "live_brokers")), (tp,))  # step 12
    requests.flush(t)
    if draft_has(t.ctx, "topics_ineligible", tp[0]):
        t.ctx.topics_ineligible.discard(tp[0])
        resume_deletion(t, tp[0])


def stop_removed_replicas(t: Txn, tp: tuple, brokers: Sequence[int]) -> None:
    """Kafka's stopRemovedReplicasOfReassignedPartition: the replicas go offline, then are deleted."""
    removed = [(tp, b) for b in brokers]
    if not removed:
        return
    handle_replica_changes(t, removed, R.OFFLINE)
    if t.rules.has_deletion_states():
        for state in (R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.NON_EXISTENT):
            handle_replica_changes(t, removed, state)
    else:
        handle_replica_changes(t, removed, R.NON_EXISTENT)


def on_isr_change(t: Txn, tp: tuple) -> None:
    """After a leader's ISR write: refresh the controller's cache; complete a reassignment whose RAR is in the ISR."""
    if not has_controller(t):
        return
    leadership.refresh_from_zk(t, tp)
    r = draft_lookup(t.ctx, "reassignments", tp)
    lai = draft_lookup(t.ctx, "leadership", tp)
    if r is not None and lai is not None and set(r.target).issubset(lai.isr):
        complete(t, tp, r)
