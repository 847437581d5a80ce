"""The reference controller driven through api.start / api.step: the seeds' operations step by step."""

from __future__ import annotations

from kcm.model.actions import (
    BrokerFail,
    BrokerStart,
    ControlledShutdown,
    ControllerResign,
    CreateTopic,
    DeleteTopic,
    PreferredElection,
    Reassign,
)
from kcm.model.cluster import ClusterConfig, Reassignment
from kcm.model.effects import LeaderAndIsrRequest, StopReplicaRequest
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn
from kcm.reference import api, reassignment, requests

T0 = ("t", 0)


def run(config, *acts, state=None):
    """Start (or continue from state) and apply the actions; the final state and the last step's effects."""
    effects = None
    if state is None:
        state, effects = api.start(config)
    for a in acts:
        state, effects = api.step(config, state, a)
    return state, effects


def znode(state, tp=T0):
    """The partition state znode."""
    return get(state.zk.partitions, tp)


def leader_expands_isr(config, state, tp, brokers):
    """What the data plane does when followers catch up: the leader's ISR write, then the controller's hook."""
    t = Txn(config, state)
    cur = t.zk.partitions[tp]
    t.zk.partitions[tp] = cur._replace(isr=tuple(sorted(set(cur.isr) | set(brokers))), zk_version=cur.zk_version + 1)
    reassignment.on_isr_change(t, tp)
    requests.flush(t)
    return t.commit()


def test_first_controller_election():
    state, _ = api.start(ClusterConfig((2, 0, 1)))
    assert (state.zk.controller, state.zk.controller_epoch, state.ctx.epoch) == (0, 1, 1)
    assert state.ghost.max_controller_epoch == 1
    state, _ = api.start(ClusterConfig((0, 1, 2), first_controller=2))
    assert state.zk.controller == 2 and state.ctx.controller_id == 2


def test_create_topic_places_replicas_as_seed_004_says():
    config = ClusterConfig((0, 1, 2))
    state, effects = run(config, CreateTopic("t", (), 3, 2))
    assert dict(state.zk.assignments) == {("t", 0): (0, 1), ("t", 1): (1, 2), ("t", 2): (2, 0)}
    lai = znode(state, ("t", 2))
    assert (lai.leader, lai.leader_epoch, lai.isr, lai.zk_version) == (2, 0, (0, 2), 0)
    assert all(s == P.ONLINE for _, s in state.ctx.partition_states)
    assert all(s == R.ONLINE for _, s in state.ctx.replica_states)
    assert {(r.broker, r.tp) for r in effects.requests if isinstance(r, LeaderAndIsrRequest)} == {
        (0, ("t", 0)), (1, ("t", 0)), (1, ("t", 1)), (2, ("t", 1)), (2, ("t", 2)), (0, ("t", 2))}


def test_seeds_reassignment_example_step_by_step():
    config = ClusterConfig((1, 2, 3, 4, 5, 6))
    state, _ = run(config, CreateTopic("t", ((0, (1, 2, 3)),)))
    assert (get(state.zk.assignments, T0), znode(state).leader, znode(state).isr) == ((1, 2, 3), 1, (1, 2, 3))
    state, effects = run(config, Reassign(T0, (4, 5, 6)), state=state)
    # Steps 1-3: AR = RAR + OAR (rule 8), leader and ISR kept, leader epoch bumped (rule 11), RAR - OAR new.
    assert get(state.zk.assignments, T0) == (4, 5, 6, 1, 2, 3)
    lai = znode(state)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (1, 2, 3), 1)
    assert {b for _, _, b in (k for k, s in state.ctx.replica_states if s == R.NEW)} == {4, 5, 6}
    sent = [r for r in effects.requests if isinstance(r, LeaderAndIsrRequest) and r.leader_epoch == 1]
    assert {r.broker for r in sent} == {1, 2, 3, 4, 5, 6} and all(r.replicas == (4, 5, 6, 1, 2, 3) for r in sent)
    got = get(state.ctx.reassignments, T0)
    assert (got.adding, got.removing) == ((4, 5, 6), (1, 2, 3))
    # Step 4: RAR joins the ISR (the leader's write); the hook completes the reassignment (steps 5-12).
    state, effects = leader_expands_isr(config, state, T0, (4, 5, 6))
    lai = znode(state)
    assert get(state.zk.assignments, T0) == (4, 5, 6)
    assert (lai.leader, lai.isr) == (4, (4, 5, 6))
    # One election into RAR (epoch 2), then one bump per OAR replica taken out of the ISR (rule 11).
    assert lai.leader_epoch == 5
    assert get(state.ghost.elected, ("t", 0, 2)) == 4
    assert get(state.ctx.reassignments, T0) is None and state.zk.reassign_partitions == ()
    assert all(k[2] in (4, 5, 6) and s == R.ONLINE for k, s in state.ctx.replica_states)
    assert {(r.broker, r.delete) for r in effects.requests if isinstance(r, StopReplicaRequest) and r.delete} == {
        (1, True), (2, True), (3, True)}
    assert all(k[2] in (4, 5, 6) for k, _ in state.replicas)


