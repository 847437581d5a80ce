"""The event grain: each controller event a step of its own; the coarse step is that grain run to quiescence."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.core.scenario import parse_text, run
from kcm.model import actions as A
from kcm.model.cluster import ClusterConfig
from kcm.model.effects import Effects
from kcm.model.errors import NoEventQueued, NotController
from kcm.model.symmetry import rename_cluster
from kcm.reference import api

from tests.explored import bfs_states

LIBRARY = Path(__file__).resolve().parent.parent / "specs" / "scenarios"
# The scenarios written at the coarse grain (the default): those at the event grain name their controller events.
FILES = sorted(p for p in LIBRARY.rglob("*.json") if '"grain": "event"' not in p.read_text())
EVENT = ClusterConfig((0, 1, 2), rules="kafka", grain="event")


def _pending(config: ClusterConfig, state):
    """The next step of the event grain's quiescence: a controller event, the rest of a request applied in part, or
    (synchronous delivery) a request sent behind one."""
    if state.ctx.events:
        return A.ControllerEvent()
    half = {b: s.half_applied for b, s in state.brokers if s.half_applied}
    for (broker, epoch), queue in state.inflight:
        if queue and (config.delivery == "sync" or broker in half and queue[0].tp in half[broker]):
            return A.Deliver(broker, epoch)
    return None


class Quiescent:
    """An engine for `scenario.run`: each step at the event grain, then run to quiescence (no controller event
    queued, no request applied in part)."""

    start = staticmethod(api.start)

    @staticmethod
    def step(config: ClusterConfig, state, action):
        state, effects = api.step(config, state, action)
        while (pending := _pending(config, state)) is not None:
            state, more = api.step(config, state, pending)
            effects = Effects(effects.requests + more.requests, effects.state_changes + more.state_changes,
                              effects.notes + more.notes, effects.result)
        return state, effects


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(LIBRARY)))
def test_every_scenario_gives_the_same_result_at_the_event_grain_run_to_quiescence(path):
    doc = parse_text(path.read_bytes())
    coarse = run(doc, trace=True)
    fine_doc = copy.deepcopy(doc)
    fine_doc["config"]["grain"] = "event"
    fine = run(fine_doc, trace=True, engine=Quiescent)
    assert fine.mismatches == coarse.mismatches
    assert fine.result == coarse.result


def _started(topics: dict[str, tuple[int, ...]]):
    state, _ = api.start(EVENT)
    for topic, replicas in topics.items():
        state, _ = api.step(EVENT, state, A.CreateTopic(topic, ((0, replicas),)))
        assert state.ctx.events == (("TopicChange", topic),) and not state.ctx.assignments
        state, _ = api.step(EVENT, state, A.ControllerEvent())
    return state


def test_a_broker_failure_waits_in_the_queue_until_the_controller_processes_it():
    state = _started({"t": (1, 0)})
    state, _ = api.step(EVENT, state, A.BrokerFail(1))
    assert state.ctx.events == (("BrokerChange", (1, False)),)
    assert 1 in state.ctx.live_brokers and 1 not in state.zk.brokers  # the controller has not looked yet
    assert dict(state.zk.partitions)[("t", 0)].leader == 1
    state, effects = api.step(EVENT, state, A.ControllerEvent())
    assert state.ctx.events == () and 1 not in state.ctx.live_brokers
    assert dict(state.zk.partitions)[("t", 0)].leader == 0 and effects.requests
    with pytest.raises(NoEventQueued):
        api.step(EVENT, state, A.ControllerEvent())
    with pytest.raises(NotController):
        api.step(EVENT, state, A.ControllerEvent(zombie=True))


def test_a_deleted_topics_znodes_go_one_zookeeper_call_at_a_time_and_a_failover_can_cut_them():
    state = _started({"t": (0, 1)})
    state, _ = api.step(EVENT, state, A.DeleteTopic("t"))
    assert state.ctx.events == (("TopicDeletion", "t"),) and state.ctx.topics_to_delete == ()
    state, _ = api.step(EVENT, state, A.ControllerEvent())
    # the controller is done with the topic; ZooKeeper still has every znode of it
    assert state.ctx.events == (("DeleteTopicZNode", "t"),) and not state.ctx.assignments
    assert state.zk.partitions and state.zk.assignments and state.zk.delete_topics == ("t",)
    cut, _ = api.step(EVENT, state, A.ControllerEvent())
    assert not cut.zk.partitions and cut.zk.assignments and cut.ctx.events == (("DeleteTopicZNode", "t"),)
    done, _ = api.step(EVENT, cut, A.ControllerEvent())
    assert not done.zk.assignments and done.zk.delete_topics == () and done.ctx.events == ()
    # a failover between the two calls: the new controller finds the topic without its state znode and finishes it
    after, _ = api.step(EVENT, cut, A.ControllerResign(2))
    assert after.ctx.controller_id == 2 and not after.ctx.topics_to_delete
    # under KAFKA-6650 its replicas stay OnlineReplica and the deletion never ends
    buggy = EVENT._replace(variants=("KAFKA-6650",))
    stuck, _ = api.step(buggy, cut, A.ControllerResign(2))
    assert stuck.ctx.topics_to_delete == ("t",) and not stuck.ctx.events


def test_a_resigned_controller_keeps_its_queue_only_under_kafka_3083():
    state = _started({"t": (1, 0)})
    state, _ = api.step(EVENT, state, A.BrokerFail(1))
    fixed, _ = api.step(EVENT, state, A.ControllerResign(2))
    assert fixed.zombie is None and fixed.ctx.controller_id == 2 and fixed.ctx.events == ()
    buggy = EVENT._replace(variants=("KAFKA-3083", "KAFKA-6082"))
    resigned, _ = api.step(buggy, state, A.ControllerResign(2))
    assert resigned.zombie is not None and resigned.zombie.events == (("BrokerChange", (1, False)),)
    written, _ = api.step(buggy, resigned, A.ControllerEvent(zombie=True))
    assert written.zombie is None
    # the zombie elected from its stale context, with its old controller epoch
    assert dict(written.zk.partitions)[("t", 0)].controller_epoch == 1 < written.zk.controller_epoch


def test_the_coarse_grain_never_leaves_an_event_queued_and_the_event_grain_offers_the_steps():
    coarse = BoundedSystem(load_config("tiny"))
    for state in coarse.init_states():
        assert state.ctx.events == ()
    fine = BoundedSystem(load_config("bugs/KAFKA-6650"))
    state = fine.init_states()[0]
    state = fine.next_state(state, A.DeleteTopic("t"))
    assert A.ControllerEvent() in fine.actions(state)
    assert fine.scenario([A.DeleteTopic("t")])["config"]["grain"] == "event"


def test_symmetry_renames_the_brokers_an_event_names():
    state = _started({"t": (1, 0)})
    state, _ = api.step(EVENT, state, A.BrokerFail(1))
    renamed = rename_cluster({1: 2, 2: 1}, state)
    assert renamed.ctx.events == (("BrokerChange", (2, False)),)


def test_a_queued_event_is_part_of_the_state_and_round_trips():
    from kcm.model.fingerprint import decode, encode, fingerprint

    state = _started({"t": (1, 0)})
    queued, _ = api.step(EVENT, state, A.BrokerFail(1))
    assert decode(encode(queued)) == queued
    processed, _ = api.step(EVENT, queued, A.ControllerEvent())
    assert decode(encode(processed)) == processed and processed.ctx.events == ()
    assert fingerprint(queued) != fingerprint(queued._replace(ctx=queued.ctx._replace(events=())))


def test_a_leader_made_follower_moves_in_two_steps_and_a_session_loss_between_them_is_kafka_9307():
    state = _started({"t": (1, 0)})
    # broker 1 loses its session: the controller elects 0 and tells 1, which stops leading and records epoch 1 only
    state, _ = api.step(EVENT, state, A.SessionExpiry(1))
    data = dict(state.replicas)[("t", 0, 1)]
    assert (data.leader, data.leader_epoch) == (-1, 1) and dict(state.brokers)[1].half_applied == (("t", 0),)
    assert state.inflight  # the rest of the request waits at the head of the connection
    done, _ = api.step(EVENT, state, A.Deliver(1))
    assert dict(done.replicas)[("t", 0, 1)].leader == 0 and dict(done.brokers)[1].half_applied == ()
    # a second session loss first: the fixed broker completes the move on the resent request, the buggy one ignores it
    fixed, _ = api.step(EVENT, state, A.SessionExpiry(1))
    assert dict(fixed.replicas)[("t", 0, 1)].leader == 0
    buggy = EVENT._replace(variants=("KAFKA-9307",))
    stuck, _ = api.step(buggy, state, A.SessionExpiry(1))
    assert dict(stuck.replicas)[("t", 0, 1)].leader == -1 and not stuck.inflight
    # at the coarse grain the move is one step
    coarse = EVENT._replace(grain="coarse")
    one, _ = api.step(coarse, _started({"t": (1, 0)}), A.SessionExpiry(1))
    assert dict(one.replicas)[("t", 0, 1)].leader == 0 and not one.inflight


def test_the_controller_move_family_moves_only_a_controller_holding_events():
    model = BoundedSystem(load_config("controller-move"))
    moves = 0
    for state in bfs_states(model):
        offered = [a for a in model.actions(state) if isinstance(a, A.ControllerMove)]
        if not state.ctx.events or state.zombie is not None:
            assert not offered, state  # a move with nothing queued is controller_resign; one old controller at most
            continue
        alive = {b for b, s in state.brokers if s.alive} - {state.zk.controller}
        if state.zk.controller_epoch < model.bounds["max_controller_epoch"]:
            assert {a.broker for a in offered} == alive
            moves += len(offered)
            for a in offered:
                after = model.next_state(state, a)
                assert after.zombie is not None and after.zombie.events[-1] == ("Reelect", "")
    assert moves > 0


def test_exploring_controller_moves_finds_kafka_6082_and_the_fixed_model_is_clean():
    from kcm.checkers.explore import bfs

    cfg = load_config("controller-move")
    fixed = bfs.explore(BoundedSystem(cfg), None)
    assert fixed.complete and not fixed.violations
    buggy = BoundedSystem(dict(copy.deepcopy(cfg), variants=["KAFKA-6082"]))
    found = bfs.explore(buggy, None, stop_at=["ZkEpochFencing"])
    trace = found.violations["ZkEpochFencing"]
    assert any(isinstance(step, A.ControllerMove) for step in buggy.expand(trace))


def test_controller_move_is_refused_at_the_coarse_grain():
    from kcm.checkers.core.bounded import BadConfig, validate_config

    cfg = dict(copy.deepcopy(load_config("controller-move")), grain="coarse")
    with pytest.raises(BadConfig, match="controller_move needs"):
        validate_config(cfg)
