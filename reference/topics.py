"""Topic creation (onNewTopicCreation / onNewPartitionCreation, seed 004's placement) and topic deletion."""

from __future__ import annotations

from collections.abc import Sequence

from kcm.model.actions import AddPartitions, CreateTopic, DeleteTopic
from kcm.model.errors import InvalidReplicaAssignment, ReassignmentInProgress, UnknownTopicOrPartition
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn, draft_has, draft_sorted_items
from kcm.reference import requests
from kcm.reference.context import has_controller, partitions_of, topic_exists
from kcm.reference.events import enqueue, processes
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import handle_partition_changes
from kcm.reference.replica_machine import handle_replica_changes


def place_replicas(brokers: Sequence[int], partitions: int, replication_factor: int) -> dict[int, tuple[int, ...]]:
    """Seed 004: partition i's j-th replica goes on the ((i + j) mod n)-th of the sorted live brokers."""
    live = sorted(brokers)
    n = len(live)
    if partitions < 1:
        raise InvalidReplicaAssignment(f"a topic needs at least one partition, not {partitions}")
    if replication_factor < 1 or replication_factor > n:
        raise InvalidReplicaAssignment(
            f"replication factor {replication_factor} is not between 1 and the {n} live brokers")
    return {i: tuple([live[(i + j) % n] for j in range(replication_factor)]) for i in range(partitions)}


def check_assignment(t: Txn, topic: str, assignment: Sequence[tuple[int, tuple[int, ...]]], first: int) -> None:
    """Partition ids numbered on from `first`, each with a non-empty list of distinct registered brokers."""
    ids = [p for p, _ in assignment]
    if not ids or sorted(ids) != list(range(first, first + len(ids))):
        raise InvalidReplicaAssignment(f"{topic}: partitions {sorted(ids)} are not numbered {first}, {first + 1}, ...")
    registered = set(t.config.brokers)
    for p, replicas in assignment:
        if not replicas or len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(f"{topic}-{p}: replicas {list(replicas)} are empty or repeat a broker")
        unknown = [b for b in replicas if b not in registered]
        if unknown:
            raise InvalidReplicaAssignment(f"{topic}-{p}: brokers {unknown} are not registered")


@handles(CreateTopic)
def create_topic(t: Txn, a: CreateTopic) -> None:
    """Register the topic's assignment in ZooKeeper, then onNewTopicCreation."""
    if topic_exists(t, a.topic):
        raise InvalidReplicaAssignment(f"topic {a.topic} already exists")
    if a.assignment:
        check_assignment(t, a.topic, a.assignment, 0)
        assignment = dict(a.assignment)
    else:
        assignment = place_replicas(t.zk.brokers, a.partitions, a.replication_factor)
    _add(t, a.topic, assignment, "TopicChange")


@handles(AddPartitions)
def add_partitions(t: Txn, a: AddPartitions) -> None:
    """New partitions of an existing topic, then onNewPartitionCreation."""
    if not topic_exists(t, a.topic) or a.topic in t.zk.delete_topics:
        raise UnknownTopicOrPartition(f"topic {a.topic} does not exist")
    if any(tp[0] == a.topic for tp in t.zk.reassign_partitions):
        raise ReassignmentInProgress(f"topic {a.topic} has a partition being reassigned")
    existing = sum([1 for tp in t.zk.assignments if tp[0] == a.topic])
    check_assignment(t, a.topic, a.assignment, existing)
    _add(t, a.topic, dict(a.assignment), "PartitionModifications")


def _add(t: Txn, topic: str, assignment: dict[int, tuple[int, ...]], event: str) -> None:
    tps = [(topic, p) for p in sorted(assignment)]
    for tp in tps:
        t.zk.assignments[tp] = tuple(assignment[tp[1]])
    if has_controller(t):
        enqueue(t, event, topic)


@processes("TopicChange")
@processes("PartitionModifications")
def new_partitions(t: Txn, topic: str) -> None:
    """TopicChange / PartitionModifications: the controller reads the topic's partitions it does not know yet from
    /brokers/topics/<topic> and runs onNewPartitionCreation for them."""
    tps = [tp for tp, _ in draft_sorted_items(t.zk, "assignments")
           if tp[0] == topic and not draft_has(t.ctx, "assignments", tp)]
    if tps:
        on_new_partition_creation(t, tps)


def on_new_partition_creation(t: Txn, tps: list[tuple]) -> None:
    """Partitions -> NewPartition, replicas -> NewReplica, partitions -> OnlinePartition, replicas -> OnlineReplica."""
    for tp in tps:
        t.ctx.assignments[tp] = t.zk.assignments[tp]
    replicas = [(tp, b) for tp in tps for b in t.ctx.assignments[tp]]
    handle_partition_changes(t, tps, P.NEW)
    handle_replica_changes(t, replicas, R.NEW)
    handle_partition_changes(t, tps, P.ONLINE)
    handle_replica_changes(t, replicas, R.ONLINE)


