"""Actions: small named values for each step a run can take, one per op of the scenario contract.

Actions are NamedTuples: printable (`BrokerFail(broker=2)`), comparable, hashable and picklable.
`to_step` writes an action as a `kcm run` step and `from_step` reads one back, so any trace an engine
finds can be replayed through `kcm run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kcm.model.names import parse_replica, parse_tp, replica_name, tp_name

# Each action declares, in BROKER_FIELDS, which of its fields name brokers and how; symmetry reduction
# (model/symmetry.py) renames an action's brokers from this alone, so a new action says it once, here.
BROKER = "broker"  # one broker id
BROKER_LIST = "broker list"  # an ordered tuple of broker ids (the order is AR's)
ASSIGNMENT = "assignment"  # ((partition, replicas), ...)
REPLICA_LIST = "replica list"  # ((topic-partition, broker), ...)

# Every action class by its step's op name, filled by @operation as the classes are defined (in this order).
CONTRACT_OPS: dict[str, type] = {}
EXTENSION_OPS: dict[str, type] = {}  # steps the contract does not fix (asynchronous delivery, zombies, bounces)


def operation(op: str, extension: bool = False) -> Callable[[type], type]:
    """Register an action class as the action of steps with this op (an extension op when the contract has none)."""
    def register(cls: type) -> type:
        taken = CONTRACT_OPS.get(op) or EXTENSION_OPS.get(op)
        if taken is not None:
            raise ValueError(f"op {op!r} is already the action {taken.__name__}")
        (EXTENSION_OPS if extension else CONTRACT_OPS)[op] = cls
        return cls
    return register


@operation("create_topic")
class CreateTopic(NamedTuple):
    """onNewTopicCreation: explicit assignment (partition -> replicas), or partitions x replication factor."""

    topic: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...] = ()
    partitions: int = 0
    replication_factor: int = 0
    BROKER_FIELDS = (("assignment", ASSIGNMENT),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> CreateTopic:
        """The action of a schema-valid `create_topic` step."""
        if "assignment" in step:
            return cls(step["topic"], _assignment(step["assignment"]))
        return cls(step["topic"], (), int(step["partitions"]), int(step["replication_factor"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        if self.assignment:
            return {"op": "create_topic", "topic": self.topic,
                    "assignment": {str(p): list(r) for p, r in self.assignment}}
        return {"op": "create_topic", "topic": self.topic, "partitions": self.partitions,
                "replication_factor": self.replication_factor}


@operation("add_partitions")
class AddPartitions(NamedTuple):
    """onNewPartitionCreation for new partitions of an existing topic."""

    topic: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]
    BROKER_FIELDS = (("assignment", ASSIGNMENT),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> AddPartitions:
        """The action of a schema-valid `add_partitions` step."""
        return cls(step["topic"], _assignment(step["assignment"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "add_partitions", "topic": self.topic,
                "assignment": {str(p): list(r) for p, r in self.assignment}}


@operation("delete_topic")
class DeleteTopic(NamedTuple):
    """Topic deletion through the replica deletion states."""

    topic: str
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> DeleteTopic:
        """The action of a schema-valid `delete_topic` step."""
        return cls(step["topic"])

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "delete_topic", "topic": self.topic}


@operation("broker_fail")
class BrokerFail(NamedTuple):
    """The broker dies: its ZooKeeper session expires."""

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> BrokerFail:
        """The action of a schema-valid `broker_fail` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "broker_fail", "broker": self.broker}


@operation("broker_start")
class BrokerStart(NamedTuple):
    """The broker (re)registers."""

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> BrokerStart:
        """The action of a schema-valid `broker_start` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "broker_start", "broker": self.broker}


@operation("controlled_shutdown")
class ControlledShutdown(NamedTuple):
    """shutdownBroker: leaders moved off, followers taken offline; the broker stays registered."""

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ControlledShutdown:
        """The action of a schema-valid `controlled_shutdown` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "controlled_shutdown", "broker": self.broker}


