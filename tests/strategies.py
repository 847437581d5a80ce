"""Hypothesis strategies for model values, shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st
from kcm.model.cluster import (
    BrokerState,
    Cluster,
    ControllerContext,
    Ghost,
    LeaderAndIsr,
    Reassignment,
    ReplicaData,
    Zk,
)
from kcm.model.fmap import freeze
from kcm.model.states import PartitionState, ReplicaState

BROKERS = st.integers(0, 4)
TOPICS = st.sampled_from(["t", "u", "a-b"])
TPS = st.tuples(TOPICS, st.integers(0, 2))
SMALL = st.integers(-1, 5)
BROKER_TUPLES = st.lists(BROKERS, max_size=4, unique=True).map(tuple)
SORTED_BROKERS = BROKER_TUPLES.map(lambda t: tuple(sorted(t)))


def fmaps(keys, values, max_size=4):
    """Frozen maps with keys and values from the given strategies."""
    return st.dictionaries(keys, values, max_size=max_size).map(freeze)


leader_and_isr = st.builds(LeaderAndIsr, SMALL, SMALL, SORTED_BROKERS, SMALL, SMALL)
zk = st.builds(Zk, SMALL, SMALL, SMALL, SORTED_BROKERS, fmaps(TPS, BROKER_TUPLES), fmaps(TPS, leader_and_isr),
               fmaps(TPS, BROKER_TUPLES), st.lists(TOPICS, unique=True, max_size=2).map(lambda t: tuple(sorted(t))))
ctx = st.builds(
    ControllerContext, SMALL, SMALL, SMALL, SORTED_BROKERS, SORTED_BROKERS,
    fmaps(TPS, BROKER_TUPLES), fmaps(TPS, leader_and_isr),
    fmaps(TPS, st.sampled_from(PartitionState.ALL)),
    fmaps(st.tuples(TOPICS, st.integers(0, 2), BROKERS), st.sampled_from(ReplicaState.ALL)),
    fmaps(TPS, st.builds(Reassignment, BROKER_TUPLES, BROKER_TUPLES)),
    st.just(()), st.just(()),
)
replica = st.builds(ReplicaData, st.lists(st.integers(0, 3), max_size=4).map(tuple), st.integers(0, 4), SMALL,
                    SMALL, SORTED_BROKERS, SMALL, BROKER_TUPLES)
clusters = st.builds(
    Cluster,
    fmaps(BROKERS, st.builds(BrokerState, st.booleans(), st.booleans(), SMALL, SMALL)),
    zk,
    ctx,
    fmaps(st.tuples(TOPICS, st.integers(0, 2), BROKERS), replica),
    st.builds(Ghost, fmaps(st.tuples(TOPICS, st.integers(0, 2), SMALL), BROKERS)),
)
