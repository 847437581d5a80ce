"""Actions: small named values for each step a run can take, one per op of the scenario contract.

Actions are NamedTuples: printable (`BrokerFail(broker=2)`), comparable, hashable and picklable.
`to_step` writes an action as a `kcm run` step and `from_step` reads one back, so any trace an engine
finds can be replayed through `kcm run`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kcm.model.names import parse_replica, parse_tp, replica_name, tp_name


class CreateTopic(NamedTuple):
    """onNewTopicCreation: explicit assignment (partition -> replicas), or partitions x replication factor."""

    topic: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...] = ()
    partitions: int = 0
    replication_factor: int = 0

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        if self.assignment:
            return {"op": "create_topic", "topic": self.topic,
                    "assignment": {str(p): list(r) for p, r in self.assignment}}
        return {"op": "create_topic", "topic": self.topic, "partitions": self.partitions,
                "replication_factor": self.replication_factor}


class AddPartitions(NamedTuple):
    """onNewPartitionCreation for new partitions of an existing topic."""

    topic: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "add_partitions", "topic": self.topic,
                "assignment": {str(p): list(r) for p, r in self.assignment}}


class DeleteTopic(NamedTuple):
    """Topic deletion through the replica deletion states."""

    topic: str

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "delete_topic", "topic": self.topic}


class BrokerFail(NamedTuple):
    """The broker dies: its ZooKeeper session expires."""

    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "broker_fail", "broker": self.broker}


class BrokerStart(NamedTuple):
    """The broker (re)registers."""

    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "broker_start", "broker": self.broker}


class ControlledShutdown(NamedTuple):
    """shutdownBroker: leaders moved off, followers taken offline; the broker stays registered."""

    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "controlled_shutdown", "broker": self.broker}


class ControllerResign(NamedTuple):
    """The /controller node goes away and a new election runs (broker -1: the lowest live id wins)."""

    broker: int = -1

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "controller_resign"}
        if self.broker >= 0:
            step["broker"] = self.broker
        return step


class Reassign(NamedTuple):
    """onPartitionReassignment towards the target replicas (RAR)."""

    tp: tuple
    replicas: tuple[int, ...]

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "reassign", "partition": tp_name(self.tp), "replicas": list(self.replicas)}


class PreferredElection(NamedTuple):
    """onPreferredReplicaElection for the given partitions (None: all)."""

    tps: tuple[tuple, ...] | None = None

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "preferred_election"}
        if self.tps is not None:
            step["partitions"] = [tp_name(tp) for tp in self.tps]
        return step


class Produce(NamedTuple):
    """Append records to the leader's log with acks=all or acks=1."""

    tp: tuple
    records: int = 1
    acks: str = "all"  # "all" | "1"

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "produce", "partition": tp_name(self.tp), "records": self.records,
                "acks": "all" if self.acks == "all" else 1}


class Replicate(NamedTuple):
    """A follower fetch (broker -1: every live follower, in broker order)."""

    tp: tuple
    broker: int = -1

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "replicate", "partition": tp_name(self.tp)}
        if self.broker >= 0:
            step["broker"] = self.broker
        return step


class IsrShrink(NamedTuple):
    """The leader drops a lagging follower from the ISR."""

    tp: tuple
    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "isr_shrink", "partition": tp_name(self.tp), "broker": self.broker}


class Consume(NamedTuple):
    """A consumer fetch from the leader at an offset (expect_records -1: not checked)."""

    tp: tuple
    offset: int
    expect_records: int = -1

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "consume", "partition": tp_name(self.tp), "offset": self.offset}
        if self.expect_records >= 0:
            step["expect_records"] = self.expect_records
        return step


class PartitionTransition(NamedTuple):
    """One direct call of the partition state machine (selector None: the machine's default)."""

    tps: tuple[tuple, ...]
    target: str
    selector: str | None = None

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        step: dict[str, Any] = {"op": "partition_transition",
                                "partitions": [tp_name(tp) for tp in self.tps], "target": self.target}
        if self.selector is not None:
            step["selector"] = self.selector
        return step


class ReplicaTransition(NamedTuple):
    """One direct call of the replica state machine on (partition, broker) replicas."""

    replicas: tuple[tuple[tuple, int], ...]
    target: str

    def to_step(self) -> dict[str, Any]:
        """This action as a contract step."""
        return {"op": "replica_transition",
                "replicas": [replica_name(tp, b) for tp, b in self.replicas], "target": self.target}


