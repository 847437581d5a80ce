"""The data-plane operations through the reference API: produce, fetch timing, ISR writes, consume, truncation."""

from __future__ import annotations

from typing import Any

import pytest
from kcm.model import actions as A
from kcm.model.cluster import Cluster, ClusterConfig
from kcm.model.errors import FencedLeaderEpoch, NotEnoughReplicas, NotLeaderOrFollower, StaleZkVersion
from kcm.model.fmap import freeze
from kcm.properties import dataplane as P
from kcm.reference import api, truncation

TP = ("t", 0)


def setup(brokers: tuple[int, ...] = (0, 1, 2), **cfg: Any) -> tuple[ClusterConfig, Cluster]:
    """A cluster with topic t, one partition on every broker, leader 0."""
    config = ClusterConfig(brokers, **cfg)
    state, _ = api.start(config)
    state, _ = api.step(config, state, A.CreateTopic("t", ((0, brokers),)))
    return config, state


def steps(config: ClusterConfig, state: Cluster, *actions: Any) -> Cluster:
    """The state after the actions."""
    for a in actions:
        state, _ = api.step(config, state, a)
    return state


def replica(state: Cluster, broker: int) -> Any:
    """The ReplicaData of t-0 on a broker."""
    return dict(state.replicas)[("t", 0, broker)]


def test_acks_all_refused_below_min_isr_and_nothing_appended() -> None:
    config, state = setup(min_insync_replicas=3)
    state = steps(config, state, A.IsrShrink(TP, 2))
    with pytest.raises(NotEnoughReplicas):
        api.step(config, state, A.Produce(TP, 1, "all"))
    after = steps(config, state, A.Produce(TP, 1, "1"))
    assert [replica(after, b).leo for b in (0, 1, 2)] == [1, 0, 0]  # acks=1 appends on the leader only


def test_follower_learns_the_hw_one_fetch_after_the_leader() -> None:
    config, state = setup()
    state = steps(config, state, A.Produce(TP, 2))
    seen = []
    for _ in range(3):
        state = steps(config, state, A.Replicate(TP))
        seen.append((replica(state, 0).hw, replica(state, 1).leo, replica(state, 1).hw, bool(state.ghost.acked)))
    assert seen == [(0, 2, 0, False), (2, 2, 0, True), (2, 2, 2, True)]


def test_a_lagging_follower_catches_up_in_one_replicate_and_joins_the_isr_on_its_second() -> None:
    """Rule 4 (Partition.isFollowerInSync, seed 004's updateLogReadResult): one `replicate` is one fetch round; the
    leader judges a follower by the offset it fetches from, so a follower whose fetch starts below the leader's
    high watermark reaches the leader's LEO in that fetch but joins the ISR only on its next one."""
    config, state = setup((0, 1), rules="kafka")
    state = steps(config, state, A.BrokerFail(1), A.Produce(TP, 2, "1"), A.Replicate(TP), A.BrokerStart(1))
    isr = lambda s: dict(s.zk.partitions)[TP].isr  # noqa: E731
    assert (replica(state, 0).leo, replica(state, 0).hw, replica(state, 1).leo, isr(state)) == (2, 2, 0, (0,))
    state = steps(config, state, A.Replicate(TP))
    assert (replica(state, 1).leo, isr(state)) == (2, (0,))  # caught up, fetched from 0 < HW 2: not yet in sync
    state = steps(config, state, A.Replicate(TP))
    assert isr(state) == (0, 1)  # fetched from 2 = HW: in sync


def test_consume_reads_below_the_hw_only() -> None:
    config, state = setup()
    state = steps(config, state, A.Produce(TP, 3), A.Replicate(TP))
    _, effects = api.step(config, state, A.Consume(TP, 0))
    assert effects.result == 0  # replicated but not yet committed
    state = steps(config, state, A.Replicate(TP))
    results = [api.step(config, state, A.Consume(TP, o))[1].result for o in (0, 2, 3, 5)]
    assert results == [3, 1, 0, 0]


def test_leader_isr_writes_bump_zk_version_not_leader_epoch() -> None:
    config, state = setup()
    before = dict(state.zk.partitions)[TP]
    state = steps(config, state, A.IsrShrink(TP, 2))
    after = dict(state.zk.partitions)[TP]
    assert (after.isr, after.leader_epoch, after.zk_version) == ((0, 1), before.leader_epoch, before.zk_version + 1)
    assert dict(state.ctx.leadership)[TP].isr == (0, 1)  # the controller's cache learnt it
    state = steps(config, state, A.Replicate(TP))  # 2 is caught up (LEO 0 = HW 0): it rejoins in a replicate step
    assert dict(state.zk.partitions)[TP].isr == (0, 1, 2)
    assert dict(state.zk.partitions)[TP].zk_version == before.zk_version + 2


def test_isr_shrink_with_a_stale_zk_version_is_refused() -> None:
    config, state = setup()
    stale = replica(state, 0)._replace(zk_version=replica(state, 0).zk_version - 1)
    state = state._replace(replicas=freeze({**dict(state.replicas), ("t", 0, 0): stale}))
    with pytest.raises(StaleZkVersion):
        api.step(config, state, A.IsrShrink(TP, 2))


def test_leader_never_drops_itself() -> None:
    config, state = setup()
    with pytest.raises(NotLeaderOrFollower):
        api.step(config, state, A.IsrShrink(TP, 0))


