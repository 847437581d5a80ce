"""Txn's reads that leave a field frozen: they answer what the thawed field would, and copy nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kcm.model.actions import CreateTopic
from kcm.model.cluster import ClusterConfig
from kcm.model.fmap import freeze
from kcm.model.txn import Txn, draft_has, draft_lookup, draft_peek, draft_sorted_items
from kcm.reference import api

CONFIG = ClusterConfig((0, 1, 2))
keys = st.tuples(st.sampled_from("tu"), st.integers(0, 3))
maps = st.dictionaries(keys, st.integers(0, 5), max_size=6)
sets = st.sets(st.sampled_from("abcde"))


def _running():
    state, _ = api.start(CONFIG)
    state, _ = api.step(CONFIG, state, CreateTopic("t", ((0, (0, 1, 2)), (1, (1, 2)))))
    return state


def _txn_with(assignments: dict, delete_topics: set) -> Txn:
    state = _running()
    zk = state.zk._replace(assignments=freeze(assignments), delete_topics=tuple(sorted(delete_topics)))
    return Txn(CONFIG, state._replace(zk=zk))


@given(maps, keys, sets, st.sampled_from("abcdef"))
def test_frozen_reads_answer_as_the_thawed_field_and_thaw_nothing(assignments, key, topics, topic):
    t = _txn_with(assignments, topics)
    frozen = (draft_lookup(t.zk, "assignments", key, -1), draft_has(t.zk, "assignments", key),
              draft_has(t.zk, "delete_topics", topic),
              list(draft_sorted_items(t.zk, "assignments")), set(draft_peek(t.zk, "delete_topics")))
    assert "assignments" not in t.zk.__dict__ and "delete_topics" not in t.zk.__dict__
    assert frozen == (assignments.get(key, -1), key in assignments, topic in topics,
                      sorted(assignments.items()), topics)
    t.zk.assignments[("v", 9)] = 1  # thawed and written: the reads now see the working copy
    t.zk.delete_topics.add("f")
    assert draft_lookup(t.zk, "assignments", ("v", 9)) == 1 and draft_has(t.zk, "assignments", ("v", 9))
    assert draft_has(t.zk, "delete_topics", "f") and draft_peek(t.zk, "delete_topics") is t.zk.delete_topics
    assert list(draft_sorted_items(t.zk, "assignments")) == sorted({**assignments, ("v", 9): 1}.items())


@given(sets, st.sampled_from("abcdef"))
def test_discard_removes_a_set_member_and_leaves_an_absent_one_unthawed(topics, topic):
    t = _txn_with({}, topics)
    t.zk.discard("delete_topics", topic)
    assert ("delete_topics" in t.zk.__dict__) == (topic in topics)
    state, _ = t.commit()
    assert state.zk.delete_topics == tuple(sorted(topics - {topic}))


def test_cluster_map_reads_leave_the_map_frozen_until_it_is_thawed():
    state = _running()
    t = Txn(CONFIG, state)
    assert t.lookup("brokers", 1) == dict(state.brokers)[1] and t.lookup("brokers", 7) is None
    assert list(t.items("replicas")) == list(state.replicas)
    assert "brokers" not in t.__dict__ and "replicas" not in t.__dict__
    key = state.replicas[0][0]
    for k, data in t.items("replicas"):  # a walk may write the map it walks
        t.replicas[k] = data._replace(hw=data.hw + 1)
    assert t.lookup("replicas", key).hw == state.replicas[0][1].hw + 1
    assert dict(t.items("replicas"))[key].hw == state.replicas[0][1].hw + 1
    assert t.commit()[0] != state
