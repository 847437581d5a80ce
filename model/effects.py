"""What an operation does besides changing the state: control requests sent and state changes logged."""

from __future__ import annotations

from typing import Any, NamedTuple

from kcm.model.names import tp_name


class LeaderAndIsrRequest(NamedTuple):
    """LeaderAndIsr for one partition to one broker."""

    broker: int
    tp: tuple
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    controller_epoch: int
    zk_version: int

    def to_json(self) -> dict[str, Any]:
        """The contract's trace form."""
        return {"type": "LeaderAndIsr", "broker": self.broker, "partition": tp_name(self.tp),
                "leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "replicas": list(self.replicas), "controller_epoch": self.controller_epoch}


class UpdateMetadataRequest(NamedTuple):
    """UpdateMetadata for a set of partitions to one broker."""

    broker: int
    tps: tuple[tuple, ...]
    controller_epoch: int

    def to_json(self) -> dict[str, Any]:
        """The contract's trace form."""
        return {"type": "UpdateMetadata", "broker": self.broker,
                "partitions": [tp_name(tp) for tp in self.tps], "controller_epoch": self.controller_epoch}


class StopReplicaRequest(NamedTuple):
    """StopReplica for one partition to one broker, with or without deleting the log."""

    broker: int
    tp: tuple
    delete: bool
    controller_epoch: int

    def to_json(self) -> dict[str, Any]:
        """The contract's trace form."""
        return {"type": "StopReplica", "broker": self.broker, "partition": tp_name(self.tp),
                "delete": self.delete, "controller_epoch": self.controller_epoch}


Request = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


class StateChange(NamedTuple):
    """One move of the partition or replica state machine, as the state-change log records it."""

    machine: str  # "partition" | "replica"
    subject: str  # "t-0" or "t-0@2"
    from_state: str
    to_state: str

    def to_json(self) -> dict[str, str]:
        """The contract's trace form."""
        return {self.machine: self.subject, "from": self.from_state, "to": self.to_state}


class Effects(NamedTuple):
    """Everything one step emitted, in order."""

    requests: tuple[Request, ...] = ()
    state_changes: tuple[StateChange, ...] = ()
    notes: tuple[str, ...] = ()  # what a reader of the trace should know (a write refused, a leader kept)
    result: Any = None  # a step's answer where it has one (e.g. records consumed)

    def to_json(self) -> dict[str, Any]:
        """The per-step log entry of the contract (without step number and op)."""
        out: dict[str, Any] = {
            "requests": [r.to_json() for r in self.requests],
            "state_changes": [c.to_json() for c in self.state_changes],
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out
