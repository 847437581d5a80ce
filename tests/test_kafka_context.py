"""Facts of Apache Kafka's ControllerContextTest, restated against the reference's controller context.

Kafka's ReplicaAssignment keeps (replicas, adding, removing); the model keeps a partition's AR in
`ControllerContext.assignments` and a reassignment in flight as `Reassignment(original, target)`, from which
replicas, adding and removing follow (AR = target first, then the original replicas being removed). Kafka's
`reassignTo` is what the reference's `reassign` step does to that record.

Also here: ControllerIntegrationTest's controller-move checks (an operation run by a controller whose epoch
has moved on is fenced) and the preferred election of a partition under reassignment.

Not expressible: the preferred-replica imbalance gauge (the model keeps no metrics).
"""

from __future__ import annotations

import pytest
from kcm.model.actions import (
    BrokerFail,
    BrokerStart,
    CreateTopic,
    DeleteTopic,
    PreferredElection,
    Reassign,
    Replicate,
)
from kcm.model.cluster import ClusterConfig, Reassignment
from kcm.model.errors import StaleControllerEpoch
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.txn import Txn
from kcm.reference import api
from kcm.reference.context import partitions_of, topic_exists
from kcm.reference.result import result_document

CONFIG = ClusterConfig((1, 2, 3), rules="kafka", first_controller=1)
# ControllerContextTest's set-up: and B-0 on brokers 1, 2, 3, round robin.
SETUP = (CreateTopic("A", ((0, (1, 2, 3)), (1, (2, 3, 1)))), CreateTopic("B", ((0, (3, 1, 2)),)))


def running(*actions, config=CONFIG):
    """The cluster after start, the set-up topics and the given actions."""
    state, _ = api.start(config)
    for a in SETUP + actions:
        state, _ = api.step(config, state, a)
    return state


def test_missing_topic_or_partition_reads_as_empty():
    """testPartitionReplicaAssignmentReturnsEmptySeq... / ...FullReplicaAssignment... / ...ForTopicReturnsEmptyMap..."""
    t = Txn(CONFIG, running())
    for tp in (("NONEXISTENT", 0), ("A", 100)):
        assert t.ctx.assignments.get(tp, ()) == ()
        assert tp not in t.ctx.reassignments
        assert t.partition_state(tp) == P.NON_EXISTENT
    assert partitions_of(t, "NONEXISTENT") == []
    assert not topic_exists(t, "NONEXISTENT")
    assert "A-100" not in result_document(running())["partitions"]


def test_partitions_of_a_topic():
    """testPartitionReplicaAssignmentForTopicReturnsExpectedReplicaAssignments: A's two partitions, not B's."""
    t = Txn(CONFIG, running())
    assert partitions_of(t, "A") == [("A", 0), ("A", 1)]
    assert {tp: t.ctx.assignments[tp] for tp in partitions_of(t, "A")} == {("A", 0): (1, 2, 3), ("A", 1): (2, 3, 1)}


def test_an_assignment_update_replaces_replicas_adding_and_removing():
    """testUpdatePartitionFullReplicaAssignmentUpdatesReplicaAssignment, through the reference's operations.

    A plain partition has nothing adding or removing; a reassignment in flight shows its own; once it completes
    the partition is plain again with the new replicas.
    """
    config = ClusterConfig((1, 2, 3, 4), rules="kafka", first_controller=1)
    plain = result_document(running(config=config))
    assert plain["partitions"]["A-0"]["replicas"] == [1, 2, 3] and plain["reassignments"] == {}
    moving = result_document(running(BrokerFail(4), Reassign(("A", 0), (4,)), config=config))
    assert moving["partitions"]["A-0"]["replicas"] == [4, 1, 2, 3]
    assert moving["reassignments"] == {"A-0": {"adding": [4], "removing": [1, 2, 3]}}
    done = result_document(running(BrokerFail(4), Reassign(("A", 0), (4,)), BrokerStart(4), Replicate(("A", 0)),
                                   Replicate(("A", 0)), config=config))
    assert done["partitions"]["A-0"]["replicas"] == [4] and done["reassignments"] == {}


