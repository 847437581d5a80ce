"""Facts of Apache Kafka's controller unit tests, restated against the reference (rules "kafka").

From PartitionLeaderElectionAlgorithmsTest (the four selectors), PartitionStateMachineTest and
ReplicaStateMachineTest (one handleStateChanges call on a prepared controller context). Controller
calls skip a move the table refuses and leave the state as it was, as Kafka's do.
"""

from __future__ import annotations

import pytest
from kcm.model.actions import BrokerFail, ControllerResign, CreateTopic
from kcm.model.cluster import ClusterConfig, LeaderAndIsr
from kcm.model.effects import LeaderAndIsrRequest, StopReplicaRequest
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn
from kcm.reference import api, selectors
from kcm.reference.partition_machine import handle_partition_changes
from kcm.reference.replica_machine import handle_replica_changes

KAFKA = ClusterConfig((0, 1, 2), rules="kafka", first_controller=2)
TP = ("t", 0)

# -- PartitionLeaderElectionAlgorithmsTest -------------------------------------------------------


@pytest.mark.parametrize("assignment,isr,live,unclean,leader", [
    ((2, 4), (2, 4), (4,), False, 4),  # testOfflinePartitionLeaderElection
    ((2, 4), (2,), (4,), False, None),  # ...LastIsrOfflineUncleanLeaderElectionDisabled
    ((2, 4), (2,), (4,), True, 4),  # ...LastIsrOfflineUncleanLeaderElectionEnabled
])
def test_offline_partition_leader_election(assignment, isr, live, unclean, leader):
    got = selectors.offline(assignment, isr, live, unclean)
    assert (got[0] if got else None) == leader


@pytest.mark.parametrize("reassignment,isr,live,leader", [
    ((2, 4), (2, 4), (2, 4), 2),  # testReassignPartitionLeaderElection
    ((2, 4), (2,), (), None),  # ...WithNoLiveIsr
    ((2, 4), (), (2,), None),  # ...WithEmptyIsr
])
def test_reassign_partition_leader_election(reassignment, isr, live, leader):
    got = selectors.reassigned(reassignment, isr, live)
    assert (got[0] if got else None) == leader


@pytest.mark.parametrize("assignment,isr,live,leader", [
    ((2, 4), (2, 4), (2, 4), 2),  # testPreferredReplicaPartitionLeaderElection
    ((2, 4), (2,), (), None),  # ...PreferredReplicaInIsrNotLive
    ((2, 4), (4,), (2, 4), None),  # ...PreferredReplicaNotInIsrLive
])
def test_preferred_replica_partition_leader_election(assignment, isr, live, leader):
    got = selectors.preferred(assignment, isr, live)
    assert (got[0] if got else None) == leader


@pytest.mark.parametrize("isr,shutting_down,leader", [
    ((2, 4), (2,), 4),  # testControlledShutdownPartitionLeaderElection
    ((2,), (2,), None),  # ...LastIsrShuttingDown
    ((2, 4), (2, 4), None),  # ...AllIsrSimultaneouslyShutdown
])
def test_controlled_shutdown_partition_leader_election(isr, shutting_down, leader):
    got = selectors.controlled_shutdown((2, 4), isr, (2, 4), shutting_down)
    assert (got[0] if got else None) == leader
    if got:
        assert not set(got[1]) & set(shutting_down)


# -- PartitionStateMachineTest ---------------------------------------------------------------


def prepared(assignment=(0,), partition_state=None, leader_and_isr=None, config=KAFKA):
    """A Txn over a running controller with t-0 assigned, in the given state, with the given znode."""
    state, _ = api.start(config)
    t = Txn(config, state)
    t.zk.assignments[TP] = t.ctx.assignments[TP] = tuple(assignment)
    if partition_state is not None:
        t.ctx.partition_states[TP] = partition_state
    if leader_and_isr is not None:
        leader, isr = leader_and_isr
        t.zk.partitions[TP] = t.ctx.leadership[TP] = LeaderAndIsr(leader, 0, isr, t.ctx.epoch, 0)
    return t


def sent(t, kind):
    """The requests of a kind the Txn delivered."""
    return [r for r in t.requests if isinstance(r, kind)]


def test_nonexistent_partition_to_new_partition():
    t = prepared()
    handle_partition_changes(t, [TP], P.NEW)
    assert t.partition_state(TP) == P.NEW


@pytest.mark.parametrize("start,target", [
    (None, P.ONLINE), (None, P.OFFLINE),  # from NonExistentPartition
    (P.NEW, P.NON_EXISTENT), (P.ONLINE, P.NON_EXISTENT), (P.ONLINE, P.NEW), (P.OFFLINE, P.NEW),
])
def test_invalid_partition_transitions_leave_the_state(start, target):
    t = prepared(partition_state=start, leader_and_isr=(0, (0,)) if start in (P.ONLINE, P.OFFLINE) else None)
    assert handle_partition_changes(t, [TP], target) == [TP]
    assert t.partition_state(TP) == (start or P.NON_EXISTENT)
    assert not t.requests


