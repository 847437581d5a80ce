"""Each historical-bug scenario under every truncation variant: exactly where each data-plane property breaks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.explore.verdicts import state_checks, step_checks
from kcm.model import actions as A
from kcm.model.cluster import TRUNCATION_VARIANTS, Cluster, ClusterConfig
from kcm.model.errors import KcmError
from kcm.properties.dataplane import PROPERTIES
from kcm.reference import api

BUGS = Path(__file__).resolve().parent.parent / "specs" / "scenarios" / "bugs"


def load(name: str) -> dict[str, Any]:
    """A bug scenario document."""
    return json.loads((BUGS / name).read_text())


def config_of(doc: dict[str, Any], **override: Any) -> ClusterConfig:
    """The ClusterConfig of a scenario's config block, with some keys replaced."""
    c = {**doc["config"], **override}
    return ClusterConfig(brokers=tuple(c["brokers"]), unclean_leader_election=c.get("unclean_leader_election", False),
                         min_insync_replicas=c.get("min_insync_replicas", 1),
                         truncation=c.get("truncation", "high_watermark"))


def run(doc: dict[str, Any], cfg: ClusterConfig) -> tuple[Cluster, dict[str, int], list[int]]:
    """Run the steps; the first step index at which each property breaks, and what each consume returned."""
    state, _ = api.start(cfg)
    first: dict[str, int] = {}
    consumed: list[int] = []
    for i, step in enumerate(doc["steps"]):
        action = A.from_step(step)
        try:
            after, effects = api.step(cfg, state, action)
        except KcmError as err:
            assert step.get("expect_error") == err.name, f"step {i} refused: {err.message}"
            continue
        assert "expect_error" not in step, f"step {i} should have been refused"
        broken = step_checks(cfg, state, action, after, effects, PROPERTIES)[0]
        for name in broken + state_checks(cfg, after, PROPERTIES)[0]:
            first.setdefault(name, i)
        if step["op"] == "consume":
            consumed.append(effects.result)
        state = after
    return state, first, consumed


HW, LE, K279, K320 = TRUNCATION_VARIANTS
NONE: dict[str, int] = {}
LOSS_AT_7 = {"AckedRecordsSurvive": 7, "ConsumedRecordsSurvive": 7}
DIVERGENCE = {"AckedRecordsSurvive": 5, "LogsAgreeBelowHw": 6}
UNCLEAN = {"AckedRecordsSurvive": 4, "ConsumedRecordsSurvive": 4}

# scenario -> variant -> {property: first step index where it breaks}
EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "kip101-data-loss.json": {HW: LOSS_AT_7, LE: NONE, K279: NONE, K320: NONE},
    "kip101-log-divergence.json": {HW: DIVERGENCE, LE: NONE, K279: NONE, K320: NONE},
    "kip279-log-divergence.json": {HW: NONE, LE: {"LogsAgreeBelowHw": 11}, K279: NONE, K320: NONE},
    "unclean-election-data-loss.json": {HW: UNCLEAN, LE: UNCLEAN, K279: UNCLEAN, K320: UNCLEAN},
    "kafka-7128-isr-expansion.json": {HW: NONE, LE: NONE, K279: NONE, K320: NONE},
}


def test_every_bug_file_is_covered() -> None:
    """A scenario added to specs/scenarios/bugs/ needs its row in the table (KIP-320's, which need asynchronous
    delivery, have theirs in tests/test_kip320.py)."""
    assert sorted(p.name for p in BUGS.glob("*.json") if not p.name.startswith("kip320")) == sorted(EXPECTED)


@pytest.mark.parametrize("variant", TRUNCATION_VARIANTS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_property_breaks_exactly_where_expected(name: str, variant: str) -> None:
    """Each bug shows under the variant that had it, at the step the scenario drives it, and not elsewhere."""
    _, first, _ = run(load(name), config_of(load(name), truncation=variant))
    assert first == EXPECTED[name][variant]


def test_unclean_election_off_loses_nothing() -> None:
    """With unclean election disabled the partition goes offline instead and the acked record survives."""
    doc = load("unclean-election-data-loss.json")
    for variant in TRUNCATION_VARIANTS:
        cfg = config_of(doc, truncation=variant, unclean_leader_election=False)
        steps = doc["steps"][:-1] + [{"op": "broker_start", "broker": 0},
                                     {"op": "consume", "partition": "t-0", "offset": 0, "expect_records": 1}]
        state, first, consumed = run({**doc, "steps": steps}, cfg)
        assert first == {}
        assert consumed == [1, 1]
        lai = dict(state.zk.partitions)[("t", 0)]
        assert lai.leader == 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario_expect_and_consumes_hold(name: str) -> None:
    """Under the file's own config the final leader, ISR, HW, LEOs and every consume count match the file."""
    doc = load(name)
    state, _, consumed = run(doc, config_of(doc))
    assert consumed == [s["expect_records"] for s in doc["steps"] if s["op"] == "consume"]
    replicas = dict(state.replicas)
    for pname, want in doc["expect"]["partitions"].items():
        topic, part = pname.rsplit("-", 1)
        tp = (topic, int(part))
        lai = dict(state.zk.partitions)[tp]
        got = {"leader": lai.leader, "leader_epoch": lai.leader_epoch, "isr": list(lai.isr),
               "state": dict(state.ctx.partition_states).get(tp),
               "hw": replicas[(topic, tp[1], lai.leader)].hw,
               "leo": {str(b): d.leo for (t, p, b), d in replicas.items() if (t, p) == tp}}
        assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("variant", TRUNCATION_VARIANTS)
def test_kafka_7128_variant_admits_the_lagging_follower(variant: str) -> None:
    """With the fix reverted the last fetch lets broker 3 into the ISR below the new leader's epoch start offset."""
    doc = load("kafka-7128-isr-expansion.json")
    cfg = config_of(doc, truncation=variant)._replace(variants=("KAFKA-7128",))
    state, first, _ = run(doc, cfg)
    assert first == {"IsrJoinsReachEpochStart": len(doc["steps"]) - 1}
    assert dict(state.zk.partitions)[("t", 0)].isr == (1, 2, 3)
    # One more fetch: under the fixed rule broker 3, now at the epoch start offset, joins too.
    fixed, _, _ = run({**doc, "steps": doc["steps"] + [{"op": "replicate", "partition": "t-0", "broker": 3}]},
                      config_of(doc, truncation=variant))
    assert dict(fixed.zk.partitions)[("t", 0)].isr == (1, 2, 3)