@pytest.mark.parametrize("original,target,replicas,adding,removing", [
    ((1, 5, 6), (2, 3, 4), (2, 3, 4, 1, 5, 6), (2, 3, 4), (1, 5, 6)),
    ((1, 2, 3, 4), (2, 3), (2, 3, 1, 4), (), (1, 4)),
    ((1, 2, 3), (1, 3, 4), (1, 3, 4, 2), (4,), (2,)),
    ((1, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6), (), ()),
    ((1, 2, 3, 4), (4, 2, 5, 3), (4, 2, 5, 3, 1), (5,), (1,)),
    ((1, 2, 3), (4, 5, 6), (4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
    ((1, 2, 3), (3, 1, 2), (3, 1, 2), (), ()),
])
def test_reassignment_record(original, target, replicas, adding, removing):
    """testPartitionReplicaAssignment: target, replicas, adding and removing of a reassignment record.

    Kafka's first three cases give replicas in an arbitrary order; the model derives AR in rule 8's order
    (target first), so those compare as sets of (adding, removing, target).
    """
    r = Reassignment(original, target)
    assert (r.target, r.adding, r.removing) == (target, adding, removing)
    assert r.replicas == replicas
    assert bool(r.adding or r.removing) == (adding != () or removing != ())


NINE = ClusterConfig(tuple(range(1, 10)), rules="kafka", first_controller=1)


def reassigned(*targets: tuple[int, ...]) -> dict:
    """The result document of topic t on [1, 2, 3] after reassigning t-0 to each target in turn (none caught up)."""
    state, _ = api.start(NINE)
    for a in (CreateTopic("t", ((0, (1, 2, 3)),)), *(Reassign(("t", 0), target) for target in targets)):
        state, _ = api.step(NINE, state, a)
    doc = result_document(state)
    return {"replicas": doc["partitions"]["t-0"]["replicas"], "reassignment": doc["reassignments"].get("t-0")}


@pytest.mark.parametrize("targets,replicas,reassignment", [
    ([(4, 5, 6)], [4, 5, 6, 1, 2, 3], {"adding": [4, 5, 6], "removing": [1, 2, 3]}),
    ([(7, 8, 9)], [7, 8, 9, 1, 2, 3], {"adding": [7, 8, 9], "removing": [1, 2, 3]}),
    ([(4, 5, 6), (1, 2, 3)], [1, 2, 3], None),
])
def test_reassign_to(targets, replicas, reassignment):
    """testReassignTo: a first reassignment, and a return to the original replicas (which ends it at once)."""
    assert reassigned(*targets) == {"replicas": replicas, "reassignment": reassignment}


def test_reassign_to_replaces_the_target():
    """testReassignTo: [1,2,3] -> [4,5,6], then -> [7,8,9], is [7,8,9,1,2,3] adding [7,8,9] removing [1,2,3]."""
    assert reassigned((4, 5, 6), (7, 8, 9)) == {
        "replicas": [7, 8, 9, 1, 2, 3], "reassignment": {"adding": [7, 8, 9], "removing": [1, 2, 3]}}


@pytest.mark.parametrize("target,reassignment", [
    ((4, 5, 6), {"adding": [4, 5, 6], "removing": [1, 2, 3]}),
    ((4, 2, 3), {"adding": [4], "removing": [1]}),
])
def test_reassign_to_the_same_target_changes_nothing(target, reassignment):
    """testReassignToIdempotence."""
    once, twice = reassigned(target), reassigned(target, target)
    assert once["reassignment"] == reassignment
    assert twice == once


# -- ControllerIntegrationTest.testControllerMoveOn*: a controller that has been replaced is fenced --------


def moved(state):
    """The same cluster after broker 3 took /controller with the next epoch, before the old controller noticed."""
    zk = state.zk._replace(controller=3, controller_epoch=state.zk.controller_epoch + 1,
                           controller_epoch_zk_version=state.zk.controller_epoch_zk_version + 1)
    return state._replace(zk=zk)


# B-0's preferred replica is 3: failing 3 moves its leadership to 1, and once 3 is back and caught up the preferred
# election has a leader to move.
PREPARE = (BrokerFail(3), BrokerStart(3), Replicate(("B", 0)), Replicate(("B", 0)))


@pytest.mark.parametrize("action", [
    CreateTopic("C", ((0, (1, 2)),)),  # testControllerMoveOnTopicCreation
    DeleteTopic("A"),  # testControllerMoveOnTopicDeletion
    PreferredElection((("B", 0),)),  # testControllerMoveOnPreferredReplicaElection
    Reassign(("A", 0), (3, 2)),  # testControllerMoveOnPartitionReassignment
], ids=["topic-creation", "topic-deletion", "preferred-election", "reassignment"])
def test_a_moved_controller_is_fenced(action):
    """The old controller's writes fail on the /controller_epoch zkVersion (ControllerMovedException in Kafka)."""
    state = running(*PREPARE)
    assert get(state.zk.partitions, ("B", 0)).leader != 3  # the preferred election has something to do
    api.step(CONFIG, state, action)  # the same operation goes through while the controller is current
    with pytest.raises(StaleControllerEpoch):
        api.step(CONFIG, moved(state), action)


def test_preferred_election_of_a_partition_being_reassigned():
    """ControllerIntegrationTest.testAutoPreferredReplicaLeaderElectionWithSamePartitionBeingReassigned.

    t-0 on [0, 1]; with broker 2 down it is reassigned to [1, 0, 2] (stuck); the preferred election moves the
    leadership to 1 at leader epoch 2 while the reassignment is still in flight.
    """
    config = ClusterConfig((0, 1, 2), rules="kafka", first_controller=0)
    state, _ = api.start(config)
    for a in (CreateTopic("t", ((0, (0, 1)),)), BrokerFail(2), Reassign(("t", 0), (1, 0, 2)), PreferredElection()):
        state, _ = api.step(config, state, a)
    doc = result_document(state)
    assert doc["reassignments"] == {"t-0": {"adding": [2], "removing": []}}
    assert (doc["partitions"]["t-0"]["leader"], doc["partitions"]["t-0"]["leader_epoch"]) == (1, 2)
