"""EVENTUALLY properties under weak fairness: the graph check on small hand-made graphs, and on the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore import bfs, liveness
from kcm.model import actions as A
from kcm.model.interface import EVENTUALLY, ModelBase, named

from kcm.cli import main as kcm_main

BUG_CONFIGS = Path(__file__).resolve().parent.parent / "specs" / "configs" / "bugs"


class Go(NamedTuple):
    """A hand-made graph's action: its name (the fairness label), fair or not."""

    name: str
    fair: bool = True


def _settled(model: Any, state: int) -> bool:
    """State 9 is the goal."""
    return state == 9


class Graph(ModelBase):
    """A Model over a hand-made graph of int states: state -> [(action, next state)]."""

    def __init__(self, edges: dict[int, list[tuple[Go, int]]], outside: frozenset[tuple[int, str]] = frozenset()
                 ) -> None:
        self.edges, self.outside = edges, outside

    def init_states(self) -> list[int]:
        return [0]

    def actions(self, state: int) -> list[Go]:
        return [go for go, _ in self.edges.get(state, [])]

    def outcome(self, state: int, action: Go) -> tuple[str, Any]:
        if (state, action.name) in self.outside:
            return "outside", None
        return "next", (dict(self.edges[state])[action], None)

    def fair(self, action: Go) -> bool:
        return action.fair

    def fingerprint(self, state: int) -> int:
        return state

    def properties(self) -> list:
        return [named("Settles", EVENTUALLY, _settled)]


def _judge(model: Graph) -> tuple[list[Any], int] | None:
    graph = liveness.build_graph(model, model.properties())
    assert graph is not None
    return liveness.judge(graph, "Settles")


A_, B, C, D = Go("a"), Go("b"), Go("c"), Go("d")


def test_a_fair_action_out_of_every_state_settles() -> None:
    assert _judge(Graph({0: [(A_, 1)], 1: [(B, 9)]})) is None


def test_a_state_with_only_unfair_actions_may_be_where_a_run_stops() -> None:
    # Nothing obliges the unfair step to 9: the run may stay in 1 forever (an empty loop after the stem).
    assert _judge(Graph({0: [(A_, 1)], 1: [(Go("b", fair=False), 9)]})) == ([A_], 1)


def test_a_cycle_that_keeps_taking_its_fair_actions_is_a_fair_run_that_never_settles() -> None:
    # 1 <-> 2 forever; the fair exit to 9 is enabled in 2 only, so a run that passes through 1 may skip it.
    lasso = _judge(Graph({0: [(A_, 1)], 1: [(B, 2)], 2: [(C, 1), (D, 9)]}))
    assert lasso == ([A_, B, C], 1)


def test_a_cycle_that_never_takes_an_action_enabled_throughout_it_is_not_fair() -> None:
    # d is enabled in both 1 and 2 and never taken inside the cycle: weak fairness forces it, and it settles.
    assert _judge(Graph({0: [(A_, 1)], 1: [(B, 2), (D, 9)], 2: [(C, 1), (D, 9)]})) is None


def test_the_loop_of_a_lasso_takes_each_fair_action_the_cycle_needs() -> None:
    # b and c make the shortest cycle 1 -> 2 -> 1, but d is enabled in both states and is taken inside the cycle
    # only on 1 -> 2 (from 2 it settles): a fair run must keep taking it, so the loop shows it.
    edges = {0: [(A_, 1)], 1: [(B, 2), (D, 2)], 2: [(C, 1), (D, 9)]}
    actions, loop = _judge(Graph(edges))
    assert actions[:loop] == [A_] and D in actions[loop:]
    state = 1
    for go in actions[loop:]:  # the loop is a real path of the graph and comes back to its entry
        state = dict(edges[state])[go]
    assert state == 1


def test_a_fair_step_past_the_bounds_is_enabled_but_judged_nowhere() -> None:
    # From 1 the only fair step leaves the explored bounds: no violation is claimed through it.
    assert _judge(Graph({0: [(A_, 1)], 1: [(B, 5)]}, outside=frozenset({(1, "b")}))) is None


def test_the_shipped_liveness_config_settles_under_fairness() -> None:
    model = BoundedSystem(load_config("liveness"))
    found = bfs.explore(model)
    liveness.add_verdicts(found, model)
    verdicts = found.verdicts(model.properties())
    assert verdicts["ReassignmentsFinish"] == verdicts["ProducesResolve"] == "holds"
    assert verdicts["ReplicasLearnLeaders"] == "holds"
    assert verdicts["SomeRecordConsumed"] == "reached" and verdicts["ConsumedRecordsSurvive"] == "holds"


