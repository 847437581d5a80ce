"""The `ignored_requests` reduction (checkers/core/bounded.py, argued in docs/exploration.md): a request at the head of
a queue that its broker would ignore is delivered within the step that exposes it.

What the soundness argument needs is checked on every reachable state of small asynchronous configs explored
without the reduction: folding keeps every violation (a state's folded form violates at least what it does), a
folded delivery is judged by no property but the one that is left out, and every other step commutes with the
folding. Then reduced and unreduced explorations agree on verdicts, and a reduced counterexample, expanded to the
reference's own steps, replays through `kcm run`.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.core.bounded import (
    REDUCTIONS,
    BadConfig,
    BoundedSystem,
    load_config,
)
from kcm.checkers.core.scenario import run
from kcm.checkers.explore import bfs
from kcm.checkers.explore.verdicts import indexed_successors, state_checks, step_checks
from kcm.model import actions as A
from kcm.model.interface import EVENTUALLY
from kcm.properties import catalogue
from kcm.reference import api

from tests.explored import bfs_states

# Small asynchronous configs whose unreduced space is explored whole in a few seconds.
SESSION_EXPIRY = {"name": "session-expiry", "brokers": [0, 1], "delivery": "async", "truncation": "kip279",
                  "topics": {"t": {"0": [1, 0]}}, "families": ["data_plane", "preferred", "session_expiry"],
                  "bounds": {"max_leader_epoch": 2, "max_records": 1, "max_inflight": 4}}
FAILOVER = {"name": "failover", "brokers": [0, 1], "delivery": "async", "truncation": "high_watermark",
            "topics": {"t": {"0": [0, 1]}},
            "families": ["data_plane", "broker_failure", "controller_failover", "zombie_controller"],
            "bounds": {"max_failures": 1, "max_restarts": 1, "max_leader_epoch": 2, "max_records": 1,
                       "max_controller_epoch": 2, "max_inflight": 3}}


def unclean_async() -> dict[str, Any]:
    """`unclean` with asynchronous delivery and session expiries: an acked record is lost (6 steps)."""
    cfg = dict(load_config("unclean"), name="unclean-async", delivery="async",
               families=["data_plane", "broker_failure", "session_expiry"])
    cfg["bounds"] = dict(cfg["bounds"], max_inflight=4)
    return cfg


def reduced(cfg: dict[str, Any]) -> dict[str, Any]:
    """The config with the reduction on."""
    return dict(copy.deepcopy(cfg), reductions=["ignored_requests"])


def ignored_head(model: BoundedSystem, state: Any, action: Any) -> bool:
    """Whether the action delivers a request its broker ignores (the delivery changes nothing but its queue)."""
    if not isinstance(action, A.Deliver):
        return False
    folded: list[Any] = []
    model.deliver_ignored(state, folded)
    return action in folded


@pytest.mark.parametrize("cfg", [SESSION_EXPIRY, FAILOVER, unclean_async()], ids=lambda c: c["name"])
def test_folding_keeps_violations_and_commutes_with_every_other_step(cfg: dict[str, Any]) -> None:
    """On every reachable state u of the unreduced system, with v = u's folded form:
    - v violates every always-property u violates and reaches every state goal u reaches;
    - a folded delivery violates no step property and reaches no goal except the ones the reduction leaves out;
    - every other kept step u -a-> w is matched by v -a-> w' of the reduced system, with w' the folded form of w
      and the same step verdicts."""
    plain, folding = BoundedSystem(cfg), BoundedSystem(reduced(cfg))
    props = [p for p in catalogue.CATALOGUE if p.expectation != EVENTUALLY]
    states = bfs_states(plain)
    folded_somewhere = 0
    for u in states:
        v = folding.deliver_ignored(u)
        assert folding.deliver_ignored(v) == v  # idempotent
        bad_u, reached_u = state_checks(plain, u, props)
        bad_v, reached_v = state_checks(plain, v, props)
        assert set(bad_u) <= set(bad_v) and set(reached_u) <= set(reached_v)
        for _, action, w, effects in indexed_successors(plain, u):
            verdicts = step_checks(plain, u, action, w, effects, props)
            if ignored_head(folding, u, action):
                folded_somewhere += 1
                assert verdicts[0] == [] and set(verdicts[1]) <= set(catalogue.not_judged("ignored_requests"))
                continue
            found = folding.successor(v, action)
            assert found is not None, (action, u)
            assert found[0] == folding.deliver_ignored(w)
            assert step_checks(plain, v, action, found[0], found[1], props) == verdicts
    assert folded_somewhere  # the configs do exercise the reduction


@pytest.mark.parametrize("cfg", [SESSION_EXPIRY, FAILOVER, unclean_async()], ids=lambda c: c["name"])
def test_reduced_and_unreduced_explorations_agree(cfg: dict[str, Any]) -> None:
    """The same verdicts and counterexample lengths (steps of the explorer) from fewer states."""
    plain, folding = BoundedSystem(cfg), BoundedSystem(reduced(cfg))
    full, small = bfs.explore(plain), bfs.explore(folding)
    assert full.complete and small.complete
    assert small.distinct_states < full.distinct_states
    unreduced = full.verdicts(plain.properties())
    for name in catalogue.not_judged("ignored_requests"):
        unreduced.pop(name, None)
    assert small.verdicts(folding.properties()) == unreduced
    assert {k: len(v) for k, v in small.violations.items()} == {k: len(v) for k, v in full.violations.items()}


def test_a_reduced_trace_expands_to_the_references_steps_and_replays() -> None:
    """The folded deliveries come back as explicit `deliver` steps: replayed one by one through the reference they
    reach the reduced run's state, and a counterexample's scenario breaks its property at its last step."""
    model = BoundedSystem(reduced(SESSION_EXPIRY))
    rng = random.Random(0)
    state, trace = model.init_states()[0], []
    while len(model.expand(trace)) == len(trace) or len(trace) < 8:
        choices = indexed_successors(model, state)
        _, action, state, _ = choices[rng.randrange(len(choices))]
        trace.append(action)
    steps = model.expand(trace)
    assert len(steps) > len(trace)
    replayed = model.init_states()[0]
    for action in steps:
        replayed, _ = api.step(model.config, replayed, action)
    assert replayed == state
    assert run(model.scenario(steps)).mismatches == []

    lossy = BoundedSystem(reduced(unclean_async()))
    found = bfs.explore(lossy, stop_at={"AckedRecordsSurvive"})
    doc = lossy.scenario(lossy.expand(found.violations["AckedRecordsSurvive"]))
    doc["expect_violation"] = {"property": "AckedRecordsSurvive", "step": len(doc["steps"]) - 1}
    assert run(doc).mismatches == []


def test_the_kip320_configs_use_the_reduction_and_differ_only_in_truncation() -> None:
    """bugs/KIP-320 (kip279) and its fixed twin async-kip320 (kip320) are one cluster, bounds and reduction."""
    bug, fixed = load_config("bugs/KIP-320"), load_config("async-kip320")
    assert bug["reductions"] == ["ignored_requests"]
    assert (bug["truncation"], fixed["truncation"]) == ("kip279", "kip320")
    same = ("brokers", "delivery", "topics", "families", "bounds", "reductions")
    assert {k: bug[k] for k in same} == {k: fixed[k] for k in same}


@pytest.mark.parametrize("change, where", [
    ({"delivery": "sync"}, "needs \"delivery\": \"async\""),
    ({"variants": ["KAFKA-2729"]}, "variant switches"),
    ({"properties": ["LogsAgreeBelowHw", "SomeStaleRequestRefused"]}, "$.properties[1]: SomeStaleRequestRefused"),
    ({"properties": ["ReplicasLearnLeaders"]}, "$.properties[0]: ReplicasLearnLeaders"),
])
def test_configs_the_argument_does_not_cover_are_refused(change: dict[str, Any], where: str) -> None:
    """A synchronous config, variant switches, and properties the reduction cannot judge are config errors."""
    with pytest.raises(BadConfig, match=None) as err:
        BoundedSystem(dict(reduced(SESSION_EXPIRY), **change))
    assert where in str(err.value)


def test_the_stale_request_goal_is_left_out_of_a_reduced_config() -> None:
    """A config naming no properties checks every other one; SomeStaleRequestRefused is not judged under it."""
    names = {p.name for p in BoundedSystem(reduced(SESSION_EXPIRY)).properties()}
    assert "SomeStaleRequestRefused" not in names
    assert "SomeStaleRequestRefused" in {p.name for p in BoundedSystem(SESSION_EXPIRY).properties()}
    assert names == {p.name for p in BoundedSystem(SESSION_EXPIRY).properties()} - {"SomeStaleRequestRefused"}


def test_the_config_schema_lists_the_reductions_the_explorer_knows() -> None:
    """specs/config.schema.json enumerates exactly bounded.REDUCTIONS."""
    schema = json.loads((Path(__file__).resolve().parent.parent / "specs" / "config.schema.json").read_text())
    assert schema["properties"]["reductions"]["items"]["enum"] == list(REDUCTIONS)
