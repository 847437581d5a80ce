"""A mutable working copy of one Cluster for one operation.

Operations are pure functions `state -> (state, effects)`: they thaw the value into a `Txn`, work on
it the way Kafka's controller works on its caches, and `commit()` freezes the result. An operation
that raises simply drops its Txn, so a refused step leaves the original value untouched.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kcm.model.cluster import Cluster, ClusterConfig, ControllerContext, Ghost, Zk
from kcm.model.effects import Effects, Request, StateChange
from kcm.model.fmap import freeze
from kcm.model.names import replica_name, tp_name
from kcm.model.states import PartitionState, ReplicaState
from kcm.model.transitions import partition_move, replica_move

# Fields of each record that are frozen maps (thawed to dicts) or sorted tuples (thawed to sets).
_ZK_MAPS = ("assignments", "partitions", "reassign_partitions")
_ZK_SETS = ("brokers", "delete_topics")
_CTX_MAPS = ("assignments", "leadership", "partition_states", "replica_states", "reassignments")
_CTX_SETS = ("live_brokers", "shutting_down", "topics_to_delete", "topics_ineligible")
_GHOST_MAPS = ("elected", "acked", "consumed", "pending")


def thaw_context(ctx: ControllerContext) -> SimpleNamespace:
    """A working copy of a controller context."""
    return _thaw(ctx, _CTX_MAPS, _CTX_SETS)


def freeze_context(ns: SimpleNamespace) -> ControllerContext:
    """The immutable value of a working controller context."""
    return _freeze(ControllerContext, ns, _CTX_MAPS, _CTX_SETS)


def _thaw(rec: Any, maps: tuple[str, ...], sets: tuple[str, ...]) -> SimpleNamespace:
    d = rec._asdict()
    for f in maps:
        d[f] = dict(d[f])
    for f in sets:
        d[f] = set(d[f])
    return SimpleNamespace(**d)


def _freeze(cls: Any, ns: SimpleNamespace, maps: tuple[str, ...], sets: tuple[str, ...]) -> Any:
    d = dict(vars(ns))
    for f in maps:
        d[f] = freeze(d[f])
    for f in sets:
        d[f] = tuple(sorted(d[f]))
    return cls(**d)


class Txn:
    """Drafts of every part of a Cluster plus the effects emitted so far."""

    def __init__(self, config: ClusterConfig, state: Cluster) -> None:
        self.config = config
        self.rules = config.rule_set()
        self.base = state
        self.brokers: dict[int, Any] = dict(state.brokers)
        self.zk = _thaw(state.zk, _ZK_MAPS, _ZK_SETS)
        self.ctx = thaw_context(state.ctx)
        self.replicas: dict[tuple, Any] = dict(state.replicas)
        self.ghost = _thaw(state.ghost, _GHOST_MAPS, ())
        self.inflight: dict[tuple[int, int], tuple] = dict(state.inflight)
        self.zombie: ControllerContext | None = state.zombie
        self.requests: list[Request] = []
        self.state_changes: list[StateChange] = []
        self.notes: list[str] = []
        self.result: Any = None

    # -- the two state machines: every change goes through the table ---------------------------

    def partition_state(self, tp: tuple) -> str:
        """The controller's state of a partition (NonExistentPartition when it has none)."""
        return self.ctx.partition_states.get(tp, PartitionState.NON_EXISTENT)

    def replica_state(self, tp: tuple, broker: int) -> str:
        """The controller's state of a replica (NonExistentReplica when it has none)."""
        return self.ctx.replica_states.get((tp[0], tp[1], broker), ReplicaState.NON_EXISTENT)

    def set_partition_state(self, tp: tuple, target: str) -> None:
        """Move a partition to target; IllegalStateTransition if the table refuses."""
        current = self.partition_state(tp)
        partition_move(self.rules, tp_name(tp), current, target)
        if target == PartitionState.NON_EXISTENT:
            self.ctx.partition_states.pop(tp, None)
        else:
            self.ctx.partition_states[tp] = target
        self.state_changes.append(StateChange("partition", tp_name(tp), current, target))

    def set_replica_state(self, tp: tuple, broker: int, target: str) -> None:
        """Move a replica to target; IllegalStateTransition if the table refuses."""
        current = self.replica_state(tp, broker)
        replica_move(self.rules, replica_name(tp, broker), current, target)
        key = (tp[0], tp[1], broker)
        if target == ReplicaState.NON_EXISTENT:
            self.ctx.replica_states.pop(key, None)
        else:
            self.ctx.replica_states[key] = target
        self.state_changes.append(StateChange("replica", replica_name(tp, broker), current, target))

    def can_move_partition(self, tp: tuple, target: str) -> bool:
        """Whether the table allows the partition's move to target (controller ops skip the rest)."""
        return self.rules.allows_partition(self.partition_state(tp), target)

    def can_move_replica(self, tp: tuple, broker: int, target: str) -> bool:
        """Whether the table allows the replica's move to target (controller ops skip the rest)."""
        return self.rules.allows_replica(self.replica_state(tp, broker), target)

    def swap_context(self, other: SimpleNamespace) -> SimpleNamespace:
        """Make `other` the working controller context and return the one it replaces (zombie steps)."""
        previous, self.ctx = self.ctx, other
        return previous

    # -- effects -----------------------------------------------------------------------------

    def note(self, text: str) -> None:
        """Record a remark for the trace."""
        self.notes.append(text)

    def commit(self) -> tuple[Cluster, Effects]:
        """Freeze the drafts into the next Cluster value and return it with the effects."""
        state = Cluster(
            brokers=freeze(self.brokers),
            zk=_freeze(Zk, self.zk, _ZK_MAPS, _ZK_SETS),
            ctx=freeze_context(self.ctx),
            replicas=freeze(self.replicas),
            ghost=_freeze(Ghost, self.ghost, _GHOST_MAPS, ()),
            inflight=freeze({b: q for b, q in self.inflight.items() if q}),
            zombie=self.zombie,
        )
        return state, Effects(tuple(self.requests), tuple(self.state_changes), tuple(self.notes), self.result)
