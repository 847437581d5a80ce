"""Each controller property holds on a sound state and fails on a state or step that breaks its rule."""

from __future__ import annotations

from types import SimpleNamespace

from kcm.model.actions import Reassign
from kcm.model.cluster import ClusterConfig, LeaderAndIsr, Reassignment, initial_cluster
from kcm.model.effects import Effects, LeaderAndIsrRequest, StateChange
from kcm.model.txn import Txn
from kcm.properties import controller as pc

CONFIG = ClusterConfig((0, 1, 2, 3))
MODEL = SimpleNamespace(config=CONFIG)
TP = ("t", 0)


def _state(leader=0, epoch=0, isr=(0, 1, 2), ar=(0, 1, 2), elected=None, reassign=None):
    t = Txn(CONFIG, initial_cluster(CONFIG))
    t.zk.assignments[TP] = ar
    t.zk.partitions[TP] = LeaderAndIsr(leader, epoch, isr, 1, 0)
    t.ghost.elected[("t", 0, epoch)] = leader if elected is None else elected
    t.zk.controller_epoch = 1
    if reassign is not None:
        t.ctx.reassignments[TP] = reassign
    return t.commit()[0]


def test_leader_in_isr_in_ar():
    assert pc.leader_in_isr_in_ar(MODEL, _state())
    assert pc.leader_in_isr_in_ar(MODEL, _state(leader=-1, isr=(1,)))
    assert not pc.leader_in_isr_in_ar(MODEL, _state(leader=3, isr=(0, 1)))
    assert not pc.leader_in_isr_in_ar(MODEL, _state(isr=(0, 1, 3)))
    # A leaderless partition's last ISR member may have left AR (a replaced reassignment dropped it); no other.
    assert pc.leader_in_isr_in_ar(MODEL, _state(leader=-1, isr=(3,)))
    assert not pc.leader_in_isr_in_ar(MODEL, _state(leader=-1, isr=(1, 3)))
    assert not pc.leader_in_isr_in_ar(MODEL, _state(leader=3, isr=(3,)))


def test_elected_leader_recorded():
    assert pc.elected_leader_recorded(MODEL, _state())
    assert not pc.elected_leader_recorded(MODEL, _state(elected=1))


def test_one_leader_per_epoch_refuses_a_second_leader_in_the_same_epoch():
    before = _state(leader=0, epoch=1)
    same_epoch_new_leader = _state(leader=1, epoch=1)
    assert not pc.one_leader_per_epoch(MODEL, before, None, same_epoch_new_leader, Effects())
    merged = before.ghost.elected + ((("t", 0, 2), 1),)
    assert pc.one_leader_per_epoch(MODEL, before, None, _state(leader=1, epoch=2)._replace(
        ghost=before.ghost._replace(elected=merged)), Effects())


def test_leader_epochs_never_go_back():
    assert pc.leader_epoch_monotone(MODEL, _state(epoch=1), None, _state(epoch=2), Effects())
    assert not pc.leader_epoch_monotone(MODEL, _state(epoch=2), None, _state(epoch=1), Effects())


def test_controller_epoch_monotone_and_fencing():
    a = _state()
    b = a._replace(zk=a.zk._replace(controller_epoch=0))
    assert pc.controller_epoch_monotone(MODEL, a, None, a, Effects())
    assert not pc.controller_epoch_monotone(MODEL, a, None, b, Effects())
    fenced = a._replace(brokers=tuple((i, s._replace(controller_epoch=2)) for i, s in a.brokers))
    assert not pc.no_broker_ahead_of_zk(MODEL, fenced)
    assert pc.no_broker_ahead_of_zk(MODEL, a)


def test_zk_writes_fenced_refuses_a_new_leader_written_in_an_old_leader_epoch():
    before = _state(leader=0, epoch=1, isr=(0, 1))
    shrink = _state(leader=0, epoch=1, isr=(0,))  # a leader's own ISR update: same leader, same leader epoch
    assert pc.zk_epoch_fencing(MODEL, before, None, shrink, Effects())
    assert pc.zk_epoch_fencing(MODEL, before, None, _state(leader=1, epoch=2), Effects())
    # A zombie's election that no zkVersion check stopped: leader 1 in leader epoch 1, which leader 0 had.
    assert not pc.zk_epoch_fencing(MODEL, before, None, _state(leader=1, epoch=1, isr=(0, 1)), Effects())


