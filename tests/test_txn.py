"""Txn: lazy thawing and copy-on-write commits give the values a full freeze gives, sharing what is unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kcm.model.actions import BrokerFail, CreateTopic, PreferredElection
from kcm.model.cluster import ClusterConfig
from kcm.model.fmap import freeze
from kcm.model.states import PartitionState as P
from kcm.model.txn import Txn, freeze_map, freeze_set
from kcm.reference import api

CONFIG = ClusterConfig((0, 1, 2))
maps = st.dictionaries(st.tuples(st.sampled_from("tu"), st.integers(0, 3)), st.integers(0, 5), max_size=6)


def _running():
    state, _ = api.start(CONFIG)
    state, _ = api.step(CONFIG, state, CreateTopic("t", ((0, (0, 1, 2)),)))
    return state


@given(maps, maps)
def test_freeze_map_equals_a_fresh_freeze(before, after):
    original = freeze(before)
    assert freeze_map(dict(after), original) == freeze(after)


@given(maps)
def test_freeze_map_returns_the_original_when_nothing_changed(d):
    original = freeze(d)
    assert freeze_map(dict(original), original) is original


@given(st.sets(st.integers(0, 9)), st.sets(st.integers(0, 9)))
def test_freeze_set_equals_sorting(before, after):
    original = tuple(sorted(before))
    frozen = freeze_set(set(after), original)
    assert frozen == tuple(sorted(after))
    assert (frozen is original) == (after == before)


def test_a_step_that_changes_nothing_returns_the_same_state():
    state = _running()
    t = Txn(CONFIG, state)
    assert t.ctx.partition_states and t.zk.brokers and t.replicas  # read, thawed, not changed
    assert t.commit()[0] is state
    nxt, _ = api.step(CONFIG, state, PreferredElection())  # the preferred leader already leads
    assert nxt is state


def test_a_commit_shares_every_part_it_did_not_change():
    state = _running()
    t = Txn(CONFIG, state)
    t.ctx.partition_states[("t", 0)] = P.OFFLINE
    nxt, _ = t.commit()
    assert nxt != state and dict(nxt.ctx.partition_states)[("t", 0)] == P.OFFLINE
    assert nxt.zk is state.zk and nxt.replicas is state.replicas and nxt.brokers is state.brokers
    assert nxt.ctx.replica_states is state.ctx.replica_states and nxt.ctx.assignments is state.ctx.assignments


def test_a_step_equals_the_value_frozen_from_scratch():
    state = _running()
    nxt, _ = api.step(CONFIG, state, BrokerFail(0))
    for part in (nxt.brokers, nxt.replicas, nxt.zk.partitions, nxt.ctx.replica_states, nxt.ghost.elected):
        assert part == freeze(dict(part))
    assert nxt.zk.brokers == (1, 2) and nxt.ctx.controller_id == 1


def test_an_unknown_attribute_is_an_attribute_error():
    t = Txn(CONFIG, _running())
    assert getattr(t, "nothing", None) is None
    assert getattr(t.ctx, "nothing", None) is None
    assert t.request_batch is None


def test_discard_removes_a_present_key_and_leaves_an_absent_one_unthawed():
    state = _running()
    t = Txn(CONFIG, state._replace(ghost=state.ghost._replace(pending=freeze({("t", 0): ((0, 1),)}))))
    t.ghost.discard("acked", ("t", 0))
    assert "acked" not in t.ghost.__dict__  # nothing to remove: the field was not copied
    t.ghost.discard("pending", ("t", 1))
    assert "pending" not in t.ghost.__dict__
    t.ghost.discard("pending", ("t", 0))
    assert t.commit()[0].ghost.pending == ()
