"""Kafka's names for the partition and replica states, as plain strings (cheap to hash and pickle)."""

from __future__ import annotations


class PartitionState:
    """The four states of the partition state machine (seeds 000, 002)."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    ALL = (NON_EXISTENT, NEW, ONLINE, OFFLINE)


class ReplicaState:
    """The seven states of the replica state machine (seeds 002, 003); seed 000 knows the first four."""

    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    NON_EXISTENT = "NonExistentReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    ALL = (NEW, ONLINE, OFFLINE, NON_EXISTENT, DELETION_STARTED, DELETION_SUCCESSFUL, DELETION_INELIGIBLE)
    DELETION = (DELETION_STARTED, DELETION_SUCCESSFUL, DELETION_INELIGIBLE)
