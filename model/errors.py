"""The named errors of the contract: a refused step raises one of these and changes nothing."""

from __future__ import annotations


class KcmError(Exception):
    """Base of every refusal the model can give; `name` is the contract's error name."""

    name = "KcmError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_json(self) -> dict[str, str]:
        """The error as the result document and traces show it."""
        return {"error": self.name, "message": self.message}


class IllegalStateTransition(KcmError):
    """A move that the active rule set's table does not allow."""

    name = "IllegalStateTransition"

    def __init__(self, machine: str, subject: str, from_state: str, to_state: str, rules: str) -> None:
        super().__init__(
            f"{machine} {subject}: {from_state} -> {to_state} is not a valid transition under rules '{rules}'"
        )
        self.machine = machine
        self.subject = subject
        self.from_state = from_state
        self.to_state = to_state
        self.rules = rules


class NoLeaderAvailable(KcmError):
    """A leader selector found no eligible replica."""

    name = "NoLeaderAvailable"


class StaleControllerEpoch(KcmError):
    """A request or write carried a controller epoch older than the newest one seen."""

    name = "StaleControllerEpoch"


class UnknownTopicOrPartition(KcmError):
    """The topic or partition does not exist at this moment."""

    name = "UnknownTopicOrPartition"


class InvalidReplicaAssignment(KcmError):
    """An assignment or reassignment target that names unregistered brokers, duplicates, or nothing."""

    name = "InvalidReplicaAssignment"


class ReassignmentInProgress(KcmError):
    """The topic has a partition under reassignment."""

    name = "ReassignmentInProgress"


class BrokerNotAvailable(KcmError):
    """The broker is not in the state the operation needs (not live, not registered, already live)."""

    name = "BrokerNotAvailable"


class NotEnoughReplicas(KcmError):
    """An acks=all produce while the ISR is smaller than min.insync.replicas: nothing is appended."""

    name = "NotEnoughReplicas"


class NotLeaderOrFollower(KcmError):
    """A data-plane request reached a replica that is not the leader (or has no leader)."""

    name = "NotLeaderOrFollower"


class FencedLeaderEpoch(KcmError):
    """A fetch carried a leader epoch older than the replica's (KIP-320 fencing)."""

    name = "FencedLeaderEpoch"


class StaleZkVersion(KcmError):
    """A conditional write to a partition state znode carried an outdated zkVersion."""

    name = "StaleZkVersion"


ERRORS: dict[str, type[KcmError]] = {
    cls.name: cls
    for cls in (
        IllegalStateTransition,
        NoLeaderAvailable,
        StaleControllerEpoch,
        UnknownTopicOrPartition,
        InvalidReplicaAssignment,
        ReassignmentInProgress,
        BrokerNotAvailable,
        NotEnoughReplicas,
        NotLeaderOrFollower,
        FencedLeaderEpoch,
        StaleZkVersion,
    )
}


class NoRequestInFlight(KcmError):
    """A delivery step found no control request waiting for that broker."""

    name = "NoRequestInFlight"


class NotController(KcmError):
    """A step of a (zombie) controller that does not exist."""

    name = "NotController"


class NoEventQueued(KcmError):
    """A controller-event step found no event in that controller's queue (grain "event")."""

    name = "NoEventQueued"


class ControllerBlocked(KcmError):
    """A step that needs the controller lock while the controller holds it, blocked on a full request queue
    (variant KAFKA-1305)."""

    name = "ControllerBlocked"
