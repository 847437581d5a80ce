"""Facts of Apache Kafka's DeleteTopicTest and TopicDeletionManagerTest below the scenario contract.

The scenario files `specs/scenarios/kafka/dtt-*.json` and `tdm-*.json` assert what the result document shows.
Here the same runs are checked the way Kafka's `verifyTopicDeletion` checks a cluster: nothing of the topic is
left in ZooKeeper (/brokers/topics, partition state, /admin/delete_topics, reassignments), in the controller's
context, or as a replica log on any broker. Plus what needs a hand-made ZooKeeper tree: a partially deleted
topic, and the deletion manager's initialization at failover.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kcm.checkers.core.scenario import cluster_config, parse_text
from kcm.model.actions import BrokerFail, BrokerStart, ControllerResign, CreateTopic, DeleteTopic, from_step
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import KcmError, UnknownTopicOrPartition
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.reference import api

KAFKA_SCENARIOS = Path(__file__).resolve().parent.parent / "specs" / "scenarios" / "kafka"


def leftovers(state, topic: str) -> list[str]:
    """Everything of the topic still in ZooKeeper, the controller's context or a broker's logs (empty: deleted)."""
    zk, ctx = state.zk, state.ctx
    found = []
    for where, keys in (("zk.assignments", zk.assignments), ("zk.partitions", zk.partitions),
                        ("zk.reassign_partitions", zk.reassign_partitions), ("ctx.assignments", ctx.assignments),
                        ("ctx.leadership", ctx.leadership), ("ctx.partition_states", ctx.partition_states),
                        ("ctx.replica_states", ctx.replica_states), ("ctx.reassignments", ctx.reassignments),
                        ("broker logs", state.replicas)):
        found += [f"{where}: {key}" for key, _ in keys if key[0] == topic]
    for where, names in (("zk.delete_topics", zk.delete_topics), ("ctx.topics_to_delete", ctx.topics_to_delete),
                         ("ctx.topics_ineligible", ctx.topics_ineligible)):
        found += [where] if topic in names else []
    return found


def replay(name: str, steps: int):
    """The config and state after the first `steps` steps of a library scenario (refused steps as it expects)."""
    doc = parse_text((KAFKA_SCENARIOS / name).read_bytes())
    config = cluster_config(doc)
    state, _ = api.start(config)
    for step in doc["steps"][:steps]:
        try:
            state, _ = api.step(config, state, from_step(step))
        except KcmError as err:
            assert err.name == step.get("expect_error"), f"{name}: {step} refused with {err.name}: {err.message}"
        else:
            assert "expect_error" not in step, f"{name}: {step} was accepted"
    return config, state


@pytest.mark.parametrize("name,steps", [
    ("dtt-all-alive-replicas.json", 4),  # testDeleteTopicWithAllAliveReplicas
    ("dtt-resume-recovered-follower.json", 6),  # testResumeDeleteTopicWithRecoveredFollower
    ("dtt-resume-on-controller-failover.json", 9),  # testResumeDeleteTopicOnControllerFailover
    ("dtt-reassignment-during-delete.json", 7),  # testPartitionReassignmentDuringDeleteTopic
    ("dtt-increase-partitions-during-delete.json", 9),  # testIncreasePartitionCountDuringDeleteTopic
    ("dtt-delete-during-add-partitions.json", 7),  # testDeleteTopicDuringAddPartition
    ("dtt-add-partitions-after-delete.json", 4),  # testAddPartitionDuringDeleteTopic
    ("dtt-delete-already-deleted.json", 4),  # testDeleteTopicAlreadyMarkedAsDeleted
    ("tdm-basic.json", 4),  # TopicDeletionManagerTest.testBasicDeletion (foo; bar alike)
    ("tdm-offline-resume.json", 4),  # TopicDeletionManagerTest.testDeletionWithBrokerOffline
])
def test_the_topic_is_gone_everywhere(name, steps):
    """verifyTopicDeletion: no ZooKeeper path, context entry or replica log of the topic is left."""
    topic = json.loads((KAFKA_SCENARIOS / name).read_text())["steps"][0]["topic"]
    _, state = replay(name, steps)
    assert leftovers(state, topic) == []


@pytest.mark.parametrize("name,steps,halted_on", [
    ("dtt-resume-recovered-follower-halted.json", 5, {2}),
    # 2 deleted its log before it failed; 0 deleted its log too, but the new controller's replica state machine
    # startup sends every live replica LeaderAndIsr (Kafka's ZkReplicaStateMachine.startup), which re-creates it
    # until the ineligible topic's deletion resumes.
    ("dtt-resume-on-controller-failover.json", 6, {0, 1}),
])
def test_a_halted_deletion_keeps_the_topic_marked(name, steps, halted_on):
    """testResumeDeleteTopicWithRecoveredFollower / ...OnControllerFailover: while a replica's broker is down the
    topic stays in /admin/delete_topics and ineligible; the down replicas keep their logs."""
    _, state = replay(name, steps)
    assert "test" in state.zk.delete_topics
    assert "test" in state.ctx.topics_to_delete and "test" in state.ctx.topics_ineligible
    assert {key[2] for key, _ in state.replicas if key[0] == "test"} == halted_on


def test_deleting_a_partially_deleted_topic():
    """testDeletingPartiallyDeletedTopic: with every broker down, test-0's state znode is removed by hand and the
    topic is marked for deletion; when the brokers return the new controller finishes the deletion."""
    config = ClusterConfig((0, 1, 2, 3), rules="kafka")
    state, _ = api.start(config)
    state, _ = api.step(config, state, CreateTopic("test", ((0, (0, 1, 2)), (1, (0, 1, 2)))))
    for b in (0, 1, 2, 3):
        state, _ = api.step(config, state, BrokerFail(b))
    zk = state.zk
    zk = zk._replace(partitions=tuple(kv for kv in zk.partitions if kv[0] != ("test", 0)), delete_topics=("test",))
    state = state._replace(zk=zk)
    for b in (0, 1, 2, 3):
        state, _ = api.step(config, state, BrokerStart(b))
    assert state.zk.controller >= 0
    assert leftovers(state, "test") == []


def test_deletion_manager_initialization():
    """TopicDeletionManagerTest.testInitialization: at failover the topics marked for deletion are queued, and of
    them those with a replica on a dead broker are ineligible; a topic with a dead replica that nobody deletes is
    not ineligible."""
    config = ClusterConfig((1, 2, 3, 4), rules="kafka", first_controller=1)
    state, _ = api.start(config)
    for a in (CreateTopic("foo", ((0, (1, 2, 3)), (1, (2, 3, 1)))),
              CreateTopic("bar", ((0, (2, 3, 4)), (1, (3, 4, 2)))),
              CreateTopic("baz", ((0, (4, 2, 3)), (1, (2, 3, 4)))), BrokerFail(4)):
        state, _ = api.step(config, state, a)
    state = state._replace(zk=state.zk._replace(delete_topics=("bar", "foo")))
    state, _ = api.step(config, state, ControllerResign(2))
    assert state.ctx.controller_id == 2
    assert set(state.ctx.topics_to_delete) == {"bar"}  # foo, all live, is already deleted (contract rule 5)
    assert set(state.ctx.topics_ineligible) == {"bar"}
    assert leftovers(state, "foo") == []
    assert get(state.ctx.partition_states, ("baz", 0)) == P.ONLINE


def halted() -> tuple:
    """Config and state of tdm-offline.json: topic foo queued for deletion, waiting for broker 2."""
    return replay("tdm-offline.json", 3)


def test_deleting_a_topic_already_marked_for_deletion():
    """testDeleteTopicAlreadyMarkedAsDeleted, with the first deletion still waiting for a broker."""
    config, state = halted()
    with pytest.raises(UnknownTopicOrPartition):
        api.step(config, state, DeleteTopic("foo"))


def test_partitions_are_nonexistent_once_deletion_starts():
    """TopicDeletionManagerTest.testDeletionWithBrokerOffline (and testBasicDeletion): right after the topic is
    queued its partitions are NonExistentPartition (OfflinePartition first, before any replica moves), while the
    replica on the dead broker went ReplicaDeletionIneligible and then, the live ones answered, OfflineReplica."""
    config, before = replay("tdm-offline.json", 2)
    state, effects = api.step(config, before, DeleteTopic("foo"))
    changes = [(c.machine, c.from_state, c.to_state) for c in effects.state_changes]
    assert changes[:4] == [("partition", P.ONLINE, P.OFFLINE)] * 2 + [("partition", P.OFFLINE, P.NON_EXISTENT)] * 2
    assert ("replica", "OfflineReplica", "ReplicaDeletionIneligible") in changes
    assert changes[-1] == ("replica", "ReplicaDeletionIneligible", "OfflineReplica")
    assert get(state.ctx.replica_states, ("foo", 0, 2)) == "OfflineReplica"
    assert get(state.ctx.partition_states, ("foo", 0), P.NON_EXISTENT) == P.NON_EXISTENT