def test_controller_failover_resumes_a_reassignment():
    config = ClusterConfig((1, 2, 3, 4))
    state, _ = run(config, CreateTopic("t", ((0, (1, 2)),)), Reassign(T0, (3, 4)))
    assert znode(state).leader_epoch == 1
    state, _ = run(config, ControllerResign(2), state=state)
    assert (state.zk.controller, state.zk.controller_epoch) == (2, 2)
    # Resumed: the AR = OAR + RAR round again, with the next leader epoch (rule 11).
    assert get(state.zk.assignments, T0) == (3, 4, 1, 2)
    resumed = get(state.ctx.reassignments, T0)
    assert (resumed.original, resumed.target) == ((1, 2), (3, 4))
    assert (znode(state).leader_epoch, znode(state).controller_epoch) == (2, 2)
    state, _ = leader_expands_isr(config, state, T0, (3, 4))
    assert get(state.zk.assignments, T0) == (3, 4) and znode(state).leader == 3


def test_reassignment_resumes_when_a_target_broker_starts():
    config = ClusterConfig((0, 1, 2, 3), first_controller=3)
    state, _ = run(config, CreateTopic("t", ((0, (0, 1)),)), BrokerFail(2), Reassign(T0, (1, 2)))
    assert znode(state).leader_epoch == 1
    state, _ = run(config, BrokerStart(2), state=state)
    assert znode(state).leader_epoch == 2 and get(state.ctx.replica_states, ("t", 0, 2)) == R.ONLINE


def test_broker_failures_move_leaders_and_keep_the_last_isr_member():
    config = ClusterConfig((0, 1, 2, 3), first_controller=3)
    state, _ = run(config, CreateTopic("t", ((0, (0, 1, 2)),)), BrokerFail(0))
    lai = znode(state)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (1, 2), 1)
    assert get(state.ctx.replica_states, ("t", 0, 0)) == R.OFFLINE
    state, _ = run(config, BrokerFail(1), state=state)
    assert (znode(state).leader, znode(state).isr, znode(state).leader_epoch) == (2, (2,), 2)
    state, _ = run(config, BrokerFail(2), state=state)
    lai = znode(state)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (-1, (2,), 3)  # rule 12
    assert get(state.ctx.partition_states, T0) == P.OFFLINE
    state, _ = run(config, BrokerStart(0), state=state)  # not in the ISR: no clean leader
    assert znode(state).leader == -1 and get(state.ctx.partition_states, T0) == P.OFFLINE
    state, _ = run(config, BrokerStart(2), state=state)
    lai = znode(state)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2,), 4)
    assert get(state.ctx.partition_states, T0) == P.ONLINE


def test_unclean_election_takes_a_live_replica_outside_the_isr():
    config = ClusterConfig((0, 1, 2, 3), first_controller=3, unclean_leader_election=True)
    state, _ = run(config, CreateTopic("t", ((0, (0, 1)),)), BrokerFail(1), BrokerFail(0), BrokerStart(1))
    lai = znode(state)
    assert (lai.leader, lai.isr) == (1, (1,))


