"""The data-plane properties through the Model interface: a breadth-first search over the reference reaches them.

The search starts after a topic t-0 on brokers [0, 1] is created and tries produce, replicate, isr_shrink, crash,
restart and preferred election. With unclean election on it reaches the loss of an acknowledged record and a
divergent log; with it off, under kip320 truncation, no safety property breaks within the bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.gate.hypothesis_machine import ContractModel
from kcm.model import actions as A
from kcm.model.canonical import relative_zk_versions as canonical_zk_versions
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import KcmError
from kcm.model.interface import ALWAYS, SOMETIMES, STEP
from kcm.properties.dataplane import PROPERTIES
from kcm.reference import api

TP = ("t", 0)
CONFIGS = Path(__file__).resolve().parent.parent / "specs" / "configs"
ALPHABET = (A.Produce(TP, 1, "all"), A.Replicate(TP), A.IsrShrink(TP, 1), A.BrokerFail(0), A.BrokerFail(1),
            A.BrokerStart(0), A.BrokerStart(1), A.PreferredElection())


def explore(config: ClusterConfig, depth: int, alphabet: tuple[Any, ...] = ALPHABET
            ) -> tuple[dict[str, list[Any]], set[str], int]:
    """BFS to `depth` steps: the first path breaking each ALWAYS/STEP property, the SOMETIMES ones reached, states."""
    model = ContractModel(config, api.start, api.step, PROPERTIES)
    start = model.init_states()[0]
    start, _ = model.step(start, A.CreateTopic("t", ((0, config.brokers),)))
    seen = {model.fingerprint(start)}
    frontier: list[tuple[Any, list[Any]]] = [(start, [])]
    broken: dict[str, list[Any]] = {}
    reached: set[str] = set()
    for _ in range(depth):
        nxt = []
        for state, path in frontier:
            for action in alphabet:
                try:
                    after, effects = model.step(state, action)
                except KcmError:
                    continue
                for p in model.properties():
                    if p.expectation == ALWAYS and not p.condition(model, after):
                        broken.setdefault(p.name, path + [action])
                    elif p.expectation == STEP and not p.condition(model, state, action, after, effects):
                        broken.setdefault(p.name, path + [action])
                    elif p.expectation == SOMETIMES and p.condition(model, after):
                        reached.add(p.name)
                fp = model.fingerprint(after)
                if fp not in seen:
                    seen.add(fp)
                    nxt.append((after, path + [action]))
        frontier = nxt
    return broken, reached, len(seen)


def test_unclean_election_loss_is_reached_by_search() -> None:
    broken, reached, _ = explore(ClusterConfig((0, 1), unclean_leader_election=True, truncation="kip320"), 4)
    # Produce, shrink the ISR to the leader (the HW passes the record: acknowledged), crash the leader: the empty
    # replica is elected. One more produce on it gives a record at the offset the old leader holds below its HW.
    assert broken["AckedRecordsSurvive"] == [A.Produce(TP), A.IsrShrink(TP, 1), A.BrokerFail(0)]
    assert broken["LogsAgreeBelowHw"] == [A.Produce(TP), A.IsrShrink(TP, 1), A.BrokerFail(0), A.Produce(TP)]
    assert set(broken) == {"AckedRecordsSurvive", "LogsAgreeBelowHw"}
    assert "SomeRecordAcked" in reached


def test_kip320_without_unclean_keeps_every_property_within_the_bound() -> None:
    broken, reached, states = explore(ClusterConfig((0, 1), truncation="kip320"), 5)
    assert broken == {}
    assert "SomeRecordAcked" in reached and states > 100


CRASHES = (A.Produce(TP), A.Replicate(TP), A.BrokerFail(0), A.BrokerFail(1), A.BrokerFail(2))


@pytest.mark.slow
def test_kip101_loss_is_reached_by_search_under_high_watermark_only() -> None:
    # Three replicas: after two fetches the leader has acknowledged the record but the followers' HW is 0; the
    # leader dies, the new leader's epoch makes the last follower truncate to its HW, then the new leader dies too.
    broken, _, _ = explore(ClusterConfig((0, 1, 2)), 6, CRASHES)
    loss = [A.Produce(TP), A.Replicate(TP), A.Replicate(TP), A.BrokerFail(0), A.BrokerFail(1)]
    assert broken["AckedRecordsSurvive"] == loss
    for variant in ("leader_epoch", "kip279", "kip320"):
        assert explore(ClusterConfig((0, 1, 2), truncation=variant), 6, CRASHES)[0] == {}, variant


SMALL = {"name": "small-data-plane", "brokers": [0, 1], "topics": {"t": {"0": [0, 1]}},
         "families": ["broker_failure", "data_plane"],
         "bounds": {"max_failures": 1, "max_restarts": 1, "max_leader_epoch": 3, "max_records": 1}}


def test_isr_shrink_expand_cycles_fold_into_one_state() -> None:
    # A leader's shrink then expansion leaves everything as it was but the zkVersions; the canonical form renumbers
    # them, so the explorer sees one state where the raw values would make a new one per cycle.
    model = BoundedSystem(SMALL)
    cycle = model.next_state(model.next_state(model.init_states()[0], A.IsrShrink(TP, 1)), A.Replicate(TP))
    state = cycle
    for _ in range(2):
        state = model.next_state(state, A.IsrShrink(TP, 1))
        state = model.next_state(state, A.Replicate(TP))
    assert state != cycle and dict(state.zk.partitions)[TP].zk_version == 6
    assert model.fingerprint(state) == model.fingerprint(cycle)
    shrunk = model.next_state(state, A.IsrShrink(TP, 1))
    assert model.fingerprint(shrunk) != model.fingerprint(cycle)


def test_canonical_form_keeps_which_zk_versions_are_equal() -> None:
    # The follower keeps the zkVersion of its last LeaderAndIsr; the leader's write goes through only while its own
    # equals the znode's. Renumbering must keep both facts.
    model = BoundedSystem(SMALL)
    state = model.init_states()[0]
    for _ in range(4):
        state = model.next_state(state, A.IsrShrink(TP, 1))
        state = model.next_state(state, A.Replicate(TP))
    canon = canonical_zk_versions(state)
    versions = {k[2]: d.zk_version for k, d in canon.replicas}
    assert dict(canon.zk.partitions)[TP].zk_version == versions[0] == 1 and versions[1] == 0
    assert canonical_zk_versions(canon) == canon
    again = model.next_state(canon, A.IsrShrink(TP, 1))
    assert model.fingerprint(again) == model.fingerprint(model.next_state(state, A.IsrShrink(TP, 1)))


def test_data_plane_exploration_closes() -> None:
    found = bfs.explore(BoundedSystem(SMALL))
    verdicts = found.verdicts(BoundedSystem(SMALL).properties())
    assert found.complete and found.distinct_states < 1000
    assert verdicts["SomeRecordAcked"] == "reached" and verdicts["AckedRecordsSurvive"] == "holds"


@pytest.mark.slow
def test_tla_sized_high_watermark_config_loses_an_acked_record_in_five_steps() -> None:
    # KIP-101's loss: the leader commits, dies before its followers learn the HW, the new leader's epoch makes the
    # last follower truncate to its HW, then the new leader dies too. BFS gives the shortest trace.
    model = BoundedSystem(load_config("tla-high-watermark"))
    found = bfs.explore(model)
    assert found.complete
    trace = found.violations["AckedRecordsSurvive"]
    assert trace[:3] == [A.Produce(TP), A.Replicate(TP), A.Replicate(TP)]
    assert sorted(trace[3:]) == [A.BrokerFail(1), A.BrokerFail(2)]  # either order is a shortest trace
    assert len(found.violations["LogsAgreeBelowHw"]) == 6


@pytest.mark.slow
def test_tla_sized_kip320_config_keeps_every_property() -> None:
    model = BoundedSystem(load_config("tla-kip320"))
    found = bfs.explore(model)
    assert found.complete and found.violations == {}
    assert "SomeRecordAcked" in found.reached


@pytest.mark.slow
def test_kafka_7128_variant_is_found_by_the_explorer_and_the_fix_holds() -> None:
    # The controller's ISR shrink bumps the leader epoch past the leader's one record while the HW still lags; the
    # restarted follower fetches at offset 0 >= HW and, with the fix reverted, joins the ISR below the epoch start.
    base = load_config(str(CONFIGS / "bugs" / "KAFKA-7128.json"))
    assert "variants" not in base  # the config is the fixed model; `kcm bugs` adds the variant
    cfg = {**base, "variants": ["KAFKA-7128"]}
    found = bfs.explore(BoundedSystem(cfg))
    assert found.complete
    trace = found.violations["IsrJoinsReachEpochStart"]
    assert trace[0] == A.Produce(TP) and trace[-1] == A.Replicate(TP) and len(trace) == 4
    # a follower fails and comes back (which one is BFS's choice among equally short traces)
    assert isinstance(trace[1], A.BrokerFail) and trace[2] == A.BrokerStart(trace[1].broker)
    # The contract's fetch hands the follower every record at once, so the early admission loses no data here.
    assert set(found.violations) == {"IsrJoinsReachEpochStart"}
    fixed = bfs.explore(BoundedSystem({**cfg, "variants": []}))
    assert fixed.complete and fixed.violations == {}


def test_variants_key_is_checked() -> None:
    with pytest.raises(BadConfig, match="variants"):
        BoundedSystem({**SMALL, "variants": "KAFKA-7128"})


def test_consumer_reads_are_explored_only_with_the_consume_family() -> None:
    # Without a consumer nothing is ever consumed: the reachability goal is left out rather than "never reached".
    plain = BoundedSystem(SMALL)
    assert "SomeRecordConsumed" not in {p.name for p in plain.properties()}
    consuming = BoundedSystem({**SMALL, "families": SMALL["families"] + ["consume"]})
    committed = plain.init_states()[0]
    for action in (A.Produce(TP), A.Replicate(TP), A.Replicate(TP)):
        committed = plain.next_state(committed, action)
    assert A.Consume(TP, 0) not in plain.actions(committed) and A.Consume(TP, 0) in consuming.actions(committed)
    read = consuming.next_state(committed, A.Consume(TP, 0))
    assert read is not None and A.Consume(TP, 0) not in consuming.actions(read)  # nothing new left to read
    found = bfs.explore(consuming)
    assert found.complete and found.violations == {}
    assert {"SomeRecordConsumed", "SomeRecordAcked"} <= found.reached


def test_unclean_election_loses_a_consumed_record() -> None:
    # A record committed with the ISR shrunk to the leader is read by a consumer; the leader dies and the stale
    # follower is elected uncleanly: the consumer has seen a record the log no longer holds.
    cfg = {**SMALL, "families": SMALL["families"] + ["consume"], "unclean_leader_election": True}
    found = bfs.explore(BoundedSystem(cfg))
    trace = found.violations["ConsumedRecordsSurvive"]
    assert len(trace) == 4 and trace[-1] == A.BrokerFail(0) and trace[-2] == A.Consume(TP, 0)
    assert sorted(map(repr, trace[:2])) == sorted(map(repr, [A.Produce(TP), A.IsrShrink(TP, 1)]))  # either order


def test_reachability_goals_follow_the_families() -> None:
    from kcm.properties import catalogue

    assert {n for n in catalogue.ids() if catalogue.facts(n).needs} >= {"SomeRecordAcked", "ReassignmentsFinish"}
    names = {p.name for p in BoundedSystem(SMALL).properties()}
    assert "SomeRecordAcked" in names and "SomeReassignmentCompletes" not in names
    assert "SomeStaleRequestRefused" not in names and "SomeTopicDeletionCompletes" not in names
    asynchronous = BoundedSystem({**SMALL, "delivery": "async"})
    assert "SomeStaleRequestRefused" in {p.name for p in asynchronous.properties()}
    # A config that names a goal gets it checked (and reported) whatever its families.
    named = BoundedSystem({**SMALL, "properties": ["SomeTopicDeletionCompletes"]})
    assert [p.name for p in named.properties()] == ["SomeTopicDeletionCompletes"]
