"""The cluster as one immutable value: ZooKeeper, the controller's context, the brokers and their logs.

Every record is a NamedTuple and every map a sorted tuple of pairs (`kcm.model.fmap`), so a state is
hashable, compares by value, pickles canonically and has a stable fingerprint.
"""

from __future__ import annotations

import copyreg
from typing import Any, NamedTuple

from kcm.model.fmap import EMPTY, FMap
from kcm.model.tables import DEFAULT_RULES, RuleSet, rule_set

NO_LEADER = -1
NO_CONTROLLER = -1

TRUNCATION_VARIANTS = ("high_watermark", "leader_epoch", "kip279", "kip320")
DELIVERY_MODES = ("sync", "async")
# "coarse": each step runs the controller's events to quiescence within it; "event": each controller event (and each
# part of a ZooKeeper delete it began) is a step of its own, so other steps may come between two of them.
GRAINS = ("coarse", "event")


class ClusterConfig(NamedTuple):
    """What a run fixes before its first step: the registered brokers and the rules in force."""

    brokers: tuple[int, ...]
    rules: str = DEFAULT_RULES
    unclean_leader_election: bool = False
    min_insync_replicas: int = 1
    truncation: str = "high_watermark"
    first_controller: int = NO_CONTROLLER  # who wins the first election; -1: lowest live id
    variants: tuple[str, ...] = ()  # named bug variants switched on (a reverted fix each)
    # "sync": every control request reaches its broker within the operation that sends it (the contract);
    # "async": requests wait in a per-broker queue until a `deliver` step (explorer and extension scenarios).
    delivery: str = "sync"
    # Whether a controller that loses /controller keeps its stale context and may still act once (a zombie).
    zombie_controller: bool = False
    grain: str = "coarse"
    # Kafka's controller.message.queue.size: each controller-to-broker queue's capacity, read only under variant
    # KAFKA-1305 (0.8.1's default, 10; since 0.8.2 the queues are unbounded).
    controller_message_queue_size: int = 10

    def rule_set(self) -> RuleSet:
        """The transition tables this run uses."""
        return rule_set(self.rules)

    def has(self, variant: str) -> bool:
        """Whether the named bug variant is switched on."""
        return variant in self.variants


# Each record type's field positions, for `replace`.
_POSITIONS: dict[type, dict[str, int]] = {}


def replace(record: Any, **changes: Any) -> Any:
    """A copy of a NamedTuple record with the named fields changed, as `record._replace(**changes)` gives.

    NamedTuple's own `_replace` is Python code in the standard library; this one is compiled with the model,
    which counts on the paths that run once per step (a broker's state on failure, restart, shutdown).
    """
    kind = type(record)
    positions = _POSITIONS.get(kind)
    if positions is None:
        positions = _POSITIONS[kind] = {name: i for i, name in enumerate(record._fields)}
    values = list(record)
    for name, value in changes.items():
        at = positions.get(name)
        if at is None:
            raise ValueError(f"Got unexpected field names: {[name]!r}")
        values[at] = value
    return tuple.__new__(kind, values)


class LeaderAndIsr(NamedTuple):
    """A partition state znode: leader, leader epoch, ISR, the controller epoch that wrote it, zkVersion."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]  # sorted
    controller_epoch: int
    zk_version: int


class Zk(NamedTuple):
    """The simulated ZooKeeper tree the controller reads and writes."""

    controller: int  # /controller: owner broker id (ephemeral, dies with its session); -1 absent
    controller_epoch: int  # /controller_epoch (starts at 0: the first controller has epoch 1)
    controller_epoch_zk_version: int  # its znode version, which fences controller writes (KAFKA-6082)
    brokers: tuple[int, ...]  # /brokers/ids: live registered sessions, sorted
    assignments: FMap  # /brokers/topics/<topic>: (topic, partition) -> replicas, ordered
    partitions: FMap  # /brokers/topics/<topic>/partitions/<p>/state: (topic, partition) -> LeaderAndIsr
    reassign_partitions: FMap  # /admin/reassign_partitions: (topic, partition) -> target replicas
    delete_topics: tuple[str, ...]  # /admin/delete_topics, sorted
    # KIP-455's record in /brokers/topics/<topic> of a reassignment in flight: (topic, partition) -> OAR
    reassign_original: FMap = EMPTY


class Reassignment(NamedTuple):
    """A reassignment in flight: OAR (original) and RAR (target); AR = RAR + (OAR - RAR) meanwhile."""

    original: tuple[int, ...]  # OAR
    target: tuple[int, ...]  # RAR

    @property
    def adding(self) -> tuple[int, ...]:
        """RAR - OAR, in target order."""
        return tuple([b for b in self.target if b not in self.original])

    @property
    def removing(self) -> tuple[int, ...]:
        """OAR - RAR, in original order."""
        return tuple([b for b in self.original if b not in self.target])

    @property
    def replicas(self) -> tuple[int, ...]:
        """AR during the reassignment: the target first, then the replicas being removed (contract rule 8)."""
        return self.target + self.removing


class ControllerContext(NamedTuple):
    """The active controller's in-memory view (Kafka's ControllerContext plus both state machines)."""

    controller_id: int  # -1: no active controller
    epoch: int
    epoch_zk_version: int
    live_brokers: tuple[int, ...]  # sorted
    shutting_down: tuple[int, ...]  # sorted
    assignments: FMap  # (topic, partition) -> AR
    leadership: FMap  # (topic, partition) -> LeaderAndIsr (cached, with zkVersion)
    partition_states: FMap  # (topic, partition) -> PartitionState
    replica_states: FMap  # (topic, partition, broker) -> ReplicaState
    reassignments: FMap  # (topic, partition) -> Reassignment
    topics_to_delete: tuple[str, ...]  # sorted
    topics_ineligible: tuple[str, ...]  # topics whose deletion waits for a dead broker, sorted
    # The controller's event queue (ControllerEventManager), oldest first: (event name, argument) pairs. Always empty
    # between steps at the coarse grain.
    events: tuple[tuple[str, str | tuple[int, bool]], ...] = ()


class BrokerState(NamedTuple):
    """One registered broker: liveness and the newest controller epoch it has accepted."""

    alive: bool
    shutting_down: bool
    controller_epoch: int  # requests with an older epoch are refused (StaleControllerEpoch)
    incarnation: int  # bumps at each restart (the broker epoch of KIP-380)
    # Variant KAFKA-12315: a fenced zombie left requests in this broker's ControllerBrokerRequestBatch.
    leftover_batch: bool = False
    # Grain "event": partitions of a LeaderAndIsr this broker has applied only in part (the leader epoch recorded, the
    # move from leader to follower not yet made), sorted; the rest of the request waits at the head of its connection.
    half_applied: tuple[tuple[str, int], ...] = ()


class ReplicaData(NamedTuple):
    """A broker's local replica of one partition: its log and what the last LeaderAndIsr told it."""

    log: tuple[int, ...]  # the leader epoch of each record; LEO = len(log)
    hw: int  # high watermark (what is checkpointed and survives a restart)
    leader: int  # the leader this broker follows (itself when it leads); -1 none
    leader_epoch: int  # the leader epoch of the last LeaderAndIsr accepted
    isr: tuple[int, ...]  # the ISR as this broker knows it (the leader maintains it), sorted
    zk_version: int  # the partition znode version this broker knows (for conditional ISR writes)
    replicas: tuple[int, ...]  # AR as sent in the last LeaderAndIsr
    remote_leo: FMap = EMPTY  # on the leader: follower -> LEO reported by its last fetch
    truncating: bool = False  # a follower whose leader-epoch truncation waits for its first fetch (KIP-101 on)

    @property
    def leo(self) -> int:
        """Log end offset: the offset the next record gets."""
        return len(self.log)


