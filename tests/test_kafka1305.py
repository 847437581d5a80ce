"""Variant KAFKA-1305: bounded controller-to-broker queues, a controller blocked holding its lock, the deadlock."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.gate.bugs import with_settings
from kcm.model import actions as A
from kcm.model import channels
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import ControllerBlocked
from kcm.properties import catalogue
from kcm.reference import api

from kcm.cli import main as kcm_main

DEADLOCK = catalogue.by_id("ControllerNotDeadlocked").condition


def _config(*variants: str, size: int = 1, grain: str = "coarse") -> ClusterConfig:
    return ClusterConfig((0, 1), rules="kafka", variants=variants, delivery="async", grain=grain,
                         controller_message_queue_size=size)


def _run(config: ClusterConfig, *steps):
    state, _ = api.start(config)
    for action in steps:
        state, _ = api.step(config, state, action)
    return state


def _settled(config: ClusterConfig):
    """Topics a and b (one replica each, on broker 1) created, every request delivered, every event processed."""
    state = _run(config, A.CreateTopic("a", ((0, (1,)),)), A.CreateTopic("b", ((0, (1,)),)))
    while state.inflight or state.ctx.events:
        if state.ctx.events and channels.blocked(config, state) is None:
            state, _ = api.step(config, state, A.ControllerEvent())
        else:
            (broker, epoch), _queue = state.inflight[0]
            state, _ = api.step(config, state, A.Deliver(broker, epoch))
    return state


def _deadlocked(config: ClusterConfig):
    """The committed counterexample's last four steps: b deleted, two deliveries to broker 1, a deleted."""
    state = _settled(config)
    for action in (A.DeleteTopic("b"), A.Deliver(1, 1), A.Deliver(1, 1), A.DeleteTopic("a")):
        state, _ = api.step(config, state, action)
    return state


def _holds(config: ClusterConfig, state) -> bool:
    return DEADLOCK(SimpleNamespace(config=config), state)


def test_a_full_queue_blocks_the_controller_and_a_deletion_callback_closes_the_cycle():
    config = _config("KAFKA-1305")
    state = _settled(config)
    state, _ = api.step(config, state, A.DeleteTopic("b"))
    # UpdateMetadata, StopReplica, StopReplica(delete): one in the send thread's hands, one queued, one not put yet
    assert channels.blocked(config, state) == (1, 1)
    assert _holds(config, state)  # the head has no callback: broker 1's send thread drains the queue
    with pytest.raises(ControllerBlocked, match="preferred_election waits for the lock"):
        api.step(config, state, A.PreferredElection())
    state, _ = api.step(config, state, A.Deliver(1, 1))
    assert channels.blocked(config, state) is None
    state, _ = api.step(config, state, A.Deliver(1, 1))
    state, _ = api.step(config, state, A.DeleteTopic("a"))
    assert channels.deadlocked(config, state) == [(1, 1)]
    assert not _holds(config, state)
    with pytest.raises(ControllerBlocked, match="waits for the controller lock"):
        api.step(config, state, A.Deliver(1, 1))


def test_the_fixed_queues_are_unbounded_and_a_large_bound_is_not_reached():
    for config in (_config(), _config("KAFKA-1305", size=10)):
        state = _deadlocked(config)
        assert channels.blocked(config, state) is None
        assert _holds(config, state)
        api.step(config, state, A.Deliver(1, 1))  # the deletion's callback runs


def test_events_wait_for_a_blocked_controller_at_the_coarse_grain_and_run_once_it_is_free():
    config = _config("KAFKA-1305")
    state = _settled(config)
    state, _ = api.step(config, state, A.DeleteTopic("b"))
    state, _ = api.step(config, state, A.DeleteTopic("a"))  # its TopicDeletion waits for the lock
    assert [name for name, _ in state.ctx.events] == ["TopicDeletion"]
    assert "a" not in state.ctx.topics_to_delete
    state, _ = api.step(config, state, A.Deliver(1, 1))  # room again: the deletion of a runs in this step
    assert state.ctx.events == ()
    assert not [tp for tp, _ in state.zk.assignments if tp[0] == "a"]
    assert channels.blocked(config, state) == (1, 1)  # and its requests fill broker 1's queue again


def test_the_event_grain_refuses_controller_events_while_blocked():
    config = _config("KAFKA-1305", grain="event")
    state = _settled(config)
    state, _ = api.step(config, state, A.DeleteTopic("b"))
    state, _ = api.step(config, state, A.ControllerEvent())
    assert channels.blocked(config, state) == (1, 1)
    state, _ = api.step(config, state, A.DeleteTopic("a"))
    with pytest.raises(ControllerBlocked):
        api.step(config, state, A.ControllerEvent())


def test_the_bug_config_finds_the_deadlock_and_the_fixed_twin_holds_it_everywhere():
    base = load_config("bugs/KAFKA-1305")
    assert base["controller_message_queue_size"] == 1
    buggy = BoundedSystem(with_settings(base, {"variants": ["KAFKA-1305"]}))
    assert buggy.config.controller_message_queue_size == 1
    assert "ControllerNotDeadlocked" in [p.name for p in buggy.properties()]
    fixed = BoundedSystem(base)
    assert not channels.bounded(fixed.config)


def test_the_queue_size_is_checked_and_carried_into_scenarios(tmp_path, capsys):
    doc = json.loads((Path(__file__).resolve().parent.parent / "specs" / "scenarios" / "bugs" / "generated" /
                      "KAFKA-1305.json").read_text())
    assert doc["config"]["controller_message_queue_size"] == 1
    doc["config"]["controller_message_queue_size"] = 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert kcm_main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "controller_message_queue_size" in err[0]
    # With a queue of ten the same steps deadlock nothing: the expected violation does not happen.
    doc["config"]["controller_message_queue_size"] = 10
    bad.write_text(json.dumps(doc))
    assert kcm_main(["run", str(bad)]) == 1
    capsys.readouterr()


def test_a_bounded_config_with_a_bad_queue_size_is_refused_in_one_line(tmp_path, capsys):
    cfg = load_config("bugs/KAFKA-1305")
    cfg["controller_message_queue_size"] = "one"
    path = tmp_path / "bad-queue.json"
    path.write_text(json.dumps(cfg))
    assert kcm_main(["explore", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad-queue.json" in err[0] and "controller_message_queue_size" in err[0]