def test_epoch_fencing_catches_a_broker_applying_a_stale_request():
    from kcm.model.cluster import ReplicaData
    t = Txn(CONFIG, _state())
    t.brokers[1] = t.brokers[1]._replace(controller_epoch=2)
    t.replicas[("t", 0, 1)] = ReplicaData((), 0, 0, 0, (0, 1, 2), 0, (0, 1, 2))
    before = t.commit()[0]
    t2 = Txn(CONFIG, before)
    t2.replicas[("t", 0, 1)] = ReplicaData((), 0, 1, 1, (0, 1, 2), 0, (0, 1, 2))
    after = t2.commit()[0]
    stale = Effects((LeaderAndIsrRequest(1, TP, 1, 1, (0, 1, 2), (0, 1, 2), 1, 1),))
    fresh = Effects((LeaderAndIsrRequest(1, TP, 1, 1, (0, 1, 2), (0, 1, 2), 2, 1),))
    assert not pc.epoch_fencing(MODEL, before, None, after, stale)
    assert pc.epoch_fencing(MODEL, before, None, after, fresh)
    assert pc.epoch_fencing(MODEL, before, None, before, stale)


def test_ar_shrinks_only_as_the_last_step_of_a_reassignment():
    r = Reassignment((0, 1, 2), (1, 2, 3))
    during = _state(ar=r.replicas, isr=(0, 1, 2, 3), reassign=r)
    done = _state(ar=(1, 2, 3), isr=(1, 2, 3))
    early = _state(ar=(1, 2, 3), isr=(1, 2, 3), reassign=r)
    not_in_isr = _state(ar=(1, 2, 3), isr=(1, 2))
    plain = _state()
    assert pc.reassignment_ar_is_union(MODEL, during)
    assert not pc.reassignment_ar_is_union(MODEL, early)
    assert pc.ar_shrinks_last(MODEL, during, None, done, Effects())
    assert not pc.ar_shrinks_last(MODEL, during, None, early, Effects())
    assert not pc.ar_shrinks_last(MODEL, during, None, not_in_isr, Effects())
    assert not pc.ar_shrinks_last(MODEL, plain, None, _state(ar=(0, 1), isr=(0, 1)), Effects())


def test_a_replica_only_in_an_abandoned_target_leaves_when_the_reassignment_is_replaced():
    """Rule 9: [0, 1] -> [1, 2] replaced by -> [1, 3] drops 2 at once; no original replica may leave that way."""
    first, second = Reassignment((0, 1), (1, 2)), Reassignment((0, 1), (1, 3))
    during = _state(ar=first.replicas, isr=(0, 1), reassign=first)
    replaced = _state(ar=second.replicas, isr=(0, 1), reassign=second)
    replace = Reassign(TP, (1, 3))
    assert pc.ar_shrinks_last(MODEL, during, replace, replaced, Effects())
    # 2 leaving while [1, 2] is still the target in force, or an original replica (0) leaving early, are not allowed.
    assert not pc.ar_shrinks_last(MODEL, during, None, _state(ar=(1, 0), isr=(0, 1), reassign=first), Effects())
    dropped_original = _state(ar=(1, 3), isr=(0, 1), reassign=second)
    assert not pc.ar_shrinks_last(MODEL, during, replace, dropped_original, Effects())


def test_moves_follow_the_table_of_the_active_rules():
    ok = Effects(state_changes=(StateChange("partition", "t-0", "NewPartition", "OnlinePartition"),))
    bad = Effects(state_changes=(StateChange("partition", "t-0", "OnlinePartition", "NewPartition"),))
    kafka_only = Effects(state_changes=(StateChange("replica", "t-0@1", "OfflineReplica",
                                                    "ReplicaDeletionIneligible"),))
    s = _state()
    assert pc.valid_transition(MODEL, s, None, s, ok)
    assert not pc.valid_transition(MODEL, s, None, s, bad)
    assert not pc.valid_transition(MODEL, s, None, s, kafka_only)
    kafka = SimpleNamespace(config=CONFIG._replace(rules="kafka"))
    assert pc.valid_transition(kafka, s, None, s, kafka_only)


