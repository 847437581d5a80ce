"""Every refusal the controller gives, by its contract name, with the state left exactly as it was; fencing."""

from __future__ import annotations

import pytest
from kcm.model.actions import (
    AddPartitions,
    BrokerFail,
    BrokerStart,
    ControlledShutdown,
    ControllerResign,
    CreateTopic,
    DeleteTopic,
    PartitionTransition,
    Reassign,
    ReplicaTransition,
)
from kcm.model.cluster import ClusterConfig
from kcm.model.effects import LeaderAndIsrRequest, UpdateMetadataRequest
from kcm.model.errors import KcmError
from kcm.model.fingerprint import fingerprint
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn
from kcm.reference import api, requests

CONFIG = ClusterConfig((0, 1, 2, 3), first_controller=3)
T0 = ("t", 0)


def base():
    """t-0 on brokers 0, 1, 2 (leader 0) with broker 2 dead; controller 3."""
    state, _ = api.start(CONFIG)
    for a in (CreateTopic("t", ((0, (0, 1, 2)),)), BrokerFail(2)):
        state, _ = api.step(CONFIG, state, a)
    return state


REFUSED = [
    (DeleteTopic("nope"), "UnknownTopicOrPartition"),
    (Reassign(("t", 5), (0, 1)), "UnknownTopicOrPartition"),
    (AddPartitions("nope", ((0, (0,)),)), "UnknownTopicOrPartition"),
    (PartitionTransition((("nope", 0),), P.OFFLINE), "UnknownTopicOrPartition"),
    (CreateTopic("u", (), 1, 4), "InvalidReplicaAssignment"),  # RF 4 > 3 live brokers
    (CreateTopic("u", ((0, (0, 9)),)), "InvalidReplicaAssignment"),  # broker 9 not registered
    (CreateTopic("u", ((0, (0, 0)),)), "InvalidReplicaAssignment"),
    (CreateTopic("u", ((1, (0,)),)), "InvalidReplicaAssignment"),  # partitions must start at 0
    (Reassign(T0, (0, 7)), "InvalidReplicaAssignment"),
    (AddPartitions("t", ((0, (0,)),)), "InvalidReplicaAssignment"),  # partition 0 exists
    (BrokerFail(2), "BrokerNotAvailable"),
    (BrokerStart(0), "BrokerNotAvailable"),
    (ControlledShutdown(2), "BrokerNotAvailable"),
    (ControllerResign(2), "BrokerNotAvailable"),
    (PartitionTransition((T0,), P.NEW), "IllegalStateTransition"),
    (ReplicaTransition(((T0, 0),), R.NON_EXISTENT), "IllegalStateTransition"),
    # The table alone judges a direct call (Kafka's validPreviousStates): OfflineReplica -> ReplicaDeletionSuccessful
    # is refused, while OfflineReplica -> ReplicaDeletionStarted is allowed though t is not being deleted.
    (ReplicaTransition(((T0, 2),), R.DELETION_SUCCESSFUL), "IllegalStateTransition"),
]


@pytest.mark.parametrize("action,error", REFUSED, ids=[f"{e}-{i}" for i, (_, e) in enumerate(REFUSED)])
def test_refused_steps_name_their_error_and_change_nothing(action, error):
    state = base()
    fp = fingerprint(state)
    with pytest.raises(KcmError) as info:
        api.step(CONFIG, state, action)
    assert info.value.name == error
    assert fingerprint(state) == fp


def test_add_partitions_is_refused_while_a_partition_is_reassigned():
    state, _ = api.step(CONFIG, base(), Reassign(T0, (0, 1, 3)))
    with pytest.raises(KcmError) as info:
        api.step(CONFIG, state, AddPartitions("t", ((1, (0, 1)),)))
    assert info.value.name == "ReassignmentInProgress"


def test_no_leader_available_only_from_a_direct_transition():
    state = base()
    for a in (BrokerFail(0), BrokerFail(1)):
        state, _ = api.step(CONFIG, state, a)
    assert get(state.ctx.partition_states, T0) == P.OFFLINE
    state, _ = api.step(CONFIG, state, BrokerStart(2))  # a controller op: no leader, goes on (rule 3)
    assert get(state.zk.partitions, T0).leader == -1
    fp = fingerprint(state)
    with pytest.raises(KcmError) as info:
        api.step(CONFIG, state, PartitionTransition((T0,), P.ONLINE, "offline"))
    assert info.value.name == "NoLeaderAvailable" and fingerprint(state) == fp


def test_a_direct_transition_is_all_or_nothing():
    state, _ = api.step(CONFIG, base(), CreateTopic("u", ((0, (0, 1)),)))
    with pytest.raises(KcmError) as info:  # u-0 may go Offline, t-0 (Online) may not go New: neither moves
        api.step(CONFIG, state, PartitionTransition((("u", 0), T0), P.NEW))
    assert info.value.name == "IllegalStateTransition"
    after, _ = api.step(CONFIG, state, PartitionTransition((("u", 0), T0), P.OFFLINE))
    assert get(after.ctx.partition_states, ("u", 0)) == get(after.ctx.partition_states, T0) == P.OFFLINE


def test_a_zombie_controller_is_fenced_by_the_controller_epoch_zk_version():
    state = base()
    zombie = state._replace(ctx=state.ctx._replace(epoch_zk_version=state.ctx.epoch_zk_version - 1))
    with pytest.raises(KcmError) as info:
        api.step(CONFIG, zombie, CreateTopic("u", ((0, (0, 1)),)))
    assert info.value.name == "StaleControllerEpoch"
    variant = CONFIG._replace(variants=("KAFKA-6082",))  # the fix reverted: the zombie writes
    after, _ = api.step(variant, zombie, CreateTopic("u", ((0, (0, 1)),)))
    assert get(after.zk.partitions, ("u", 0)).leader == 0


def test_brokers_refuse_requests_of_an_older_controller_epoch():
    state, _ = api.step(CONFIG, base(), ControllerResign(0))
    assert get(state.brokers, 1).controller_epoch == 2
    lai = get(state.zk.partitions, T0)
    t = Txn(CONFIG, state)
    stale = LeaderAndIsrRequest(1, T0, 1, lai.leader_epoch + 5, (1,), (0, 1, 2), 1, lai.zk_version)
    assert not requests.deliver(t, stale)
    assert not requests.deliver(t, UpdateMetadataRequest(1, (T0,), 1))
    after, effects = t.commit()
    assert get(after.replicas, ("t", 0, 1)) == get(state.replicas, ("t", 0, 1))
    assert any("StaleControllerEpoch" in n for n in effects.notes)
    t = Txn(CONFIG, state)  # the same request with the current epoch is applied
    assert requests.deliver(t, stale._replace(controller_epoch=2))
    assert t.replicas[("t", 0, 1)].leader == 1


def test_requests_to_dead_brokers_are_dropped_from_the_trace():
    _, effects = api.step(CONFIG, base(), CreateTopic("u", ((0, (1, 2)),)))
    assert effects.requests and all(r.broker != 2 for r in effects.requests)  # rule 6
