"""A mutable working copy of one Cluster for one operation.

Operations are pure functions `state -> (state, effects)`: they thaw the value into a `Txn`, work on
it the way Kafka's controller works on its caches, and `commit()` freezes the result. An operation
that raises simply drops its Txn, so a refused step leaves the original value untouched.

Thawing is lazy and copy-on-write: a field becomes a dict or set only when an operation first reads it, and
`commit()` hands back the very same sub-tuple for every field that ended equal to its original (most of them
in most steps), so the next state shares its unchanged parts with the previous one. That sharing is what
makes the explorers' equality tests and the properties' identity short-cuts cheap.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import Cluster, ClusterConfig, ControllerContext, Ghost, Zk
from kcm.model.effects import Effects, Request, StateChange
from kcm.model.errors import KcmError
from kcm.model.fmap import get as fmap_get
from kcm.model.names import replica_name, tp_name
from kcm.model.states import PartitionState, ReplicaState
from kcm.model.transitions import partition_move, replica_move

# Names of partitions and replicas, built once each: a run names the same few in every logged state change.
_TP_NAMES: dict[tuple, str] = {}
_REPLICA_NAMES: dict[tuple, str] = {}


def _tp_name(tp: tuple) -> str:
    name = _TP_NAMES.get(tp)
    if name is None:
        name = _TP_NAMES[tp] = tp_name(tp)
    return name


def _replica_name(key: tuple) -> str:
    name = _REPLICA_NAMES.get(key)
    if name is None:
        name = _REPLICA_NAMES[key] = replica_name(key[:2], key[2])
    return name


def freeze_map(d: dict[Any, Any], original: tuple) -> tuple:
    """The frozen map of d (equal to `fmap.freeze(d)`), and `original` itself when it is equal to that.

    Sorting the pairs and comparing the tuples runs in C; the comparison is short because the pairs d still
    shares with `original` hold the very same key and value objects.
    """
    if not d:
        return original if not original else ()
    # A dict thawed from `original` keeps its key order while no key is added: unchanged, its pairs are already
    # `original`'s, found without sorting.
    new = tuple(d.items())
    if new == original:
        return original
    new = tuple(sorted(new))
    return original if new == original else new


def freeze_set(s: set[Any], original: tuple) -> tuple:
    """The sorted tuple of s, reusing `original` (a sorted tuple) when s holds exactly its members."""
    if len(s) == len(original) and s.issuperset(original):
        return original
    return tuple(sorted(s))


# A NamedTuple from all its field values, as its constructor builds it but without the Python-level __new__ (the
# records built on every step: committed states, effects, state changes, requests).
_tuple_new = tuple.__new__
if tuple(len(r._fields) for r in (Cluster, Effects, StateChange)) != (7, 4, 4):
    raise ImportError("kcm.model.txn: the Cluster, Effects or StateChange fields changed; update Txn.commit")
_PLAIN, _MAP, _SET = 0, 1, 2  # how a Draft thaws a field: as it is, to a dict, to a set
_UNSET = object()  # a field not thawed yet


class _Thaw:
    """A field of a working copy read from its base record on first access and kept (as a dict, a set, or as it is).

    A non-data descriptor: once the field is in the instance's __dict__ (thawed, or assigned by an operation),
    attribute lookup finds it there and never calls __get__ again. Unlike a __getattr__ fallback, the first read
    raises and catches no AttributeError, which makes it the cheaper of the two on this path (a dozen per step).
    """

    __slots__ = ("name", "index", "kind", "source")

    def __init__(self, name: str, index: int, kind: int, source: str = "_base") -> None:
        self.name, self.index, self.kind, self.source = name, index, kind, source

    def __get__(self, draft: Any, owner: Any) -> Any:
        if draft is None:
            return self
        fields = draft.__dict__
        value = fields[self.source][self.index]
        kind = self.kind
        if kind == _MAP:
            value = dict(value)
        elif kind == _SET:
            value = set(value)
        fields[self.name] = value
        return value


class Draft:
    """A working copy of one record (Zk, ControllerContext, Ghost) whose fields are thawed on first access.

    Frozen-map fields read as dicts and sorted-tuple fields as sets; the others read as they are. Only what an
    operation touches is ever copied.
    """

    _MAPS: frozenset[str] = frozenset()
    _SETS: frozenset[str] = frozenset()
    _INDEX: dict[str, int] = {}  # field name -> position in the record
    _SPEC: dict[str, tuple[int, int]] = {}  # field name -> (position, _PLAIN / _MAP / _SET), one lookup per freeze

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._SPEC = {name: (i, _MAP if name in cls._MAPS else _SET if name in cls._SETS else _PLAIN)
                     for name, i in cls._INDEX.items()}
        for name, (i, kind) in cls._SPEC.items():
            if hasattr(cls, name):
                raise TypeError(f"{cls.__name__}: field {name!r} would hide an attribute of the class")
            setattr(cls, name, _Thaw(name, i, kind))

    def __init__(self, base: Any) -> None:
        self._base = base

    def discard(self, name: str, key: Any) -> None:
        """Remove key from the map field `name` (a member from the set field), without thawing it when absent."""
        if name not in self.__dict__ and not draft_has(self, name, key):
            return
        value = getattr(self, name)
        if type(value) is set:
            value.discard(key)
        else:
            value.pop(key, None)

    def freeze(self) -> Any:
        """The immutable record: the base itself when nothing differs, else a copy with the changed fields."""
        fields = self.__dict__
        base = fields["_base"]
        if len(fields) == 1:
            return base
        values = None
        spec = self._SPEC
        # freeze_map and freeze_set written out: this loop runs for every thawed field of every step.
        for name, new in fields.items():
            at = spec.get(name)
            if at is None:
                continue  # _base
            i, kind = at
            old = base[i]
            if kind == _MAP:
                if not new:
                    if not old:
                        continue
                    new = ()
                else:
                    new = tuple(new.items())  # in key order unless a key was added (see freeze_map)
                    if new == old:
                        continue
                    new = tuple(sorted(new))
                    if new == old:
                        continue
            elif kind == _SET:
                if len(new) == len(old) and new.issuperset(old):
                    continue
                new = tuple(sorted(new))
            elif new is old:
                continue
            if values is None:
                values = list(base)
            values[i] = new
        return base if values is None else _tuple_new(type(base), values)


# Reads of a draft's field that leave it frozen: an operation that only looks at a map or a set then costs neither the
# copy nor the comparison at freeze time (most fields an operation reads, it does not change). Functions rather than
# methods: the compiled modules that cimport them (`txn.pxd`) call them as C functions, where a method of a Python
# class costs a lookup and a call about as dear as the read itself (these run over a million times a `controller` run).


def draft_lookup(draft: Draft, name: str, key: Any, default: Any = None) -> Any:
    """The value under key in the map field `name` (default if absent), without thawing the field to read it."""
    fields = draft.__dict__
    value = fields.get(name, _UNSET)
    if value is not _UNSET:
        return value.get(key, default)
    return fmap_get(fields["_base"][draft._SPEC[name][0]], key, default)


def draft_has(draft: Draft, name: str, key: Any) -> bool:
    """Whether the map field `name` has key, or the set field `name` has it as a member, without thawing it."""
    fields = draft.__dict__
    value = fields.get(name, _UNSET)
    if value is not _UNSET:
        return key in value
    i, kind = draft._SPEC[name]
    if kind == _SET:
        return key in fields["_base"][i]
    return fmap_get(fields["_base"][i], key, _UNSET) is not _UNSET


def draft_peek(draft: Draft, name: str) -> Any:
    """The field to read without changing it: the working dict or set once thawed, else the frozen tuple.

    Either form iterates over the same members (a frozen map: its (key, value) pairs; `dict(...)` and `set(...)`
    take both), but only the thawed one is in any particular order.
    """
    fields = draft.__dict__
    value = fields.get(name, _UNSET)
    return fields["_base"][draft._SPEC[name][0]] if value is _UNSET else value


def draft_sorted_items(draft: Draft, name: str) -> Any:
    """The (key, value) pairs of the map field `name` in key order, without thawing it to read them."""
    fields = draft.__dict__
    value = fields.get(name, _UNSET)
    if value is not _UNSET:
        return sorted(value.items())
    return fields["_base"][draft._SPEC[name][0]]  # a frozen map is sorted already


class ZkDraft(Draft):
    """A working copy of the ZooKeeper tree."""

    _MAPS = frozenset(("assignments", "partitions", "reassign_partitions"))
    _SETS = frozenset(("brokers", "delete_topics"))
    _INDEX = {name: i for i, name in enumerate(Zk._fields)}


class ContextDraft(Draft):
    """A working copy of a controller context."""

    _MAPS = frozenset(("assignments", "leadership", "partition_states", "replica_states", "reassignments"))
    _SETS = frozenset(("live_brokers", "shutting_down", "topics_to_delete", "topics_ineligible"))
    _INDEX = {name: i for i, name in enumerate(ControllerContext._fields)}


class GhostDraft(Draft):
    """A working copy of the ghost history."""

    _MAPS = frozenset(("elected", "acked", "consumed", "pending"))
    _INDEX = {name: i for i, name in enumerate(Ghost._fields)}


def thaw_context(ctx: ControllerContext) -> ContextDraft:
    """A working copy of a controller context."""
    return ContextDraft(ctx)


def freeze_context(ns: ContextDraft) -> ControllerContext:
    """The immutable value of a working controller context."""
    return ns.freeze()


class OutOfBounds(KcmError):
    """A step abandoned part-way: one of its writes passed an epoch limit of its Txn (Txn.max_*)."""

    name = "OutOfBounds"


class Txn:
    """Drafts of every part of a Cluster plus the effects emitted so far.

    In the compiled build this is a final extension type (`txn.pxd`): the reference's modules, which declare
    `t: Txn`, read its attributes from the object's struct. Its methods read the instance's __dict__ (the thawed
    brokers, replicas and inflight, and `base`) through `vars(self)`, which Cython allows there.
    """

    # brokers: dict[int, BrokerState], replicas: dict[tuple, ReplicaData] and inflight: dict[tuple[int, int],
    # tuple] are thawed from the base state on first access.
    brokers: Any = _Thaw("brokers", Cluster._fields.index("brokers"), _MAP, "base")
    replicas: Any = _Thaw("replicas", Cluster._fields.index("replicas"), _MAP, "base")
    inflight: Any = _Thaw("inflight", Cluster._fields.index("inflight"), _MAP, "base")

    def __init__(self, config: ClusterConfig, state: Cluster) -> None:
        self.config = config
        self.rules = config.rule_set()
        self.base = state
        self.zk = ZkDraft(state.zk)
        self.ctx = ContextDraft(state.ctx)
        self.ghost = GhostDraft(state.ghost)
        self.zombie: ControllerContext | None = state.zombie
        self.requests: list[Request] = []
        self.state_changes: list[StateChange] = []
        self.notes: list[str] = []
        self.result: Any = None
        self.request_batch: Any = None  # the batch of control requests an operation is building, if any
        # The model's epoch limits: a step whose write passes one is abandoned with OutOfBounds and changes
        # nothing; None (the default): no limit, every step runs to its end.
        self.max_leader_epoch: int | None = None
        self.max_controller_epoch: int | None = None

    def lookup(self, name: str, key: Any, default: Any = None) -> Any:
        """The value under key in the Cluster map `name` (brokers, replicas, inflight) without thawing it."""
        fields = vars(self)
        if name in fields:
            return fields[name].get(key, default)
        return fmap_get(getattr(fields["base"], name), key, default)

    def items(self, name: str) -> Any:
        """The (key, value) pairs of the Cluster map `name` without thawing it; the map may be written meanwhile."""
        fields = vars(self)
        return list(fields[name].items()) if name in fields else getattr(fields["base"], name)

    # -- the two state machines: every change goes through the table ---------------------------

    def partition_state(self, tp: tuple) -> str:
        """The controller's state of a partition (NonExistentPartition when it has none)."""
        return draft_lookup(self.ctx, "partition_states", tp, PartitionState.NON_EXISTENT)

    def replica_state(self, tp: tuple, broker: int) -> str:
        """The controller's state of a replica (NonExistentReplica when it has none)."""
        return draft_lookup(self.ctx, "replica_states", (tp[0], tp[1], broker), ReplicaState.NON_EXISTENT)

    def set_partition_state(self, tp: tuple, target: str) -> None:
        """Move a partition to target; IllegalStateTransition if the table refuses."""
        current = self.partition_state(tp)
        if not self.rules.allows_partition(current, target):
            # The guarded move raises IllegalStateTransition; a move the table allows needs no second check.
            partition_move(self.rules, tp_name(tp), current, target)
        if target == PartitionState.NON_EXISTENT:
            self.ctx.partition_states.pop(tp, None)
        else:
            self.ctx.partition_states[tp] = target
        self.state_changes.append(_tuple_new(StateChange, ("partition", _tp_name(tp), current, target)))

    def set_replica_state(self, tp: tuple, broker: int, target: str) -> None:
        """Move a replica to target; IllegalStateTransition if the table refuses."""
        current = self.replica_state(tp, broker)
        if not self.rules.allows_replica(current, target):
            replica_move(self.rules, replica_name(tp, broker), current, target)
        key = (tp[0], tp[1], broker)
        if target == ReplicaState.NON_EXISTENT:
            self.ctx.replica_states.pop(key, None)
        else:
            self.ctx.replica_states[key] = target
        self.state_changes.append(_tuple_new(StateChange, ("replica", _replica_name(key), current, target)))

    def can_move_partition(self, tp: tuple, target: str) -> bool:
        """Whether the table allows the partition's move to target (controller ops skip the rest)."""
        return self.rules.allows_partition(self.partition_state(tp), target)

    def can_move_replica(self, tp: tuple, broker: int, target: str) -> bool:
        """Whether the table allows the replica's move to target (controller ops skip the rest)."""
        return self.rules.allows_replica(self.replica_state(tp, broker), target)

    def swap_context(self, other: ContextDraft) -> ContextDraft:
        """Make `other` the working controller context and return the one it replaces (zombie steps)."""
        previous, self.ctx = self.ctx, other
        return previous

    # -- effects -----------------------------------------------------------------------------

    def note(self, text: str) -> None:
        """Record a remark for the trace."""
        self.notes.append(text)

    def commit(self) -> tuple[Cluster, Effects]:
        """Freeze the drafts into the next Cluster value and return it with the effects."""
        base = self.base
        thawed = vars(self)
        brokers = freeze_map(thawed["brokers"], base.brokers) if "brokers" in thawed else base.brokers
        replicas = freeze_map(thawed["replicas"], base.replicas) if "replicas" in thawed else base.replicas
        if "inflight" in thawed or (base.inflight and not all(q for _, q in base.inflight)):
            inflight = freeze_map({b: q for b, q in self.inflight.items() if q}, base.inflight)
        else:
            inflight = base.inflight
        zk, ctx, ghost = self.zk.freeze(), self.ctx.freeze(), self.ghost.freeze()
        zombie = self.zombie
        if (brokers is base.brokers and zk is base.zk and ctx is base.ctx and replicas is base.replicas
                and ghost is base.ghost and inflight is base.inflight and zombie is base.zombie):
            state = base
        else:
            state = _tuple_new(Cluster, (brokers, zk, ctx, replicas, ghost, inflight, zombie))
        return state, _tuple_new(Effects, (tuple(self.requests), tuple(self.state_changes), tuple(self.notes),
                                           self.result))
