"""Facts of Apache Kafka's ControllerChannelManagerTest, restated against the reference's request batch.

Kafka's ControllerBrokerRequestBatch collects one state-machine call's LeaderAndIsr, UpdateMetadata and
StopReplica requests and sends them per broker, only to live or shutting-down brokers, each carrying the
controller epoch. The reference keeps the same batch (`kcm.reference.requests`) but lists a LeaderAndIsr and a
StopReplica per partition, so "one request per broker" reads here as "every entry of the broker's request comes
out of one flush", and an UpdateMetadata (which lists partitions) as exactly one per broker and flush.

Not expressible here: request versions chosen by the inter-broker protocol version, topic ids, isNew, leader
recovery state, the live-broker list and leaders inside UpdateMetadata, the leader epoch inside StopReplica and
the response callbacks; the model's requests carry none of them.
"""

from __future__ import annotations

from collections import Counter

import pytest
from kcm.model.actions import BrokerBounce, BrokerFail, ControlledShutdown, ControllerResign, CreateTopic
from kcm.model.cluster import ClusterConfig, LeaderAndIsr
from kcm.model.effects import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from kcm.model.fmap import get
from kcm.model.txn import Txn
from kcm.reference import api, requests

CONFIG = ClusterConfig((1, 2, 3), rules="kafka", first_controller=1)
FOO0, FOO1, BAR0, BAR1 = ("foo", 0), ("foo", 1), ("bar", 0), ("bar", 1)


def round_robin(topic: str, first: int) -> tuple:
    """Two partitions of replication factor 3 over brokers 1, 2, 3, the leader moving on by one each time."""
    brokers = (1, 2, 3)
    return tuple((p, tuple(brokers[(first + p + i) % 3] for i in range(3))) for p in range(2))


def cluster(*prepare) -> object:
    """A running controller of controller epoch 2 with topics foo and bar, after the given actions."""
    state, _ = api.start(CONFIG)
    for a in (CreateTopic("foo", round_robin("foo", 0)), CreateTopic("bar", round_robin("bar", 2)),
              ControllerResign(1), *prepare):
        state, _ = api.step(CONFIG, state, a)
    return state


def batch_txn(*prepare, leadership=None) -> Txn:
    """A Txn on `cluster(*prepare)` whose controller context holds the given (leader, ISR) per partition."""
    t = Txn(CONFIG, cluster(*prepare))
    for tp, (leader, isr) in (leadership or {}).items():
        t.ctx.leadership[tp] = LeaderAndIsr(leader, 0, tuple(sorted(isr)), t.ctx.epoch, 0)
    return t


def of(t: Txn, kind: type, broker: int | None = None) -> list:
    """The requests of one kind that the Txn delivered (to one broker if given)."""
    return [r for r in t.requests if isinstance(r, kind) and (broker is None or r.broker == broker)]


def brokers_of(t: Txn, kind: type) -> set[int]:
    """The brokers that received at least one request of a kind."""
    return {r.broker for r in of(t, kind)}


LEADERSHIP = {FOO0: (1, (1, 2)), FOO1: (2, (2, 3)), BAR1: (3, (1, 3))}


def test_leader_and_isr_batch_for_one_broker():
    """testLeaderAndIsrRequestSent: three partitions for broker 2 go out in one flush, with one UpdateMetadata."""
    t = batch_txn(leadership=LEADERSHIP)
    for tp in LEADERSHIP:
        requests.add_leader_and_isr(t, (2,), tp, (1, 2, 3))
    requests.flush(t)
    lai = of(t, LeaderAndIsrRequest)
    assert brokers_of(t, LeaderAndIsrRequest) == {2}
    assert {r.tp: (r.leader, r.isr) for r in lai} == LEADERSHIP
    assert [r.tps for r in of(t, UpdateMetadataRequest, 2)] == [tuple(sorted(LEADERSHIP))]
    assert {r.controller_epoch for r in t.requests} == {2} == {t.ctx.epoch}


