"""A controller move that is not a session loss: the old controller acts on its queue until a write is refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kcm.model import actions as A
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import BrokerNotAvailable, NotController
from kcm.reference import api

EVENT = ClusterConfig((0, 1, 2), rules="kafka", grain="event", first_controller=0)


def _run(config: ClusterConfig, *actions):
    state, _ = api.start(config)
    notes: list[str] = []
    for action in actions:
        state, effects = api.step(config, state, action)
        notes += effects.notes
    return state, notes


def test_a_move_queues_reelect_behind_the_old_controllers_events_and_elects_the_named_broker():
    state, _ = _run(EVENT, A.CreateTopic("t", ((0, (0,)),)), A.ControllerMove(2))
    assert (state.zk.controller, state.zk.controller_epoch, state.ctx.controller_id) == (2, 2, 2)
    assert state.zombie is not None and state.zombie.controller_id == 0
    assert state.zombie.events == (("TopicChange", "t"), ("Reelect", ""))


def test_the_old_controllers_refused_write_changes_nothing_and_makes_it_resign():
    moved, _ = _run(EVENT, A.CreateTopic("t", ((0, (0,)),)), A.ControllerMove(2))
    after, effects = api.step(EVENT, moved, A.ControllerEvent(zombie=True))
    assert after.zombie is None and "ControllerMovedException" in effects.notes[0]
    assert after._replace(zombie=None) == moved._replace(zombie=None) and not effects.requests
    with pytest.raises(NotController):
        api.step(EVENT, after, A.ControllerEvent(zombie=True))


def test_without_fencing_the_old_controller_writes_and_learns_of_the_move_from_its_reelect():
    unfenced = EVENT._replace(variants=("KAFKA-6082",))
    moved, _ = _run(unfenced, A.CreateTopic("t", ((0, (0,)),)), A.ControllerMove(2))
    wrote, _ = api.step(unfenced, moved, A.ControllerEvent(zombie=True))
    assert wrote.zombie is not None and wrote.zombie.events == (("Reelect", ""),)
    assert dict(wrote.zk.partitions)[("t", 0)].controller_epoch == 1  # the stale controller's write stood
    resigned, _ = api.step(unfenced, wrote, A.ControllerEvent(zombie=True))
    assert resigned.zombie is None


def test_an_event_that_writes_nothing_runs_as_the_active_controller_before_the_reelect():
    state, _ = _run(EVENT, A.BrokerFail(2), A.ControllerEvent(), A.BrokerStart(2), A.ControllerMove(1))
    assert state.zombie.events == (("BrokerChange", (2, True)), ("Reelect", ""))
    state, effects = api.step(EVENT, state, A.ControllerEvent(zombie=True))
    assert state.zombie is not None and 2 in state.zombie.live_brokers and state.zombie.events == (("Reelect", ""),)
    assert all(r.controller_epoch == 1 for r in effects.requests)  # sent with the old controller's epoch
    state, _ = api.step(EVENT, state, A.ControllerEvent(zombie=True))
    assert state.zombie is None


@pytest.mark.parametrize("grain", ["coarse", "event"])
def test_with_nothing_queued_a_move_is_a_resignation(grain):
    config = EVENT._replace(grain=grain)
    steps = (A.CreateTopic("t", ((0, (0, 1)),)),) + ((A.ControllerEvent(),) if grain == "event" else ())
    moved, _ = _run(config, *steps, A.ControllerMove(1))
    resigned, _ = _run(config, *steps, A.ControllerResign(1))
    assert moved == resigned and moved.zombie is None


def test_a_session_loss_still_drops_the_queue():
    state, _ = _run(EVENT, A.CreateTopic("t", ((0, (0,)),)), A.ControllerResign(2))
    assert state.zombie is None and state.ctx.events == ()


def test_a_move_to_a_dead_broker_or_to_the_controller_itself_is_refused():
    state, _ = _run(EVENT, A.BrokerFail(2))
    for broker in (2, 0):
        with pytest.raises(BrokerNotAvailable):
            api.step(EVENT, state, A.ControllerMove(broker))


def test_the_op_round_trips_and_a_move_without_a_broker_is_not_a_scenario(tmp_path):
    assert A.from_step({"op": "controller_move", "broker": 1}) == A.ControllerMove(1)
    assert A.ControllerMove(1).to_step() == {"op": "controller_move", "broker": 1}
    doc = {"config": {"brokers": [0, 1], "grain": "event"}, "steps": [{"op": "controller_move"}]}
    f = tmp_path / "move.json"
    f.write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", str(f)], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "steps[0]" in done.stderr


def test_preferred_elections_and_reassignments_wait_in_the_queue_at_the_event_grain():
    state, _ = _run(EVENT, A.CreateTopic("t", ((0, (0, 1)),)), A.ControllerEvent(),
                    A.PreferredElection((("t", 0),)), A.Reassign(("t", 0), (1, 2)))
    assert state.ctx.events == (("ReplicaLeaderElection", (("t", 0),)), ("ZkPartitionReassignment", ("t", 0)))
    assert dict(state.zk.reassign_partitions) == {("t", 0): (1, 2)} and not state.ctx.reassignments
    state, _ = api.step(EVENT, state, A.ControllerEvent())
    state, _ = api.step(EVENT, state, A.ControllerEvent())
    assert dict(state.ctx.reassignments)[("t", 0)].target == (1, 2)


def test_the_trace_oracle_takes_a_failover_loading_a_topic_it_never_saw_created():
    from pathlib import Path

    from kcm.checkers.core.scenario import read_file
    from kcm.checkers.oracle.oracle_inputs import scenario_trace

    from kcm.oracle import check_events

    path = Path(__file__).resolve().parent.parent / "specs/scenarios/kafka/ci-controller-move-on-topic-creation.json"
    events = scenario_trace(read_file(path))
    assert check_events(events, "kafka").ok
    # the same change once the failover has written or sent something is no longer the state it loaded
    first = next(i for i, e in enumerate(events) if e["type"] == "replica_state_change")
    later = next(i for i, e in enumerate(events) if i > first and e["type"] not in (
        "partition_state_change", "replica_state_change"))
    moved = events[:first] + events[first + 1:later + 1] + [events[first]] + events[later + 1:]
    verdict = check_events(moved, "kafka")
    assert not verdict.ok and verdict.rule_id == "TraceConsistent"