def test_reassignment_completes_in_the_replicate_step_that_fills_the_isr() -> None:
    config = ClusterConfig((0, 1, 2, 3))
    state, _ = api.start(config)
    state = steps(config, state, A.CreateTopic("t", ((0, (0, 1, 2)),)), A.Produce(TP, 1), A.Replicate(TP),
                  A.Replicate(TP), A.Reassign(TP, (1, 2, 3)))
    assert dict(state.ctx.reassignments)  # broker 3 is not in the ISR yet
    state = steps(config, state, A.Replicate(TP))  # 3 fetches at 0 < HW 1: appended, not yet in the ISR
    assert dict(state.ctx.reassignments) and replica(state, 3).leo == 1
    state = steps(config, state, A.Replicate(TP))  # 3 fetches at 1 = HW: joins, and the reassignment completes
    assert not dict(state.ctx.reassignments)
    assert dict(state.zk.assignments)[TP] == (1, 2, 3)


def test_restart_truncates_to_the_hw_only_before_kip101() -> None:
    for variant, kept in (("high_watermark", 0), ("leader_epoch", 1), ("kip320", 1)):
        config, state = setup((0, 1), truncation=variant)
        state = steps(config, state, A.Produce(TP, 1), A.Replicate(TP), A.BrokerFail(1), A.BrokerStart(1))
        assert replica(state, 1).leo == kept, variant


def test_kip320_fences_a_fetch_from_an_older_leader_epoch() -> None:
    for variant in ("kip279", "kip320"):
        config, state = setup((0, 1), truncation=variant)
        lagging = replica(state, 1)._replace(leader_epoch=replica(state, 1).leader_epoch - 1)
        state = state._replace(replicas=freeze({**dict(state.replicas), ("t", 0, 1): lagging}))
        state = steps(config, state, A.Produce(TP, 1))
        if variant == "kip320":
            with pytest.raises(FencedLeaderEpoch):
                api.step(config, state, A.Replicate(TP, 1))
        else:
            assert replica(steps(config, state, A.Replicate(TP, 1)), 1).leo == 1


def test_epoch_cache_answers() -> None:
    leader = (0, 0, 3, 3)  # epochs 0 at offsets 0-1, 3 at 2-3
    assert truncation.epoch_cache(leader) == ((0, 0), (3, 2))
    assert truncation.end_offset_kip101(leader, 3, 3) == 4
    assert truncation.end_offset_kip101(leader, 3, 1) == 2  # unknown epoch: start of the next higher one
    assert truncation.end_offset_kip279(leader, 1) == (0, 2)  # largest epoch <= 1 and its end
    assert truncation.end_offset_kip279(leader, 5) == (3, 4)


def test_truncation_offsets_on_the_kip279_logs() -> None:
    follower, leader = (0, 1), (0, 0)  # the follower's epoch 1 record was never seen by the leader (epoch 2)
    got = {v: truncation.truncation_offset(v, follower, 1, leader, 2) for v in truncation_variants()}
    assert got == {"high_watermark": 1, "leader_epoch": 2, "kip279": 1, "kip320": 1}


def truncation_variants() -> tuple[str, ...]:
    """The variants in the contract's order."""
    from kcm.model.cluster import TRUNCATION_VARIANTS

    return TRUNCATION_VARIANTS


def test_properties_reject_bad_states() -> None:
    config, state = setup((0, 1))
    state = steps(config, state, A.Produce(TP, 2), A.Replicate(TP), A.Replicate(TP), A.Replicate(TP))
    assert P.logs_agree_below_hw(config, state) and P.acked_records_survive(config, state)
    diverged = replica(state, 1)._replace(log=(0, 7))
    bad = state._replace(replicas=freeze({**dict(state.replicas), ("t", 0, 1): diverged}))
    assert P.divergent_replicas(bad) == [(TP, 0, 1, 1)]
    lost = replica(state, 0)._replace(log=(0,), hw=1)
    gone = state._replace(replicas=freeze({**dict(state.replicas), ("t", 0, 0): lost}))
    assert not P.acked_records_survive(config, gone)
    assert not P.leader_hw_monotone(config, state, None, gone, None)
    assert P.leader_hw_monotone(config, gone, None, state, None)


def test_holds_by_design_only_under_kip320_without_unclean() -> None:
    assert P.holds_by_design(ClusterConfig((0,), truncation="kip320"))
    assert not P.holds_by_design(ClusterConfig((0,), truncation="kip320", unclean_leader_election=True))
    assert not P.holds_by_design(ClusterConfig((0,)))  # high_watermark is the default and has KIP-101's bugs


def test_a_produce_pending_at_a_leader_change_is_never_acknowledged() -> None:
    config, state = setup()
    state = steps(config, state, A.Produce(TP, 1), A.Replicate(TP), A.BrokerFail(0), A.Replicate(TP), A.Replicate(TP))
    assert replica(state, 1).hw == 1  # the new leader committed the record ...
    assert state.ghost.acked == () and state.ghost.pending == ()  # ... but its producer was told it failed


def test_a_recreated_topic_starts_without_the_old_history() -> None:
    config, state = setup()
    state = steps(config, state, A.Produce(TP, 1), A.Replicate(TP), A.Replicate(TP), A.Consume(TP, 0))
    assert state.ghost.acked and state.ghost.consumed
    state = steps(config, state, A.DeleteTopic("t"), A.CreateTopic("t", ((0, (0, 1, 2)),)))
    assert state.ghost.acked == () and state.ghost.consumed == ()
    assert P.acked_records_survive(config, state) and P.consumed_records_survive(config, state)
    state = steps(config, state, A.BrokerFail(2), A.BrokerStart(2))  # an empty follower with peers keeps history
    state = steps(config, state, A.Produce(TP, 1), A.Replicate(TP), A.Replicate(TP), A.BrokerFail(2),
                  A.BrokerStart(2))
    assert state.ghost.acked == ((TP, ((0, 1),)),)  # written in leader epoch 1 (the ISR removal of 2 bumped it)