@operation("controller_resign")
class ControllerResign(NamedTuple):
    """The /controller node goes away and a new election runs (broker -1: the lowest live id wins)."""

    broker: int = -1
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ControllerResign:
        """The action of a schema-valid `controller_resign` step."""
        return cls(int(step.get("broker", -1)))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "controller_resign"}
        if self.broker >= 0:
            step["broker"] = self.broker
        return step


@operation("reassign")
class Reassign(NamedTuple):
    """onPartitionReassignment towards the target replicas (RAR)."""

    tp: tuple
    replicas: tuple[int, ...]
    BROKER_FIELDS = (("replicas", BROKER_LIST),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> Reassign:
        """The action of a schema-valid `reassign` step."""
        return cls(parse_tp(step["partition"]), tuple(step["replicas"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "reassign", "partition": tp_name(self.tp), "replicas": list(self.replicas)}


@operation("preferred_election")
class PreferredElection(NamedTuple):
    """onPreferredReplicaElection for the given partitions (None: all)."""

    tps: tuple[tuple, ...] | None = None
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> PreferredElection:
        """The action of a schema-valid `preferred_election` step."""
        parts = step.get("partitions")
        return cls(None if parts is None else tuple(parse_tp(p) for p in parts))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "preferred_election"}
        if self.tps is not None:
            step["partitions"] = [tp_name(tp) for tp in self.tps]
        return step


@operation("produce")
class Produce(NamedTuple):
    """Append records to the leader's log with acks=all or acks=1."""

    tp: tuple
    records: int = 1
    acks: str = "all"  # "all" | "1"
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> Produce:
        """The action of a schema-valid `produce` step."""
        return cls(parse_tp(step["partition"]), int(step.get("records", 1)), _acks(step.get("acks", "all")))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "produce", "partition": tp_name(self.tp), "records": self.records,
                "acks": "all" if self.acks == "all" else 1}


@operation("replicate")
class Replicate(NamedTuple):
    """A follower fetch (broker -1: every live follower, in broker order)."""

    tp: tuple
    broker: int = -1
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> Replicate:
        """The action of a schema-valid `replicate` step."""
        return cls(parse_tp(step["partition"]), int(step.get("broker", -1)))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "replicate", "partition": tp_name(self.tp)}
        if self.broker >= 0:
            step["broker"] = self.broker
        return step


@operation("isr_shrink")
class IsrShrink(NamedTuple):
    """The leader drops a lagging follower from the ISR."""

    tp: tuple
    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> IsrShrink:
        """The action of a schema-valid `isr_shrink` step."""
        return cls(parse_tp(step["partition"]), int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "isr_shrink", "partition": tp_name(self.tp), "broker": self.broker}


@operation("consume")
class Consume(NamedTuple):
    """A consumer fetch from the leader at an offset (expect_records -1: not checked)."""

    tp: tuple
    offset: int
    expect_records: int = -1
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> Consume:
        """The action of a schema-valid `consume` step."""
        return cls(parse_tp(step["partition"]), int(step["offset"]), int(step.get("expect_records", -1)))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "consume", "partition": tp_name(self.tp), "offset": self.offset}
        if self.expect_records >= 0:
            step["expect_records"] = self.expect_records
        return step


@operation("partition_transition")
class PartitionTransition(NamedTuple):
    """One direct call of the partition state machine (selector None: the machine's default)."""

    tps: tuple[tuple, ...]
    target: str
    selector: str | None = None
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> PartitionTransition:
        """The action of a schema-valid `partition_transition` step."""
        return cls(tuple(parse_tp(p) for p in step["partitions"]), step["target"], step.get("selector"))

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "partition_transition",
                                "partitions": [tp_name(tp) for tp in self.tps], "target": self.target}
        if self.selector is not None:
            step["selector"] = self.selector
        return step


@operation("replica_transition")
class ReplicaTransition(NamedTuple):
    """One direct call of the replica state machine on (partition, broker) replicas."""

    replicas: tuple[tuple[tuple, int], ...]
    target: str
    BROKER_FIELDS = (("replicas", REPLICA_LIST),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ReplicaTransition:
        """The action of a schema-valid `replica_transition` step."""
        return cls(tuple(parse_replica(r) for r in step["replicas"]), step["target"])

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "replica_transition",
                "replicas": [replica_name(tp, b) for tp, b in self.replicas], "target": self.target}