def test_deletion_states_only_for_topics_being_deleted():
    t = Txn(CONFIG, _state())
    t.ctx.controller_id = 0
    t.ctx.replica_states[("t", 0, 1)] = "ReplicaDeletionStarted"
    s = t.commit()[0]
    assert not pc.deletion_states_only_while_deleting(MODEL, s)
    t.ctx.topics_to_delete.add("t")
    assert pc.deletion_states_only_while_deleting(MODEL, t.commit()[0])
    t.ctx.topics_to_delete.clear()
    t.zk.assignments.clear()
    assert not pc.deleted_topics_leave_nothing(MODEL, t.commit()[0])


def _run(config: ClusterConfig, actions: list) -> object:
    from kcm.reference import api

    state, _ = api.start(config)
    for action in actions:
        state, _ = api.step(config, state, action)
    return state


def test_replicas_follow_zk_catches_a_live_replica_that_missed_the_new_epoch():
    from kcm.model.actions import BrokerFail, CreateTopic

    config = ClusterConfig((0, 1, 2), rules="kafka")
    failed = _run(config, [CreateTopic("u", ((0, (0, 1)),), 0, 0), BrokerFail(0)])
    lagging = failed._replace(replicas=tuple((k, d._replace(leader_epoch=0) if k == ("u", 0, 1) else d)
                                             for k, d in failed.replicas))
    assert pc.replicas_follow_zk(MODEL, failed) and pc.liveness_view(MODEL, failed)
    assert not pc.replicas_follow_zk(MODEL, lagging) and not pc.liveness_view(MODEL, lagging)


def test_direct_calls_no_controller_operation_makes_are_left_out_of_the_reference_machines():
    from kcm.checkers.gate.hypothesis_machine import outside_controller_paths as outside
    from kcm.model.actions import BrokerFail, CreateTopic, DeleteTopic, PartitionTransition, ReplicaTransition

    config = ClusterConfig((0, 1, 2))
    # A live replica stopped by a direct OfflineReplica call keeps its leader epoch, so the next controller's
    # LeaderAndIsr in that same epoch is ignored (as in Kafka) and the replica no longer follows ZooKeeper.
    stop = ReplicaTransition(((("u", 0), 1), (("u", 0), 0)), "OfflineReplica")
    created = _run(config, [CreateTopic("u", ((0, (2, 0, 1)),), 0, 0)])
    assert outside(created, stop)
    assert not pc.replicas_follow_zk(MODEL, _run(config, [CreateTopic("u", ((0, (2, 0, 1)),), 0, 0), stop,
                                                          BrokerFail(0)]))
    assert not outside(created, ReplicaTransition(((("u", 0), 1),), "OnlineReplica"))
    assert not outside(_run(config, [CreateTopic("u", ((0, (2, 0, 1)),), 0, 0), BrokerFail(1)]),
                       ReplicaTransition(((("u", 0), 1),), "OfflineReplica"))  # a dead broker's replica
    deleting = _run(config, [CreateTopic("t", ((0, (0, 2)),), 0, 0), BrokerFail(2), DeleteTopic("t")])
    assert outside(deleting, PartitionTransition((("t", 0),), "OnlinePartition"))
    assert outside(deleting, ReplicaTransition(((("t", 0), 2),), "OnlineReplica"))
    assert not outside(deleting, PartitionTransition((("u", 0),), "OnlinePartition"))
    assert not outside(deleting, BrokerFail(0))
    # A deletion state for a topic not queued for deletion (a dead broker's replica, so only that rule applies): the
    # table allows it, and the replica would rest there outside DeletionStatesOnlyWhileDeleting's scope.
    dead = _run(config, [CreateTopic("u", ((0, (2, 0, 1)),), 0, 0), BrokerFail(1)])
    into_deletion = ReplicaTransition(((("u", 0), 1),), "ReplicaDeletionStarted")
    assert outside(dead, into_deletion)
    assert not pc.deletion_states_only_while_deleting(MODEL, _run(config, [CreateTopic("u", ((0, (2, 0, 1)),), 0, 0),
                                                                           BrokerFail(1), into_deletion]))