def test_new_partition_to_online_partition():
    t = prepared(partition_state=P.NEW)
    handle_partition_changes(t, [TP], P.ONLINE)
    assert t.partition_state(TP) == P.ONLINE
    assert t.zk.partitions[TP] == LeaderAndIsr(0, 0, (0,), t.ctx.epoch, 0)
    assert [(r.broker, r.leader, r.isr) for r in sent(t, LeaderAndIsrRequest)] == [(0, 0, (0,))]


@pytest.mark.parametrize("start", [P.NEW, P.ONLINE])
def test_partition_to_offline_partition(start):
    t = prepared(partition_state=start)
    handle_partition_changes(t, [TP], P.OFFLINE)
    assert t.partition_state(TP) == P.OFFLINE


def test_online_partition_to_online_with_offline_election():
    t = prepared(partition_state=P.ONLINE, leader_and_isr=(0, (0,)))
    handle_partition_changes(t, [TP], P.ONLINE, selectors.OFFLINE)
    lai = t.zk.partitions[TP]
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (0, (0,), 1, 1)
    assert sent(t, LeaderAndIsrRequest)[0].leader_epoch == 1


def test_online_partition_to_online_with_controlled_shutdown_election():
    t = prepared(assignment=(0, 1), partition_state=P.ONLINE, leader_and_isr=(0, (0, 1)))
    t.ctx.shutting_down.add(0)
    handle_partition_changes(t, [TP], P.ONLINE, selectors.CONTROLLED_SHUTDOWN)
    assert (t.zk.partitions[TP].leader, t.zk.partitions[TP].isr) == (1, (1,))


def test_offline_partition_to_online_partition():
    t = prepared(partition_state=P.OFFLINE, leader_and_isr=(-1, (0,)))
    handle_partition_changes(t, [TP], P.ONLINE, selectors.OFFLINE)
    assert t.partition_state(TP) == P.ONLINE and t.zk.partitions[TP].leader == 0


def test_offline_partition_to_unclean_online_partition():
    config = KAFKA._replace(unclean_leader_election=True)
    t = prepared(assignment=(0, 1), partition_state=P.OFFLINE, leader_and_isr=(-1, (1,)), config=config)
    t.ctx.live_brokers.discard(1)
    handle_partition_changes(t, [TP], P.ONLINE, selectors.OFFLINE)
    assert (t.zk.partitions[TP].leader, t.zk.partitions[TP].isr) == (0, (0,))


def test_offline_partition_without_eligible_leader_stays_offline():
    t = prepared(assignment=(0, 1), partition_state=P.OFFLINE, leader_and_isr=(-1, (1,)))
    t.ctx.live_brokers.discard(1)
    assert handle_partition_changes(t, [TP], P.ONLINE, selectors.OFFLINE) == [TP]
    assert t.partition_state(TP) == P.OFFLINE and t.zk.partitions[TP].leader == -1


def test_offline_partition_to_nonexistent_partition():
    t = prepared(partition_state=P.OFFLINE)
    handle_partition_changes(t, [TP], P.NON_EXISTENT)
    assert t.partition_state(TP) == P.NON_EXISTENT


def test_offline_to_offline_is_a_kafka_move_not_a_seeds_one():
    t = prepared(partition_state=P.OFFLINE)
    assert handle_partition_changes(t, [TP], P.OFFLINE) == []
    t = prepared(partition_state=P.OFFLINE, config=KAFKA._replace(rules="seeds"))
    assert handle_partition_changes(t, [TP], P.OFFLINE) == [TP]


# -- ReplicaStateMachineTest -----------------------------------------------------------------


def test_startup_online_and_offline_replicas():
    state, _ = api.start(KAFKA)
    for a in (CreateTopic("t", ((0, (0, 1)),)), BrokerFail(1), ControllerResign(0)):
        state, _ = api.step(KAFKA, state, a)
    assert get(state.ctx.replica_states, ("t", 0, 0)) == R.ONLINE
    assert get(state.ctx.replica_states, ("t", 0, 1)) == R.OFFLINE


def with_replica(state_of_replica, leader_and_isr=(0, (0, 1)), deleting=False):
    """A prepared Txn whose replica t-0@1 is in state_of_replica."""
    t = prepared(assignment=(0, 1), partition_state=P.ONLINE, leader_and_isr=leader_and_isr)
    if state_of_replica is not None:
        t.ctx.replica_states[("t", 0, 1)] = state_of_replica
    if deleting:
        t.ctx.topics_to_delete.add("t")
    return t


