"""`kcm explore`: verdicts on the tiny config and counterexamples that replay (Spark: tests/test_spark.py)."""

from __future__ import annotations

import json

import pytest
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.core.scenario import parse_text, run
from kcm.checkers.explore import bfs, level_loop
from kcm.model.actions import Consume, PreferredElection, Reassign
from kcm.model.errors import KcmError
from kcm.reference import api

from kcm.cli import main
from tests.explored import bfs_states


def test_tiny_explores_and_every_safety_property_holds():
    model = BoundedSystem(load_config("tiny"))
    found = bfs.explore(model)
    assert found.complete and found.distinct_states > 100 and found.depth > 3
    verdicts = found.verdicts(model.properties())
    assert verdicts["OneLeaderPerEpoch"] == "holds" and verdicts["LeaderInIsrInAr"] == "holds"
    assert verdicts["SomeControllerFailover"] == "reached" and verdicts["SomePartitionOffline"] == "reached"
    assert found.violations == {}
    again = bfs.explore(model)
    assert (again.distinct_states, again.transitions, again.depth) == (
        found.distinct_states, found.transitions, found.depth)


def test_unclean_election_loses_an_acked_record_and_the_trace_replays():
    model = BoundedSystem(load_config("unclean"))
    found = bfs.explore(model, max_states=3000)  # the violation is at depth 3; the whole space is far larger
    assert "AckedRecordsSurvive" in found.violations
    trace = found.violations["AckedRecordsSurvive"]
    state = model.init_states()[0]
    for action in trace:
        state, _ = api.step(model.config, state, action)
    prop = next(p for p in model.properties() if p.name == "AckedRecordsSurvive")
    assert not prop.condition(model, state)
    # The same trace as a `kcm run` scenario runs through the contract interface.
    outcome = run(parse_text(json.dumps(model.scenario(trace)).encode()))
    assert outcome.mismatches == []
    # BFS gives the shortest trace: no shorter prefix already breaks the property.
    state = model.init_states()[0]
    for action in trace[:-1]:
        state, _ = api.step(model.config, state, action)
        assert prop.condition(model, state)