def test_failure_of_the_controller_broker_elects_the_lowest_live_id():
    config = ClusterConfig((0, 1, 2))
    state, _ = run(config, CreateTopic("t", ((0, (0, 1, 2)),)), BrokerFail(0))
    assert (state.zk.controller, state.zk.controller_epoch, state.ghost.max_controller_epoch) == (1, 2, 2)
    lai = znode(state)
    assert lai.leader == 1 and 0 not in lai.isr and lai.controller_epoch == 2
    assert get(state.ctx.replica_states, ("t", 0, 0)) == R.OFFLINE
    assert all(b.controller_epoch == 2 for i, b in state.brokers if i != 0)


def test_controlled_shutdown_moves_leaders_and_takes_followers_offline():
    config = ClusterConfig((0, 1, 2, 3), first_controller=3)
    topic = CreateTopic("t", ((0, (0, 1, 2)), (1, (1, 0, 2))))
    state, effects = run(config, topic, CreateTopic("s", ((0, (0,)),)), ControlledShutdown(0))
    t0, t1, s0 = znode(state, ("t", 0)), znode(state, ("t", 1)), znode(state, ("s", 0))
    assert (t0.leader, t0.isr, t0.leader_epoch) == (1, (1, 2), 1)
    assert (t1.leader, t1.isr, t1.leader_epoch) == (1, (1, 2), 1)
    assert (s0.leader, s0.leader_epoch) == (0, 0)  # RF 1: left alone
    assert get(state.ctx.replica_states, ("t", 1, 0)) == R.OFFLINE
    assert get(state.ctx.replica_states, ("t", 0, 0)) == R.ONLINE
    broker0 = get(state.brokers, 0)
    assert broker0.alive and broker0.shutting_down and 0 in state.zk.brokers  # rule 7
    assert any(isinstance(r, StopReplicaRequest) and (r.broker, r.tp, r.delete) == (0, ("t", 1), False)
               for r in effects.requests)


def test_preferred_election_waits_for_the_preferred_replica_in_the_isr():
    config = ClusterConfig((0, 1, 2, 3), first_controller=3)
    state, _ = run(config, CreateTopic("t", ((0, (0, 1, 2)), (1, (1, 2, 0)))), BrokerFail(0), BrokerStart(0))
    before = znode(state)
    assert before.leader == 1 and 0 not in before.isr  # rule 4: back only through replicate
    state, _ = run(config, PreferredElection(), state=state)
    assert znode(state) == before
    state, _ = leader_expands_isr(config, state, T0, (0,))
    epoch_t1 = znode(state, ("t", 1)).leader_epoch
    state, _ = run(config, PreferredElection(), state=state)
    assert (znode(state).leader, znode(state).leader_epoch) == (0, before.leader_epoch + 1)
    assert znode(state, ("t", 1)).leader_epoch == epoch_t1  # already led by its preferred replica


def _deletion_with_a_dead_broker(rules):
    config = ClusterConfig((0, 1, 2, 3), rules=rules, first_controller=3)
    state, _ = run(config, CreateTopic("t", ((0, (0, 1, 2)),)), BrokerFail(2))
    state, effects = run(config, DeleteTopic("t"), state=state)
    return config, state, effects


def test_deletion_waits_for_a_dead_broker_and_resumes_on_its_return():
    config, state, effects = _deletion_with_a_dead_broker("seeds")
    states = dict(state.ctx.replica_states)
    # Contract rule 5: ReplicaDeletionIneligible, then, once the live brokers answered, back to OfflineReplica.
    assert states == {("t", 0, 0): R.DELETION_SUCCESSFUL, ("t", 0, 1): R.DELETION_SUCCESSFUL,
                      ("t", 0, 2): R.OFFLINE}
    assert "t" in state.ctx.topics_to_delete and T0 in dict(state.zk.assignments)
    assert [(c.from_state, c.to_state) for c in effects.state_changes if c.subject == "t-0@2"] == [
        (R.OFFLINE, R.DELETION_STARTED), (R.DELETION_STARTED, R.DELETION_INELIGIBLE),
        (R.DELETION_INELIGIBLE, R.OFFLINE)]
    assert not any(k[:2] == T0 and k[2] in (0, 1) for k, _ in state.replicas)  # logs deleted on live brokers
    state, _ = run(config, BrokerStart(2), state=state)
    assert state.zk.assignments == () and state.zk.partitions == () and state.zk.delete_topics == ()
    assert state.ctx.replica_states == () and state.ctx.partition_states == () and state.ctx.topics_to_delete == ()
    assert state.replicas == ()
    # The name can be used again, from leader epoch 0.
    state, _ = run(config, CreateTopic("t", ((0, (1, 2)),)), state=state)
    assert (znode(state).leader, znode(state).leader_epoch) == (1, 0)