@handles(DeleteTopic)
def delete_topic(t: Txn, a: DeleteTopic) -> None:
    """Queue the topic in /admin/delete_topics; the controller deletes it (contract rule 5).

    A topic already queued is refused as unknown, as in Kafka: once its deletion starts the brokers' metadata no
    longer lists it.
    """
    if not topic_exists(t, a.topic):
        raise UnknownTopicOrPartition(f"topic {a.topic} does not exist")
    if a.topic in t.zk.delete_topics:
        raise UnknownTopicOrPartition(f"topic {a.topic} is already queued for deletion")
    t.zk.delete_topics.add(a.topic)
    if has_controller(t):
        enqueue(t, "TopicDeletion", a.topic)


@processes("TopicDeletion")
def topic_deletion(t: Txn, topic: str) -> None:
    """TopicDeletion: the controller reads the topic queued in /admin/delete_topics and starts deleting it."""
    if not draft_has(t.zk, "delete_topics", topic):
        return
    t.ctx.topics_to_delete.add(topic)
    resume_deletion(t, topic)


def resume_deletion(t: Txn, topic: str, despite_reassignment: bool = False) -> None:
    """Kafka's resumeDeletions for one topic, with the StopReplica answers of live brokers arriving at once (rule 5).

    A topic marked ineligible only has its ReplicaDeletionIneligible replicas reset to OfflineReplica
    (retryDeletionForIneligibleReplicas) and waits. Otherwise its deletion (re)starts (onTopicDeletion): the first
    time under this controller its partitions go OfflinePartition -> NonExistentPartition, brokers get
    UpdateMetadata, replicas on dead brokers go ReplicaDeletionIneligible, those on live brokers OfflineReplica ->
    ReplicaDeletionStarted -> ReplicaDeletionSuccessful. Then the topic is deleted if every replica is, else the
    ineligible replicas are reset to OfflineReplica and the topic waits for their brokers. Under rules without
    deletion states (kafka-0.8), OfflineReplica -> NonExistentReplica deletes the log.

    A topic with a partition being reassigned waits for the reassignment (ineligible), except when a broker
    with its replicas starts: Kafka's resumeDeletionForTopics then clears the mark and its resumeDeletions does
    not look at reassignments (`despite_reassignment`), so the deletion goes ahead.
    """
    if topic not in t.ctx.topics_to_delete:
        return
    tps = partitions_of(t, topic)
    if not despite_reassignment and any(tp in t.ctx.reassignments for tp in tps):
        t.ctx.topics_ineligible.add(topic)  # Kafka waits for the reassignment to finish first
        return
    replicas = [(tp, b) for tp in tps for b in t.ctx.assignments[tp]]
    if not t.rules.has_deletion_states():
        _delete_without_deletion_states(t, topic, tps, replicas)
        return
    if draft_has(t.ctx, "topics_ineligible", topic):
        retry_ineligible_replicas(t, replicas)
        return
    if any(t.partition_state(tp) != P.NON_EXISTENT for tp in tps):
        # onTopicDeletion, the first time this controller sees the topic's deletion (topicsWithDeletionStarted).
        handle_partition_changes(t, tps, P.OFFLINE)
        handle_partition_changes(t, tps, P.NON_EXISTENT)
    live = {b for b, s in t.brokers.items() if s.alive}
    on_live = [r for r in replicas if r[1] in live]
    on_dead = [r for r in replicas if r[1] not in live]
    requests.add_update_metadata(t, sorted(t.ctx.live_brokers), tps)
    requests.flush(t)
    handle_replica_changes(t, [r for r in on_dead if t.replica_state(*r) in (R.NEW, R.ONLINE)], R.OFFLINE)
    if t.rules.allows_replica(R.OFFLINE, R.DELETION_INELIGIBLE):
        handle_replica_changes(t, on_dead, R.DELETION_INELIGIBLE)
    else:
        handle_replica_changes(t, [r for r in on_dead if t.replica_state(*r) == R.OFFLINE], R.DELETION_STARTED)
        handle_replica_changes(t, on_dead, R.DELETION_INELIGIBLE)
    retry = [r for r in on_live if t.replica_state(*r) != R.DELETION_SUCCESSFUL]
    handle_replica_changes(t, retry, R.OFFLINE)
    handle_replica_changes(t, retry, R.DELETION_STARTED)  # StopReplica(delete) delivered in this flush
    if on_dead:
        t.ctx.topics_ineligible.add(topic)  # "offline replicas"
    # The live brokers' answers (completeReplicaDeletion), then resumeDeletions again.
    handle_replica_changes(t, on_live, R.DELETION_SUCCESSFUL)
    if all(t.replica_state(*r) == R.DELETION_SUCCESSFUL for r in replicas):
        complete_deletion(t, topic, replicas)
    else:
        retry_ineligible_replicas(t, replicas)