def test_leader_and_isr_for_one_partition_twice_is_one_entry():
    """testLeaderAndIsrRequestIsNew: adding the same partition twice gives it once in the broker's request."""
    t = batch_txn(leadership={FOO0: (1, (1, 2))})
    requests.add_leader_and_isr(t, (2,), FOO0, (1, 2, 3))
    requests.add_leader_and_isr(t, (2,), FOO0, (1, 2, 3))
    requests.flush(t)
    assert [r.tp for r in of(t, LeaderAndIsrRequest)] == [FOO0]
    assert len(of(t, UpdateMetadataRequest, 2)) == 1


def test_leader_and_isr_only_to_live_or_shutting_down_brokers():
    """testLeaderAndIsrRequestSentToLiveOrShuttingDownBrokers: broker 2 shutting down gets it, dead broker 3 not."""
    t = batch_txn(BrokerFail(3), ControlledShutdown(2), leadership={FOO0: (1, (1, 2))})
    requests.add_leader_and_isr(t, (1, 2, 3), FOO0, (1, 2, 3))
    requests.flush(t)
    assert brokers_of(t, LeaderAndIsrRequest) == {1, 2}
    assert [r.tp for r in of(t, LeaderAndIsrRequest)] == [FOO0, FOO0]
    assert Counter(r.broker for r in of(t, UpdateMetadataRequest)) == {1: 1, 2: 1}


def test_update_metadata_batch_for_one_broker():
    """testUpdateMetadataRequestSent: one UpdateMetadata to broker 2 listing the three partitions, with the epoch."""
    t = batch_txn(leadership=LEADERSHIP)
    requests.add_update_metadata(t, (2,), list(LEADERSHIP))
    requests.flush(t)
    sent = of(t, UpdateMetadataRequest)
    assert [(r.broker, set(r.tps), r.controller_epoch) for r in sent] == [(2, set(LEADERSHIP), 2)]


def test_update_metadata_leaves_out_partitions_without_leader_and_isr():
    """testUpdateMetadataDoesNotIncludePartitionsWithoutLeaderAndIsr."""
    t = batch_txn()
    for tp in (FOO0, FOO1, BAR1):
        t.ctx.leadership.pop(tp)
    requests.add_update_metadata(t, (2,), [FOO0, FOO1, BAR1])
    requests.flush(t)
    assert [(r.broker, r.tps) for r in of(t, UpdateMetadataRequest)] == [(2, ())]


def test_update_metadata_only_to_live_or_shutting_down_brokers():
    """testUpdateMetadataIncludesLiveOrShuttingDownBrokers: an empty UpdateMetadata reaches brokers 1 and 2 only."""
    t = batch_txn(BrokerFail(3), ControlledShutdown(2))
    requests.add_update_metadata(t, (1, 2, 3), ())
    requests.flush(t)
    assert sorted((r.broker, r.tps) for r in t.requests) == [(1, ()), (2, ())]


STOP = {FOO0: False, FOO1: False, BAR1: False}


def test_stop_replica_batch_for_one_broker():
    """testStopReplicaRequestSent: three partitions without delete, all for broker 2 and nothing else sent."""
    t = batch_txn()
    for tp, delete in STOP.items():
        requests.add_stop_replica(t, 2, tp, delete)
    requests.flush(t)
    sent = [(r.broker, r.tp, r.delete, r.controller_epoch) for r in t.requests]
    assert sorted(sent) == sorted((2, tp, d, 2) for tp, d in STOP.items())


def test_stop_replica_delete_is_kept_when_added_again_without():
    """testStopReplicaRequestWithAlreadyDefinedDeletedPartition."""
    t = batch_txn()
    requests.add_stop_replica(t, 2, FOO0, True)
    requests.add_stop_replica(t, 2, FOO0, False)
    requests.flush(t)
    assert [(r.broker, r.tp, r.delete) for r in t.requests] == [(2, FOO0, True)]


@pytest.mark.parametrize("delete", [True, False])
def test_stop_replica_while_topic_is_queued_for_deletion(delete):
    """testStopReplicaRequestsWhileTopicQueuedForDeletion / ...WhileTopicDeletionStarted / ...WithoutDeletePartition...

    With foo queued for deletion each partition keeps its own delete flag in the one batch to broker 2. (The
    reference keeps no separate "deletion started" mark, and its StopReplica has no leader epoch to replace.)
    """
    t = batch_txn()
    t.ctx.topics_to_delete.add("foo")
    for tp in (FOO0, FOO1, BAR1):
        requests.add_stop_replica(t, 2, tp, delete)
    requests.flush(t)
    sent = sorted((r.broker, r.tp, r.delete) for r in t.requests)
    assert sent == sorted((2, tp, delete) for tp in (FOO0, FOO1, BAR1))


