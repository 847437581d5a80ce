"""The transition tables as data: for each target state, the states it may be entered from.

Read each entry as the seeds write it: "OfflinePartition <- NewPartition, OnlinePartition" means a
partition may move to OfflinePartition from NewPartition or OnlinePartition and from nothing else.
"""

from __future__ import annotations

from typing import NamedTuple

from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R


class RuleSet(NamedTuple):
    """One named pair of transition tables: target state -> valid previous states."""

    name: str
    description: str
    partition: dict[str, frozenset[str]]
    replica: dict[str, frozenset[str]]

    def partition_states(self) -> tuple[str, ...]:
        """The partition states this rule set knows."""
        return tuple(s for s in P.ALL if s in self.partition)

    def replica_states(self) -> tuple[str, ...]:
        """The replica states this rule set knows."""
        return tuple(s for s in R.ALL if s in self.replica)

    def allows_partition(self, from_state: str, to_state: str) -> bool:
        """Whether the partition table allows from_state -> to_state."""
        prev = self.partition.get(to_state)
        return prev is not None and from_state in prev

    def allows_replica(self, from_state: str, to_state: str) -> bool:
        """Whether the replica table allows from_state -> to_state."""
        prev = self.replica.get(to_state)
        return prev is not None and from_state in prev

    def has_deletion_states(self) -> bool:
        """Whether replicas pass through ReplicaDeletionStarted/Successful/Ineligible when deleted."""
        return R.DELETION_STARTED in self.replica


def _table(rows: dict[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
    return {target: frozenset(prev) for target, prev in rows.items()}


# Seeds 000 and 002: the partition state machine.
_SEED_PARTITION = {
    P.NEW: (P.NON_EXISTENT,),
    P.ONLINE: (P.NEW, P.ONLINE, P.OFFLINE),
    P.OFFLINE: (P.NEW, P.ONLINE),
    P.NON_EXISTENT: (P.OFFLINE,),
}

# Seed 003 (validPreviousStates of each target), seven states.
_SEED_REPLICA = {
    R.NEW: (R.NON_EXISTENT,),
    R.ONLINE: (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE),
    R.OFFLINE: (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE),
    R.DELETION_STARTED: (R.OFFLINE,),
    R.DELETION_SUCCESSFUL: (R.DELETION_STARTED,),
    R.DELETION_INELIGIBLE: (R.DELETION_STARTED,),
    R.NON_EXISTENT: (R.DELETION_SUCCESSFUL,),
}

# Apache Kafka 3.x (ZooKeeper mode) adds two moves to the seeds' tables.
_KAFKA_PARTITION = dict(_SEED_PARTITION, **{P.OFFLINE: (P.NEW, P.ONLINE, P.OFFLINE)})
_KAFKA_REPLICA = dict(_SEED_REPLICA, **{R.DELETION_INELIGIBLE: (R.OFFLINE, R.DELETION_STARTED)})

# Seed 000 (Kafka 0.8): four replica states, deletion goes straight from OfflineReplica.
_KAFKA08_REPLICA = {
    R.NEW: (R.NON_EXISTENT,),
    R.ONLINE: (R.NEW, R.ONLINE, R.OFFLINE),
    R.OFFLINE: (R.NEW, R.ONLINE),
    R.NON_EXISTENT: (R.OFFLINE,),
}

RULE_SETS: dict[str, RuleSet] = {
    "seeds": RuleSet(
        "seeds",
        "the seeds' tables: partition machine of seeds 000/002, seven-state replica machine of seed 003",
        _table(_SEED_PARTITION),
        _table(_SEED_REPLICA),
    ),
    "kafka": RuleSet(
        "kafka",
        "Apache Kafka 3.x ZooKeeper-mode controller: the seeds plus OfflinePartition -> OfflinePartition "
        "and OfflineReplica -> ReplicaDeletionIneligible",
        _table(_KAFKA_PARTITION),
        _table(_KAFKA_REPLICA),
    ),
    "kafka-0.8": RuleSet(
        "kafka-0.8",
        "seed 000 (Kafka 0.8): the partition machine and the four-state replica machine",
        _table(_SEED_PARTITION),
        _table(_KAFKA08_REPLICA),
    ),
}

DEFAULT_RULES = "seeds"  # a scenario's rule set when its config names none (the contract fixes it)
ORACLE_RULES = "kafka"  # what the oracles (check-trace, check-log, the oracle API, the pytest plugin) judge by default


def rule_set(name: str) -> RuleSet:
    """The rule set of that name; a KeyError names the known ones."""
    found = RULE_SETS.get(name)  # no try block: this runs for every step
    if found is None:
        raise KeyError(f"unknown rule set {name!r}; known: {', '.join(RULE_SETS)}")
    return found
