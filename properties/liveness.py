"""Liveness: what the cluster must eventually get done, under weak fairness of the brokers' own timers.

Each condition names a *settled* state. An EVENTUALLY property holds when no fair run stays unsettled forever:
once faults and admin requests stop, followers keep fetching, the controller's requests keep arriving and
leaders keep dropping lagging followers (`BoundedSystem.fair`), and then the cluster settles. Kafka itself
waits, by design, while a broker it needs is down: those states count as settled (the wait is not the
controller's fault), as the conditions say. `checkers/explore/liveness.py` judges them on the explored graph.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import Cluster
from kcm.model.interface import EVENTUALLY, Property
from kcm.model.logs import leader_log
from kcm.properties.controller import replicas_act_on_znode
from kcm.properties.facts import declared_in, rule
from kcm.properties.reads import reads


def _up(state: Cluster) -> set[int]:
    """Brokers alive and not shutting down."""
    return {b for b, s in state.brokers if s.alive and not s.shutting_down}


# `needs` data_plane: without follower fetches nothing catches up, so every run would look stuck.
@rule("ReassignmentsFinish", EVENTUALLY, needs=("data_plane",))
@reads("brokers", "zk.partitions", "ctx.reassignments")
def reassignments_finish(model: Any, state: Cluster) -> bool:
    """Every reassignment in flight finishes, unless a broker of its target is down or the partition has no leader."""
    up = _up(state)
    led = {tp for tp, lai in state.zk.partitions if lai.leader in up}
    return all(tp not in led or not set(r.target) <= up for tp, r in state.ctx.reassignments)


@rule("DeletionsFinish", EVENTUALLY)
@reads("brokers", "ctx.assignments", "ctx.topics_to_delete")
def deletions_finish(model: Any, state: Cluster) -> bool:
    """Every topic queued for deletion is deleted, unless a broker holding one of its replicas is down."""
    up = _up(state)
    return all(any(b not in up for tp, ar in state.ctx.assignments if tp[0] == topic for b in ar)
               for topic in state.ctx.topics_to_delete)


@rule("ProducesResolve", EVENTUALLY, needs=("data_plane",))
@reads("ghost.pending", "zk.partitions", "replicas", "brokers")
def produces_resolve(model: Any, state: Cluster) -> bool:
    """Every acks=all produce is acknowledged or fails, unless its partition has no acting leader."""
    return all(leader_log(state, tp) is None for tp, _ in state.ghost.pending)


@rule("ReplicasLearnLeaders", EVENTUALLY)
@reads("brokers", "replicas", "zk.delete_topics", "zk.partitions")
def replicas_learn_leaders(model: Any, state: Cluster) -> bool:
    """Every live ISR member of a partition with a leader acts on the znode's leader and leader epoch (topics being
    deleted aside): the controller's requests reach it in the end."""
    return replicas_act_on_znode(state, lambda tp, lai: lai.isr, wait_for_inflight=False)


PROPERTIES: list[Property] = declared_in(globals())
