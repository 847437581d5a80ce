"""Renaming brokers: a broker permutation applied to every field of a Cluster (and of an action) that holds an id.

A permutation is a dict broker -> broker; ids it does not name, and the "none" markers (-1), stay as they are.
Every map is rebuilt sorted and every sorted tuple (ISRs, live broker lists) re-sorted, so a renamed state is
a canonical Cluster value with its own stable fingerprint. Replica order (AR, RAR, OAR) is kept: it means
something (the preferred replica comes first).
"""

from __future__ import annotations

from typing import Any

from kcm.model import actions as A
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

Perm = dict[int, int]


def _b(perm: Perm, broker: int) -> int:
    return perm.get(broker, broker)


def _ordered(perm: Perm, brokers: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(perm.get(b, b) for b in brokers)


def _sorted(perm: Perm, brokers: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(perm.get(b, b) for b in brokers))


def _lai(perm: Perm, lai: LeaderAndIsr) -> LeaderAndIsr:
    return lai._replace(leader=_b(perm, lai.leader), isr=_sorted(perm, lai.isr))


def _replica_key(perm: Perm, key: tuple) -> tuple:
    topic, part, broker = key
    return (topic, part, _b(perm, broker))


def _replica_data(perm: Perm, d: ReplicaData) -> ReplicaData:
    return d._replace(leader=_b(perm, d.leader), isr=_sorted(perm, d.isr), replicas=_ordered(perm, d.replicas),
                      remote_leo=tuple(sorted((_b(perm, b), leo) for b, leo in d.remote_leo)))


def rename_zk(perm: Perm, zk: Zk) -> Zk:
    """ZooKeeper's tree with every broker id renamed."""
    return zk._replace(
        controller=_b(perm, zk.controller),
        brokers=_sorted(perm, zk.brokers),
        assignments=tuple((tp, _ordered(perm, ar)) for tp, ar in zk.assignments),
        partitions=tuple((tp, _lai(perm, lai)) for tp, lai in zk.partitions),
        reassign_partitions=tuple((tp, _ordered(perm, rar)) for tp, rar in zk.reassign_partitions),
        reassign_original=tuple((tp, _ordered(perm, oar)) for tp, oar in zk.reassign_original))


# Controller events whose argument starts with a broker id (the others name a topic).
BROKER_EVENTS = ("BrokerChange",)


def rename_context(perm: Perm, c: ControllerContext) -> ControllerContext:
    """The controller's context with every broker id renamed."""
    return c._replace(
        controller_id=_b(perm, c.controller_id),
        live_brokers=_sorted(perm, c.live_brokers),
        shutting_down=_sorted(perm, c.shutting_down),
        assignments=tuple((tp, _ordered(perm, ar)) for tp, ar in c.assignments),
        leadership=tuple((tp, _lai(perm, lai)) for tp, lai in c.leadership),
        replica_states=tuple(sorted((_replica_key(perm, k), s) for k, s in c.replica_states)),
        reassignments=tuple((tp, Reassignment(_ordered(perm, r.original), _ordered(perm, r.target)))
                            for tp, r in c.reassignments),
        events=tuple((name, (_b(perm, arg[0]), *arg[1:]) if name in BROKER_EVENTS else arg) for name, arg in c.events))


def rename_ghost(perm: Perm, g: Ghost) -> Ghost:
    """The history the properties read, with every elected leader renamed (the rest holds no broker id)."""
    return g._replace(elected=tuple((k, _b(perm, leader)) for k, leader in g.elected))


def rename_cluster(perm: Perm, state: Cluster) -> Cluster:
    """The same cluster with broker b called perm[b] everywhere."""
    if not perm:
        return state
    brokers: list[tuple[int, BrokerState]] = sorted((_b(perm, b), s) for b, s in state.brokers)
    return Cluster(
        brokers=tuple(brokers),
        zk=rename_zk(perm, state.zk),
        ctx=rename_context(perm, state.ctx),
        replicas=tuple(sorted((_replica_key(perm, k), _replica_data(perm, d)) for k, d in state.replicas)),
        ghost=rename_ghost(perm, state.ghost))


_RENAME = {
    A.BROKER: _b,
    A.BROKER_LIST: _ordered,
    A.ASSIGNMENT: lambda perm, assignment: tuple((p, _ordered(perm, r)) for p, r in assignment),
    A.REPLICA_LIST: lambda perm, replicas: tuple((tp, _b(perm, b)) for tp, b in replicas),
}


def rename_action(perm: Perm, action: Any) -> Any:
    """The same action with every broker id it names renamed, as its BROKER_FIELDS declare."""
    fields = type(action).BROKER_FIELDS
    if not fields:
        return action
    return action._replace(**{name: _RENAME[kind](perm, getattr(action, name)) for name, kind in fields})


__all__ = ["Perm", "rename_action", "rename_cluster", "rename_context", "rename_ghost", "rename_zk"]