def test_mixed_delete_and_not_delete_stop_replica():
    """testMixedDeleteAndNotDeleteStopReplicaRequests: one batch for broker 2 with both kinds of partitions."""
    t = batch_txn()
    mixed = {FOO0: True, FOO1: True, BAR0: False, BAR1: False}
    for tp, delete in mixed.items():
        requests.add_stop_replica(t, 2, tp, delete)
    requests.flush(t)
    assert {r.tp: r.delete for r in of(t, StopReplicaRequest, 2)} == mixed
    assert brokers_of(t, StopReplicaRequest) == {2}


def test_stop_replica_groups_by_broker():
    """testStopReplicaGroupsByBroker: brokers 2 and 3 each get the three partitions."""
    t = batch_txn()
    for tp in STOP:
        for broker in (2, 3):
            requests.add_stop_replica(t, broker, tp, False)
    requests.flush(t)
    for broker in (2, 3):
        assert {r.tp for r in of(t, StopReplicaRequest, broker)} == set(STOP)
    assert brokers_of(t, StopReplicaRequest) == {2, 3}


def test_stop_replica_only_to_live_or_shutting_down_brokers():
    """testStopReplicaSentOnlyToLiveAndShuttingDownBrokers: broker 2 (shutting down) gets them, dead broker 3 not."""
    t = batch_txn(BrokerFail(3), ControlledShutdown(2))
    for tp in STOP:
        for broker in (2, 3):
            requests.add_stop_replica(t, broker, tp, False)
    requests.flush(t)
    assert brokers_of(t, StopReplicaRequest) == {2}
    assert {r.tp for r in t.requests} == set(STOP)


# -- the same rules seen through whole controller operations -------------------------------------------


def test_one_update_metadata_per_broker_for_a_state_machine_call():
    """Creating two partitions at once: each broker gets both LeaderAndIsr entries and a single UpdateMetadata."""
    state = cluster()
    _, fx = api.step(CONFIG, state, CreateTopic("baz", ((0, (1, 2, 3)), (1, (2, 3, 1)))))
    lai = [r for r in fx.requests if isinstance(r, LeaderAndIsrRequest)]
    assert Counter(r.broker for r in lai) == {1: 2, 2: 2, 3: 2}
    um = [r for r in fx.requests if isinstance(r, UpdateMetadataRequest) and set(r.tps) == {("baz", 0), ("baz", 1)}]
    assert Counter(r.broker for r in um) == {1: 1, 2: 1, 3: 1}
    assert {r.controller_epoch for r in fx.requests} == {2}


def test_an_operation_sends_nothing_to_a_dead_broker():
    """A replica on a dead broker: the controller's requests of the creation reach the live brokers only."""
    state = cluster(BrokerFail(3))
    _, fx = api.step(CONFIG, state, CreateTopic("baz", ((0, (3, 1, 2)),)))
    assert {r.broker for r in fx.requests} == {1, 2}


def test_a_bounced_broker_learns_its_partition_again():
    """ControllerIntegrationTest.testControllerDetectsBouncedBrokers: after a fast restart broker 2 follows again.

    Right after the restart broker 2 hosts its replica without a leader (it lost its in-memory state); the
    controller's LeaderAndIsr to the new incarnation makes it follow the partition's leader.
    """
    state = cluster()
    leader = get(state.zk.partitions, FOO0).leader
    assert leader != 2
    after, fx = api.step(CONFIG, state, BrokerBounce(2))
    assert any(isinstance(r, LeaderAndIsrRequest) and r.broker == 2 and r.tp == FOO0 for r in fx.requests)
    assert get(after.replicas, ("foo", 0, 2)).leader == get(after.zk.partitions, FOO0).leader
    assert get(after.brokers, 2).incarnation == get(state.brokers, 2).incarnation + 1