def test_cli_summary_and_exit_codes(capsys, tmp_path):
    assert main(["explore", "--config", "tiny", "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["distinct_states"] > 100 and summary["verdicts"]["ValidTransition"] == "holds"
    assert main(["explore", "--config", "unclean", "--quiet", "--max-states", "2000", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "counterexample to AckedRecordsSurvive" in out
    assert (tmp_path / "AckedRecordsSurvive.json").exists()
    assert main(["explore", "--config", "no-such-config"]) == 2
    assert "no config" in capsys.readouterr().err


def test_a_folder_named_like_a_shipped_config_does_not_hide_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").mkdir()
    assert main(["explore", "--config", "tiny", "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_states"] == 381  # the dead-broker reduction: 651 in full
    assert main(["explore", "--config", "./tiny"]) == 2  # a path to the folder: the folder, not the shipped config
    assert "no config './tiny' (a folder, not a config file)" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    assert main(["explore", "--config", "mine"]) == 2
    err = capsys.readouterr().err
    assert "no config 'mine' (a folder, not a config file)" in err and len(err.strip().splitlines()) == 1


def test_bad_configs_are_refused():
    for bad in ({}, {"brokers": []}, {"brokers": [0], "families": ["chaos"]}, {"brokers": [0], "colour": 1},
                {"brokers": [0], "bounds": {"max_cats": 1}}, {"brokers": [0], "topics": {"t": {"0": [5]}}}):
        with pytest.raises(BadConfig):
            BoundedSystem(bad)


def test_refused_actions_are_not_transitions():
    model = BoundedSystem(load_config("tiny"))
    state = model.init_states()[0]
    for action in model.actions(state):
        try:
            nxt, _ = model.step(state, action)
        except KcmError:
            assert model.next_state(state, action) is None


def _withheld(model, state):
    """Preferred elections, reassignments and consumer reads of the config's families that model.actions(state)
    does not offer."""
    offered = {(type(a), a) for a in model.actions(state)}
    candidates = [PreferredElection()] if "preferred" in model.families else []
    if "reassignment" in model.families:
        candidates += [Reassign(tp, tuple(t)) for tp in model.tps for t in model.bounds["reassign_targets"]
                       if tp in dict(state.zk.assignments) and tp not in dict(state.ctx.reassignments)]
    if "consume" in model.families:
        candidates += [Consume(tp, 0) for tp in model.tps if tp in dict(state.zk.assignments)]
    return [a for a in candidates if (type(a), a) not in offered]


@pytest.mark.parametrize("name", ["controller", "async", "bugs/KIP-279", "liveness"])
def test_actions_withheld_from_the_explorer_change_nothing(name):
    model = BoundedSystem(load_config(name))
    checked = 0
    for state in bfs_states(model, limit=1500):
        for action in _withheld(model, state):
            assert model.next_state(state, action) is None, (action, state)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", ["tiny", "controller", "async", "bugs/KIP-279"])
def test_a_successor_stopped_at_a_bound_is_one_the_boundary_drops(name):
    model = BoundedSystem(load_config(name))
    stopped = 0
    for state in bfs_states(model, limit=1500):
        for action in model.actions(state):
            try:
                after, effects = model.step(state, action)
            except KcmError:
                after = None
            kept = after is not None and after != state and model.within_boundary(after)
            assert model.successor(state, action) == ((after, effects) if kept else None), action
            if after is not None and after != state and not kept:
                stopped += 1
    assert stopped > 0  # some steps leave the bounds


def test_compact_visited_set_rebuilds_every_state_by_replay():
    from kcm.checkers.explore.visited import replay

    model = BoundedSystem(load_config("tiny"))
    found = bfs.explore(model)
    visited = found.visited
    assert found.bytes_per_state <= 32 and len(visited) == found.distinct_states
    assert len(visited.parents) == found.depth + 1
    # Every (level, position) replays, by action positions from an initial state, to a distinct visited state
    # whose shortest distance is its level: the parent links lose nothing.
    reached: dict[int, int] = {}
    for level, parents in enumerate(visited.parents):
        for index in range(parents.size):
            root, steps = visited.path(level, index)
            assert len(steps) == level
            state = model.init_states()[root]
            for action in replay(model, root, steps):
                state = model.next_state(state, action)
            reached[model.fingerprint(state)] = level
    assert sorted(reached) == visited.seen.tolist()


def test_counterexample_replays_through_the_compact_parent_links():
    model = BoundedSystem(load_config("unclean"))
    found = bfs.explore(model, max_states=3000)
    trace = found.violations["AckedRecordsSurvive"]
    assert len(trace) == 3  # the shortest: found at depth 3 of the breadth-first order
    state = model.init_states()[0]
    for action in trace:
        assert action in model.actions(state)
        state = model.next_state(state, action)
    prop = next(p for p in model.properties() if p.name == "AckedRecordsSurvive")
    assert not prop.condition(model, state)


def test_progress_lines_on_stderr_unless_quiet(capsys):
    assert main(["explore", "--config", "tiny"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("level ") and "distinct states" in line and "states/s" in line
                       and "frontier" in line and "ETA" in line for line in err)
    assert any("estimate" in line for line in err)
    assert main(["explore", "--config", "tiny", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_reports_every_level_when_asked_and_the_estimate_is_finite_once_levels_shrink():
    reports: list[bfs.Progress] = []
    model = BoundedSystem(load_config("tiny"))
    found = bfs.search(model, "local", bfs.expander(model), progress=reports.append, progress_every=0.0)
    assert reports[-1].states == found.distinct_states and reports[-1].frontier == 0
    assert [r.states for r in reports] == sorted(r.states for r in reports)
    assert reports[-2].eta_seconds is not None and reports[-2].eta_seconds >= 0
    assert level_loop.eta([1, 4, 16], 16, 0, 0, 21, 1.0) is None  # a frontier still growing has no estimate