def retry_ineligible_replicas(t: Txn, replicas: list[tuple[tuple, int]]) -> None:
    """retryDeletionForIneligibleReplicas: ReplicaDeletionIneligible replicas go back to OfflineReplica."""
    if any(t.replica_state(*r) == R.DELETION_STARTED for r in replicas):
        return  # an answer is still awaited: Kafka retries only once none is
    handle_replica_changes(t, [r for r in replicas if t.replica_state(*r) == R.DELETION_INELIGIBLE], R.OFFLINE)


def fail_replica_deletion(t: Txn, topic: str, replicas: list[tuple[tuple, int]]) -> None:
    """failReplicaDeletion: replicas of a topic queued for deletion whose broker died go ReplicaDeletionIneligible,
    the topic is marked ineligible, and resumeDeletions runs (which resets them to OfflineReplica)."""
    if t.rules.has_deletion_states():
        handle_replica_changes(t, replicas, R.DELETION_INELIGIBLE)
        t.ctx.topics_ineligible.add(topic)
    resume_deletion(t, topic)


def _delete_without_deletion_states(t: Txn, topic: str, tps: list[tuple], replicas: list[tuple[tuple, int]]) -> None:
    live = {b for b, s in t.brokers.items() if s.alive}
    requests.add_update_metadata(t, sorted(t.ctx.live_brokers), tps)
    handle_replica_changes(t, [r for r in replicas if t.replica_state(*r) in (R.NEW, R.ONLINE)], R.OFFLINE)
    handle_replica_changes(t, [r for r in replicas if r[1] in live], R.NON_EXISTENT)
    if all(t.replica_state(*r) == R.NON_EXISTENT for r in replicas):
        complete_deletion(t, topic, replicas)
    else:
        t.ctx.topics_ineligible.add(topic)


def complete_deletion(t: Txn, topic: str, replicas: list[tuple[tuple, int]]) -> None:
    """Every replica deleted: replicas -> NonExistentReplica, partitions -> NonExistentPartition, ZK cleaned."""
    handle_replica_changes(t, replicas, R.NON_EXISTENT)
    tps = partitions_of(t, topic)
    handle_partition_changes(t, [tp for tp in tps if t.partition_state(tp) in (P.NEW, P.ONLINE)], P.OFFLINE)
    handle_partition_changes(t, tps, P.NON_EXISTENT)
    for tp in tps:
        # A reassignment still in flight goes with its partition (Kafka's removeTopic leaves a stale entry in
        # partitionsBeingReassigned, which its next failover drops: the model drops it at once).
        for m in (t.ctx.assignments, t.ctx.leadership, t.ctx.partition_states, t.ctx.reassignments):
            m.pop(tp, None)
    for key in [k for k in t.ctx.replica_states if k[0] == topic]:
        del t.ctx.replica_states[key]
    # A re-created topic starts again at leader epoch 0: forget this one's leader epochs.
    for key in [k for k in t.ghost.elected if k[0] == topic]:
        del t.ghost.elected[key]
    t.ctx.topics_to_delete.discard(topic)
    t.ctx.topics_ineligible.discard(topic)
    if t.config.grain == "event":
        # The znodes go in several ZooKeeper calls, the next of them at the head of the queue (delete_topic_znodes).
        enqueue(t, "DeleteTopicZNode", topic, first=True)
        return
    for tp in tps:
        t.zk.partitions.pop(tp, None)
    _delete_topic_znode(t, topic)


@processes("DeleteTopicZNode")
def delete_topic_znodes(t: Txn, topic: str) -> None:
    """One ZooKeeper call of a deleted topic's recursive delete: a partition state znode, or (the last one left)
    /brokers/topics/<topic> with its reassignment entries and the /admin/delete_topics entry."""
    states = [tp for tp, _ in draft_sorted_items(t.zk, "partitions") if tp[0] == topic]
    if states:
        t.zk.partitions.pop(min(states), None)
        enqueue(t, "DeleteTopicZNode", topic, first=True)
        return
    _delete_topic_znode(t, topic)


def _delete_topic_znode(t: Txn, topic: str) -> None:
    for tp in [tp for tp, _ in draft_sorted_items(t.zk, "assignments") if tp[0] == topic]:
        t.zk.assignments.pop(tp, None)
        t.zk.reassign_partitions.pop(tp, None)
    t.zk.reassign_original = tuple([kv for kv in t.zk.reassign_original if kv[0][0] != topic])
    t.zk.delete_topics.discard(topic)