def test_deletion_under_kafka_rules_marks_dead_replicas_ineligible_directly():
    _, state, effects = _deletion_with_a_dead_broker("kafka")
    assert [(c.from_state, c.to_state) for c in effects.state_changes if c.subject == "t-0@2"] == [
        (R.OFFLINE, R.DELETION_INELIGIBLE), (R.DELETION_INELIGIBLE, R.OFFLINE)]


def test_deletion_under_kafka_08_rules_has_no_deletion_states():
    config, state, _ = _deletion_with_a_dead_broker("kafka-0.8")
    assert dict(state.ctx.replica_states) == {("t", 0, 2): R.OFFLINE}
    state, effects = run(config, BrokerStart(2), state=state)
    assert state.zk.assignments == () and state.ctx.replica_states == ()
    assert (R.OFFLINE, R.NON_EXISTENT) in [(c.from_state, c.to_state) for c in effects.state_changes]


def test_a_new_reassignment_replaces_the_one_in_flight():
    config = ClusterConfig((1, 2, 3, 4, 5, 6))
    state, _ = run(config, CreateTopic("t", ((0, (1, 2, 3)),)), Reassign(T0, (4, 5, 6)), Reassign(T0, (1, 5)))
    # Rule 9 (Kafka's reassignTo): from the original replicas; 4 and 6, only in the abandoned target, are deleted.
    assert get(state.zk.assignments, T0) == (1, 5, 2, 3)
    assert get(state.ctx.reassignments, T0) == Reassignment((1, 2, 3), (1, 5))
    assert not any(k[2] in (4, 6) for k, _ in state.ctx.replica_states)
    state, _ = leader_expands_isr(config, state, T0, (5,))
    lai = znode(state)
    assert get(state.zk.assignments, T0) == (1, 5) and (lai.leader, lai.isr) == (1, (1, 5))
    assert {k[2] for k, _ in state.ctx.replica_states} == {1, 5}


def test_a_target_already_in_the_isr_completes_in_the_reassign_step():
    config = ClusterConfig((0, 1, 2))
    state, _ = run(config, CreateTopic("t", ((0, (0, 1, 2)),)), Reassign(T0, (2, 1)))
    lai = znode(state)
    assert get(state.zk.assignments, T0) == (2, 1) and state.ctx.reassignments == ()
    assert (lai.leader, lai.isr) == (2, (1, 2))


def test_a_reassignment_written_without_a_controller_runs_when_one_is_elected():
    config = ClusterConfig((0, 1, 2))
    state, _ = run(config, CreateTopic("t", ((0, (0, 1)),)), BrokerFail(0), BrokerFail(1), BrokerFail(2),
                   Reassign(T0, (1,)))
    assert state.zk.controller == -1 and get(state.zk.reassign_partitions, T0) == (1,)
    assert get(state.zk.assignments, T0) == (0, 1)
    state, _ = run(config, BrokerStart(0), state=state)
    # RAR {1} is already the ISR (rule 12 kept it), so the new controller completes it at once.
    assert (state.zk.controller, get(state.zk.assignments, T0), state.zk.reassign_partitions) == (0, (1,), ())


def test_a_reassignment_replaced_without_a_controller_starts_from_the_original_replicas():
    config = ClusterConfig((0, 1, 2))
    state, _ = run(config, CreateTopic("t", ((0, (0,)),)), BrokerFail(0), Reassign(T0, (0, 1)), BrokerFail(1),
                   BrokerFail(2), Reassign(T0, (2,)), BrokerStart(0))
    # The new controller resumes [0] -> [2] (rule 9); 1, only in the abandoned target, is stopped and deleted.
    assert get(state.zk.assignments, T0) == (2, 0)
    assert get(state.ctx.reassignments, T0) == Reassignment((0,), (2,))
    assert get(state.ctx.replica_states, ("t", 0, 1)) is None