# -- extension ops: steps the contract does not fix, for asynchronous delivery, zombies and fast bounces -------

@operation("deliver", extension=True)
class Deliver(NamedTuple):
    """The oldest control request in flight to the broker from one controller epoch arrives (delivery "async").

    Each controller has its own connection to a broker, so requests of different controller epochs are not
    ordered with each other; controller_epoch -1 takes the oldest epoch with a request in flight.
    """

    broker: int
    controller_epoch: int = -1
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> Deliver:
        """The action of a schema-valid `deliver` step."""
        return cls(int(step["broker"]), int(step.get("controller_epoch", -1)))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        step: dict[str, Any] = {"op": "deliver", "broker": self.broker}
        if self.controller_epoch >= 0:
            step["controller_epoch"] = self.controller_epoch
        return step


@operation("zombie_elect", extension=True)
class ZombieElect(NamedTuple):
    """The previous controller finishes an in-flight election for the partition from its stale cache."""

    tp: tuple
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ZombieElect:
        """The action of a schema-valid `zombie_elect` step."""
        return cls(parse_tp(step["partition"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "zombie_elect", "partition": tp_name(self.tp)}


@operation("broker_bounce", extension=True)
class BrokerBounce(NamedTuple):
    """The broker restarts and re-registers before the controller handles its session loss (KIP-380)."""

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> BrokerBounce:
        """The action of a schema-valid `broker_bounce` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "broker_bounce", "broker": self.broker}


@operation("session_expiry", extension=True)
class SessionExpiry(NamedTuple):
    """The broker's ZooKeeper session expires and it registers again; its process and memory live on."""

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> SessionExpiry:
        """The action of a schema-valid `session_expiry` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "session_expiry", "broker": self.broker}


@operation("controller_event", extension=True)
class ControllerEvent(NamedTuple):
    """The controller processes the event at the head of its queue (grain "event").

    zombie true: the previous controller, which has not yet handled the loss of its session, processes the head of
    the queue it still holds.
    """

    zombie: bool = False
    BROKER_FIELDS = ()

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ControllerEvent:
        """The action of a schema-valid `controller_event` step."""
        return cls(bool(step.get("zombie", False)))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        step: dict[str, Any] = {"op": "controller_event"}
        if self.zombie:
            step["zombie"] = True
        return step


@operation("controller_move", extension=True)
class ControllerMove(NamedTuple):
    """/controller is deleted and re-created by `broker` while the old controller keeps its ZooKeeper session.

    Unlike `controller_resign` (the controller's session is lost, and with it its queue), the old controller learns
    of the move only from the Reelect its /controller watch queued behind the events it already holds (grain
    "event"): until then it processes them as the active controller, and the first write the /controller_epoch
    zkVersion refuses makes it resign.
    """

    broker: int
    BROKER_FIELDS = (("broker", BROKER),)

    @classmethod
    def from_step(cls, step: dict[str, Any]) -> ControllerMove:
        """The action of a schema-valid `controller_move` step."""
        return cls(int(step["broker"]))

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "controller_move", "broker": self.broker}


# The contract's acks values, with Kafka's own spelling of acks=all (-1); anything else is refused (KeyError), never
# run as acks=1.
_ACKS = {"all": "all", -1: "all", 1: "1", "1": "1"}


def _acks(value: Any) -> str:
    if type(value) not in (str, int):
        raise KeyError(f"acks {value!r}")
    return _ACKS[value]


def _assignment(obj: dict[str, list[int]]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple(sorted((int(p), tuple(r)) for p, r in obj.items()))


def from_step(step: dict[str, Any]) -> Any:
    """The action of a (schema-valid) contract step; KeyError/ValueError on anything else."""
    op = step["op"]
    cls = CONTRACT_OPS.get(op) or EXTENSION_OPS.get(op)
    if cls is None:
        raise KeyError(f"unknown op {op!r}")
    return cls.from_step(step)