# -- extension ops: steps the contract does not fix, for asynchronous delivery, zombies and fast bounces -------

class Deliver(NamedTuple):
    """The oldest control request in flight to the broker from one controller epoch arrives (delivery "async").

    Each controller has its own connection to a broker, so requests of different controller epochs are not
    ordered with each other; controller_epoch -1 takes the oldest epoch with a request in flight.
    """

    broker: int
    controller_epoch: int = -1

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        step: dict[str, Any] = {"op": "deliver", "broker": self.broker}
        if self.controller_epoch >= 0:
            step["controller_epoch"] = self.controller_epoch
        return step


class ZombieElect(NamedTuple):
    """The previous controller finishes an in-flight election for the partition from its stale cache."""

    tp: tuple

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "zombie_elect", "partition": tp_name(self.tp)}


class BrokerBounce(NamedTuple):
    """The broker restarts and re-registers before the controller handles its session loss (KIP-380)."""

    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "broker_bounce", "broker": self.broker}


class SessionExpiry(NamedTuple):
    """The broker's ZooKeeper session expires and it registers again; its process and memory live on."""

    broker: int

    def to_step(self) -> dict[str, Any]:
        """This action as a (extension) step."""
        return {"op": "session_expiry", "broker": self.broker}


EXTENSION_OPS: dict[str, type] = {"deliver": Deliver, "zombie_elect": ZombieElect, "broker_bounce": BrokerBounce,
                                  "session_expiry": SessionExpiry}

CONTRACT_OPS: dict[str, type] = {
    "create_topic": CreateTopic,
    "add_partitions": AddPartitions,
    "delete_topic": DeleteTopic,
    "broker_fail": BrokerFail,
    "broker_start": BrokerStart,
    "controlled_shutdown": ControlledShutdown,
    "controller_resign": ControllerResign,
    "reassign": Reassign,
    "preferred_election": PreferredElection,
    "produce": Produce,
    "replicate": Replicate,
    "isr_shrink": IsrShrink,
    "consume": Consume,
    "partition_transition": PartitionTransition,
    "replica_transition": ReplicaTransition,
}


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
    if op == "create_topic":
        if "assignment" in step:
            return CreateTopic(step["topic"], _assignment(step["assignment"]))
        return CreateTopic(step["topic"], (), int(step["partitions"]), int(step["replication_factor"]))
    if op == "add_partitions":
        return AddPartitions(step["topic"], _assignment(step["assignment"]))
    if op == "delete_topic":
        return DeleteTopic(step["topic"])
    if op in ("broker_fail", "broker_start", "controlled_shutdown"):
        return CONTRACT_OPS[op](int(step["broker"]))
    if op == "deliver":
        return Deliver(int(step["broker"]), int(step.get("controller_epoch", -1)))
    if op in ("broker_bounce", "session_expiry"):
        return EXTENSION_OPS[op](int(step["broker"]))
    if op == "zombie_elect":
        return ZombieElect(parse_tp(step["partition"]))
    if op == "controller_resign":
        return ControllerResign(int(step.get("broker", -1)))
    if op == "reassign":
        return Reassign(parse_tp(step["partition"]), tuple(step["replicas"]))
    if op == "preferred_election":
        parts = step.get("partitions")
        return PreferredElection(None if parts is None else tuple(parse_tp(p) for p in parts))
    if op == "produce":
        return Produce(parse_tp(step["partition"]), int(step.get("records", 1)), _acks(step.get("acks", "all")))
    if op == "replicate":
        return Replicate(parse_tp(step["partition"]), int(step.get("broker", -1)))
    if op == "isr_shrink":
        return IsrShrink(parse_tp(step["partition"]), int(step["broker"]))
    if op == "consume":
        return Consume(parse_tp(step["partition"]), int(step["offset"]), int(step.get("expect_records", -1)))
    if op == "partition_transition":
        return PartitionTransition(tuple(parse_tp(p) for p in step["partitions"]), step["target"],
                                   step.get("selector"))
    if op == "replica_transition":
        return ReplicaTransition(tuple(parse_replica(r) for r in step["replicas"]), step["target"])
    raise KeyError(f"unknown op {op!r}")