def test_nonexistent_replica_to_new_replica():
    t = with_replica(None)
    handle_replica_changes(t, [(TP, 1)], R.NEW)
    assert t.replica_state(TP, 1) == R.NEW
    assert [r.broker for r in sent(t, LeaderAndIsrRequest)] == [1]


@pytest.mark.parametrize("start,target", [
    (None, R.ONLINE), (None, R.OFFLINE), (None, R.DELETION_STARTED), (None, R.DELETION_INELIGIBLE),
    (None, R.DELETION_SUCCESSFUL),
    (R.NEW, R.DELETION_STARTED), (R.NEW, R.DELETION_INELIGIBLE), (R.NEW, R.DELETION_SUCCESSFUL),
    (R.NEW, R.NON_EXISTENT),
    (R.ONLINE, R.DELETION_STARTED), (R.ONLINE, R.DELETION_INELIGIBLE), (R.ONLINE, R.DELETION_SUCCESSFUL),
    (R.ONLINE, R.NON_EXISTENT), (R.ONLINE, R.NEW),
    (R.OFFLINE, R.NEW), (R.OFFLINE, R.NON_EXISTENT), (R.OFFLINE, R.DELETION_SUCCESSFUL),
    (R.DELETION_STARTED, R.NEW), (R.DELETION_STARTED, R.ONLINE), (R.DELETION_STARTED, R.OFFLINE),
    (R.DELETION_SUCCESSFUL, R.ONLINE), (R.DELETION_SUCCESSFUL, R.OFFLINE),
    (R.DELETION_INELIGIBLE, R.NEW), (R.DELETION_INELIGIBLE, R.NON_EXISTENT),
])
def test_invalid_replica_transitions_leave_the_state(start, target):
    t = with_replica(start, deleting=True)
    handle_replica_changes(t, [(TP, 1)], target)
    assert t.replica_state(TP, 1) == (start or R.NON_EXISTENT)
    assert not t.requests


def test_new_replica_to_online_replica():
    t = with_replica(R.NEW)
    handle_replica_changes(t, [(TP, 1)], R.ONLINE)
    assert t.replica_state(TP, 1) == R.ONLINE and not sent(t, LeaderAndIsrRequest)


def test_new_replica_to_offline_replica_sends_stop_replica():
    t = with_replica(R.NEW, leader_and_isr=(0, (0,)))
    handle_replica_changes(t, [(TP, 1)], R.OFFLINE)
    assert t.replica_state(TP, 1) == R.OFFLINE
    assert [(r.broker, r.delete) for r in sent(t, StopReplicaRequest)] == [(1, False)]


@pytest.mark.parametrize("start", [R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE])
def test_replica_to_online_replica_sends_leader_and_isr(start):
    t = with_replica(start)
    handle_replica_changes(t, [(TP, 1)], R.ONLINE)
    assert t.replica_state(TP, 1) == R.ONLINE
    assert [r.broker for r in sent(t, LeaderAndIsrRequest)] == [1]


def test_online_leader_replica_to_offline_replica():
    t = with_replica(R.ONLINE, leader_and_isr=(1, (0, 1)))
    handle_replica_changes(t, [(TP, 1)], R.OFFLINE)
    lai = t.zk.partitions[TP]
    assert (lai.leader, lai.isr, lai.leader_epoch) == (-1, (0,), 1)
    assert [r.broker for r in sent(t, LeaderAndIsrRequest)] == [0]
    assert [(r.broker, r.delete) for r in sent(t, StopReplicaRequest)] == [(1, False)]


def test_offline_replica_to_replica_deletion_started():
    t = with_replica(R.OFFLINE, deleting=True)
    handle_replica_changes(t, [(TP, 1)], R.DELETION_STARTED)
    assert t.replica_state(TP, 1) == R.DELETION_STARTED
    assert [(r.broker, r.delete) for r in sent(t, StopReplicaRequest)] == [(1, True)]


@pytest.mark.parametrize("start,target", [
    (R.OFFLINE, R.DELETION_INELIGIBLE), (R.DELETION_STARTED, R.DELETION_INELIGIBLE),
    (R.DELETION_STARTED, R.DELETION_SUCCESSFUL), (R.DELETION_INELIGIBLE, R.OFFLINE),
])
def test_deletion_moves(start, target):
    t = with_replica(start, deleting=True)
    handle_replica_changes(t, [(TP, 1)], target)
    assert t.replica_state(TP, 1) == target


def test_replica_deletion_successful_to_nonexistent_leaves_the_assignment():
    t = with_replica(R.DELETION_SUCCESSFUL, deleting=True)
    handle_replica_changes(t, [(TP, 1)], R.NON_EXISTENT)
    assert t.replica_state(TP, 1) == R.NON_EXISTENT and t.ctx.assignments[TP] == (0,)
