"""The contract's result document of a Cluster value: one function, reused by `kcm run`, the explorer and the oracle.

Where each field comes from: `controller` from ZooKeeper (/controller, /controller_epoch); partition and replica
states, AR and reassignments from the controller's context (what the controller believes); leader, leader epoch
and ISR from the partition state znode (-1, -1 and [] before a partition has one); `leo` from each broker's
local log; `hw` from the leader's local replica, and for a leaderless partition the highest HW among its replicas.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import NO_LEADER, Cluster
from kcm.model.names import replica_name, tp_name
from kcm.model.states import PartitionState


def result_document(state: Cluster) -> dict[str, Any]:
    """The contract's result document (without `log`) of a state."""
    zk, ctx = state.zk, state.ctx
    znodes = dict(zk.partitions)
    pstates = dict(ctx.partition_states)
    assignments = dict(zk.assignments)
    assignments.update(ctx.assignments)
    data: dict[tuple, dict[int, Any]] = {}
    for (topic, part, broker), r in state.replicas:
        data.setdefault((topic, part), {})[broker] = r
    partitions: dict[str, Any] = {}
    for tp in sorted(set(assignments) | set(pstates)):
        lai = znodes.get(tp)
        local = data.get(tp, {})
        leader = lai.leader if lai is not None else NO_LEADER
        if leader in local:
            hw = local[leader].hw
        else:
            hw = max((r.hw for r in local.values()), default=0)
        partitions[tp_name(tp)] = {
            "state": pstates.get(tp, PartitionState.NON_EXISTENT),
            "replicas": list(assignments.get(tp, ())),
            "leader": leader,
            "leader_epoch": lai.leader_epoch if lai is not None else -1,
            "isr": sorted(lai.isr) if lai is not None else [],
            "hw": hw,
            "leo": {str(b): len(r.log) for b, r in sorted(local.items())},
        }
    return {
        "controller": {"id": zk.controller, "epoch": zk.controller_epoch},
        "live_brokers": sorted(b for b, s in state.brokers if s.alive),
        "partitions": partitions,
        "replicas": {replica_name((t, p), b): s for (t, p, b), s in ctx.replica_states},
        "reassignments": {tp_name(tp): {"adding": list(r.adding), "removing": list(r.removing)}
                          for tp, r in ctx.reassignments},
    }