@pytest.mark.parametrize("variant", ["KAFKA-1120", "KAFKA-6082"])
def test_a_broker_left_behind_for_good_breaks_liveness_and_the_fix_settles(variant: str) -> None:
    # KAFKA-1120: a broker that bounces faster than the controller notices never gets a LeaderAndIsr again;
    # KAFKA-6082: a zombie controller's write leaves a znode no live replica was told of. Either way the cluster
    # stops with a live ISR member that does not know its leader: a lasso with an empty loop.
    cfg = {**load_config(str(BUG_CONFIGS / f"{variant}.json")), "properties": ["ReplicasLearnLeaders"]}
    broken = BoundedSystem({**cfg, "variants": [variant]})
    found = bfs.explore(broken)
    liveness.add_verdicts(found, broken)
    trace = found.violations["ReplicasLearnLeaders"]
    assert found.loops["ReplicasLearnLeaders"] == len(trace)  # it stops there: nothing fair is left to do
    fixed = BoundedSystem(cfg)
    found = bfs.explore(fixed)
    liveness.add_verdicts(found, fixed)
    assert found.verdicts(fixed.properties()) == {"ReplicasLearnLeaders": "holds"}


SMALL = {"name": "small", "brokers": [0, 1], "topics": {"t": {"0": [0, 1]}}, "families": ["data_plane"],
         "bounds": {"max_records": 1}, "properties": ["ProducesResolve"]}


def test_without_fair_fetches_a_produce_waits_forever() -> None:
    # The same reference with fairness taken away: a run may produce and never fetch, so the produce stays pending.
    model = BoundedSystem(SMALL)
    model.fair = lambda action: False  # type: ignore[method-assign]
    found = bfs.explore(model)
    liveness.add_verdicts(found, model)
    assert found.violations["ProducesResolve"] == [A.Produce(("t", 0))]
    assert found.loops["ProducesResolve"] == 1  # stops after the produce
    fair = BoundedSystem(SMALL)
    found = bfs.explore(fair)
    liveness.add_verdicts(found, fair)
    assert "ProducesResolve" in found.judged and not found.violations


def test_a_liveness_property_needs_its_families() -> None:
    with pytest.raises(BadConfig, match="ReassignmentsFinish needs the families"):
        BoundedSystem({**SMALL, "families": ["broker_failure"], "properties": ["ReassignmentsFinish"]})
    # Left out unless named: the check keeps the whole graph.
    assert "ProducesResolve" not in {p.name for p in BoundedSystem({**SMALL, "properties": []}).properties()}


def test_partial_runs_and_walks_do_not_judge_liveness(capsys: pytest.CaptureFixture[str]) -> None:
    assert kcm_main(["explore", "--config", "liveness", "--max-states", "50", "--json", "--quiet"]) == 3  # partial
    summary = json.loads(capsys.readouterr().out)
    assert summary["verdicts"]["ReassignmentsFinish"].startswith("not judged")
    assert kcm_main(["explore", "--config", "liveness", "--walks", "3", "--depth", "5", "--json", "--quiet"]) == 3
    assert json.loads(capsys.readouterr().out)["verdicts"]["ProducesResolve"].startswith("not judged")


DELETION = {"name": "liveness-deletion", "brokers": [0, 1, 2], "topics": {"t": {"0": [0, 1]}},
            "families": ["broker_failure", "reassignment", "deletion", "data_plane"], "truncation": "kip320",
            "bounds": {"max_failures": 1, "max_restarts": 1, "max_leader_epoch": 3, "max_records": 0,
                       "reassign_targets": [[1, 2]]},
            "properties": ["DeletionsFinish", "ReassignmentsFinish"]}


def test_a_deletion_queued_behind_a_reassignment_finishes() -> None:
    # The topic is queued while its partition is being reassigned, so it waits; its leader fails (a partition of a
    # topic queued for deletion gets no new leader, so the reassignment cannot finish) and restarts: as in Kafka,
    # the restart resumes the deletion without waiting for the reassignment, which goes with the topic.
    model = BoundedSystem(DELETION)
    found = bfs.explore(model)
    liveness.add_verdicts(found, model)
    assert {"DeletionsFinish", "ReassignmentsFinish"} <= found.judged and found.violations == {}
    state = model.init_states()[0]
    for action in (A.Reassign(("t", 0), (1, 2)), A.DeleteTopic("t"), A.BrokerFail(0)):
        state = model.next_state(state, action)
    assert state.ctx.topics_ineligible == ("t",) and state.ctx.reassignments  # waiting, and stuck
    state = model.next_state(state, A.BrokerStart(0))
    assert not state.zk.assignments and not state.ctx.reassignments and not state.zk.reassign_partitions


def test_the_explore_command_prints_a_liveness_counterexample(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    cfg = {**load_config(str(BUG_CONFIGS / "KAFKA-1120.json")), "variants": ["KAFKA-1120"],
           "properties": ["ReplicasLearnLeaders"]}
    path = tmp_path / "bounce.json"
    path.write_text(json.dumps(cfg))
    assert kcm_main(["explore", "--config", str(path), "--quiet", "--out", str(tmp_path / "cex")]) == 1
    out = capsys.readouterr().out
    assert "ReplicasLearnLeaders               violated" in out
    assert "stays unsettled with no fair step left to take" in out
    scenario = tmp_path / "cex" / "ReplicasLearnLeaders.json"
    assert kcm_main(["run", str(scenario)]) == 0  # the stem replays
