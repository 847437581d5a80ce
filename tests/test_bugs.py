"""Bug variants: each rediscovered by exploration from its switch alone, each fixed config clean, and the
mechanisms they need (asynchronous delivery, zombie controllers, fast bounces) behaving as Kafka's fixed
controller does when no variant is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kcm.checkers.gate.bug_catalogue import VARIANTS, is_switch
from kcm.checkers.gate.bugs import check_all, check_variant, config_name
from kcm.model import actions as A
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import NoRequestInFlight, NotController, StaleControllerEpoch
from kcm.properties.catalogue import by_id
from kcm.reference import api

from kcm.cli import main as kcm_main

SPECS = Path(__file__).resolve().parent.parent / "specs"
GENERATED = SPECS / "scenarios" / "bugs" / "generated"
WITH_CONFIG = [v for v in VARIANTS if (SPECS / "configs" / f"{config_name(v)}.json").exists()]


def _run(config: ClusterConfig, *steps):
    state, _ = api.start(config)
    for action in steps:
        state, effects = api.step(config, state, action)
    return state, effects


@pytest.mark.parametrize("variant", WITH_CONFIG, ids=lambda v: v.name)
def test_variant_rediscovered_and_fixed_clean(variant):
    row = check_variant(variant)
    assert row["rediscovered"], f"{variant.name}: none of {variant.breaks} violated"
    assert row["property"] in variant.breaks
    assert row["fixed_clean"], f"{variant.name} fixed: {row['fixed_violations']}"
    # The committed counterexample is the one exploration finds today.
    committed = json.loads((GENERATED / f"{variant.name}.json").read_text())
    assert committed["steps"] == row["scenario"]["steps"]
    assert committed["expect_violation"] == row["scenario"]["expect_violation"]


def test_the_rows_are_the_same_on_several_processes():
    names = ["KAFKA-6082", "KAFKA-4214", "KIP-106", "KAFKA-9478"]

    def timeless(rows):
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in rows]

    assert timeless(check_all(names, jobs=2)) == timeless(check_all(names, jobs=1))


def test_every_catalogued_variant_with_a_config_is_listed():
    names = {v.name for v in VARIANTS}
    shipped = {p.stem for p in (SPECS / "configs" / "bugs").glob("*.json")}
    assert shipped <= names


def test_generated_scenarios_replay_through_kcm_run(capsys):
    files = sorted(GENERATED.glob("*.json"))
    assert files
    for path in files:
        assert kcm_main(["run", str(path)]) == 0, path.name
    capsys.readouterr()


def test_expect_violation_that_does_not_happen_fails_the_run(tmp_path, capsys):
    doc = json.loads((GENERATED / "KAFKA-6082.json").read_text())
    doc["config"]["variants"] = []  # fixed: the zombie's write is refused, nothing is violated
    doc["steps"][-1]["expect_error"] = "StaleControllerEpoch"
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps(doc))
    assert kcm_main(["run", str(path)]) == 1
    captured = capsys.readouterr()
    assert "never violated" in captured.out + captured.err


def test_unknown_variant_is_an_invalid_scenario(tmp_path, capsys):
    doc = {"config": {"brokers": [0], "variants": ["KAFKA-0000"]}, "steps": []}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert kcm_main(["run", str(path)]) == 2
    assert "KAFKA-0000" in capsys.readouterr().err


def test_async_delivery_makes_stale_controller_epoch_reachable():
    config = ClusterConfig(brokers=(0, 1, 2), rules="kafka", delivery="async")
    state, _ = _run(config, A.CreateTopic("t", ((0, (0, 1)),)), A.ControllerResign(2))
    assert dict(state.brokers)[1].controller_epoch == 0  # nothing has arrived yet
    state, _ = _run_from(config, state, A.Deliver(1, 2))
    assert dict(state.brokers)[1].controller_epoch == 2
    state, effects = api.step(config, state, A.Deliver(1, 1))
    assert effects.result is False
    assert any("StaleControllerEpoch" in n for n in effects.notes)
    with pytest.raises(NoRequestInFlight):
        api.step(config, state, A.Deliver(0, 7))


def _run_from(config, state, *steps):
    effects = None
    for action in steps:
        state, effects = api.step(config, state, action)
    return state, effects


def test_requests_to_a_dead_broker_are_dropped():
    config = ClusterConfig(brokers=(0, 1, 2), delivery="async")
    state, _ = _run(config, A.CreateTopic("t", ((0, (0, 1)),)))
    assert any(b == 1 for (b, _e), _q in state.inflight)
    state, _ = api.step(config, state, A.BrokerFail(1))
    assert not any(b == 1 for (b, _e), _q in state.inflight)


def test_a_zombie_controller_is_fenced_by_the_controller_epoch_znode():
    config = ClusterConfig(brokers=(0, 1, 2), zombie_controller=True)
    state, _ = _run(config, A.CreateTopic("t", ((0, (0, 1, 2)),)), A.ControllerResign(1))
    assert state.zombie is not None and state.zombie.controller_id == 0
    with pytest.raises(StaleControllerEpoch):
        api.step(config, state, A.ZombieElect(("t", 0)))
    buggy = config._replace(variants=("KAFKA-6082",))
    after, _ = api.step(buggy, state, A.ZombieElect(("t", 0)))
    assert after.zombie is None
    assert dict(after.zk.partitions)[("t", 0)].controller_epoch == 1  # written by the old epoch
    model = type("M", (), {"config": buggy})()
    assert not by_id("ControllerCacheMatchesZk").condition(model, after)
    with pytest.raises(NotController):
        api.step(buggy, after, A.ZombieElect(("t", 0)))


def test_a_fast_bounce_is_handled_as_failure_then_startup():
    config = ClusterConfig(brokers=(0, 1, 2))
    state, _ = _run(config, A.CreateTopic("t", ((0, (1, 0)),)), A.BrokerBounce(1))
    lai = dict(state.zk.partitions)[("t", 0)]
    assert lai.leader == 0 and lai.leader_epoch == 1  # broker 1 lost leadership when its session went
    data = dict(state.replicas)[("t", 0, 1)]
    assert (data.leader, data.leader_epoch) == (0, 1)  # and learned the new leader on startup
    assert dict(state.brokers)[1].incarnation == 1
    model = type("M", (), {"config": config})()
    assert by_id("LivenessView").condition(model, state)


def test_the_fixed_controller_keeps_every_property_with_async_delivery_zombies_and_bounces():
    from kcm.checkers.core.bounded import BoundedSystem, load_config
    from kcm.checkers.explore import bfs

    model = BoundedSystem(load_config("async"))
    found = bfs.explore(model)
    assert found.complete and found.distinct_states > 10_000
    assert not found.violations, sorted(found.violations)
    # Requests of a replaced controller do arrive after the new one's, and are refused.
    assert {"SomeControllerFailover", "SomeStaleRequestRefused"} <= found.reached


def test_the_catalogue_and_the_model_name_the_same_switches_each_read_where_catalogued():
    from kcm.model.variants import SWITCHES

    switches = [v for v in VARIANTS if is_switch(v)]
    assert sorted(v.name for v in switches) == sorted(SWITCHES)
    # a variant that lists a switch lists its own, and one the model reads
    assert all(v.on.get("variants", [v.name]) == [v.name] for v in VARIANTS)
    root = SPECS.parent
    for v in VARIANTS:
        source = (root / v.where).read_text()
        assert not is_switch(v) or f'has("{v.name}")' in source, v.name