class Ghost(NamedTuple):
    """History that the properties read; Kafka keeps none of it, the model needs it to judge runs."""

    elected: FMap = EMPTY  # (topic, partition, leader_epoch) -> leader chosen in that epoch
    acked: FMap = EMPTY  # (topic, partition) -> ((offset, epoch), ...) acknowledged with acks=all
    consumed: FMap = EMPTY  # (topic, partition) -> ((offset, epoch), ...) handed to a consumer
    max_controller_epoch: int = 0  # highest controller epoch ever elected
    pending: FMap = EMPTY  # (topic, partition) -> ((offset, epoch), ...) produced with acks=all, not yet acked


class Cluster(NamedTuple):
    """The whole system at one moment."""

    brokers: FMap  # broker id -> BrokerState
    zk: Zk
    ctx: ControllerContext
    replicas: FMap  # (topic, partition, broker) -> ReplicaData
    ghost: Ghost = Ghost()
    # Control requests sent and not yet delivered (delivery "async"): (broker, controller epoch) -> requests in
    # sending order (one connection per controller and broker).
    inflight: FMap = EMPTY
    # The previous controller's context while it has not noticed it lost /controller (zombie_controller).
    zombie: ControllerContext | None = None


def empty_context() -> ControllerContext:
    """A controller context with no controller and nothing loaded."""
    return ControllerContext(NO_CONTROLLER, 0, 0, (), (), EMPTY, EMPTY, EMPTY, EMPTY, EMPTY, (), ())


def initial_cluster(config: ClusterConfig) -> Cluster:
    """Every configured broker registered and live; /controller absent; no topics."""
    brokers = tuple((b, BrokerState(True, False, 0, 0)) for b in sorted(config.brokers))
    zk = Zk(NO_CONTROLLER, 0, 0, tuple(sorted(config.brokers)), EMPTY, EMPTY, EMPTY, ())
    return Cluster(brokers, zk, empty_context(), EMPTY, Ghost())


def _reduce_record(record: Any) -> tuple[Any, tuple[Any, ...]]:
    """Pickle's reduction of a state record: the very one pickle makes by default (NEWOBJ of its class and fields).

    The default goes through `object.__reduce_ex__` and the NamedTuple's `__getnewargs__`, a Python function, for
    every record pickled; fingerprints pickle every part a step changes. The bytes are the same, so fingerprints are
    too (tests/test_fingerprint.py).
    """
    return copyreg.__newobj__, (type(record), *record)


def _reduce_trailing(record: Any) -> tuple[Any, tuple[Any, ...]]:
    """A record whose last field is newer than the others (a context's event queue, a broker's half-applied
    partitions) pickles as `_reduce_record` does, but without that field when it is empty (always, at the coarse
    grain): such states keep the bytes, and so the fingerprints and the checkpoints, they had before the field was
    added; unpickling gives the field its default back."""
    if record[-1]:
        return copyreg.__newobj__, (type(record), *record)
    return copyreg.__newobj__, (type(record), *record[:-1])


TRAILING = (ControllerContext, BrokerState)  # the records reduced by `_reduce_trailing`


RECORDS = (LeaderAndIsr, Zk, Reassignment, ControllerContext, BrokerState, ReplicaData, Ghost, Cluster)
for _record in RECORDS:
    copyreg.pickle(_record, _reduce_trailing if _record in TRAILING else _reduce_record)
