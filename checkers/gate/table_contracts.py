"""The laws every rule set's transition tables obey, as icontract postconditions that CrossHair checks.

Each function asks the active table one question (the same question the state machines ask through
`model.transitions`) and its postconditions state what the seeds say must always be true of the answer:
a partition is new only once and leaves existence only from OfflinePartition, a replica is deleted only
from OfflineReplica through the deletion states, and the "kafka" rule set only adds moves to "seeds".
`crosshair check --analysis_kind=icontract` searches for inputs that break them; `violations()` checks
the same laws exhaustively in-process (the tables are small), which is what the mutants script runs.
"""

from __future__ import annotations

import icontract
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import RULE_SETS, rule_set
from kcm.model.transitions import partition_move, replica_move


@icontract.require(lambda rules: rules in RULE_SETS)
@icontract.require(lambda from_state, to_state: from_state in P.ALL and to_state in P.ALL)
@icontract.ensure(lambda result, from_state, to_state: not result or to_state != P.NEW or from_state == P.NON_EXISTENT,
                  "a partition becomes NewPartition only when it is created")
@icontract.ensure(lambda result, from_state, to_state: not result or from_state != P.NON_EXISTENT or to_state == P.NEW,
                  "a partition that does not exist can only be created")
@icontract.ensure(lambda result, from_state, to_state: not result or to_state != P.NON_EXISTENT
                  or from_state == P.OFFLINE, "a partition is removed only from OfflinePartition")
@icontract.ensure(lambda result, from_state, to_state: not result or from_state != P.NEW
                  or to_state in (P.OFFLINE, P.ONLINE), "a NewPartition goes online or offline, nowhere else")
def partition_move_allowed(rules: str, from_state: str, to_state: str) -> bool:
    """Whether the named rule set lets a partition move from_state -> to_state."""
    return rule_set(rules).allows_partition(from_state, to_state)


@icontract.require(lambda rules: rules in RULE_SETS)
@icontract.require(lambda from_state, to_state: from_state in R.ALL and to_state in R.ALL)
@icontract.ensure(lambda result, from_state, to_state: not result or to_state != R.NEW or from_state == R.NON_EXISTENT,
                  "a replica becomes NewReplica only when it is created")
@icontract.ensure(lambda result, from_state, to_state: not result or from_state != R.NON_EXISTENT or to_state == R.NEW,
                  "a replica that does not exist can only be created")
@icontract.ensure(lambda result, from_state, to_state: not result or to_state != R.DELETION_STARTED
                  or from_state == R.OFFLINE, "deletion starts only from OfflineReplica")
@icontract.ensure(lambda result, rules, from_state, to_state: not result or to_state != R.NON_EXISTENT
                  or from_state == (R.DELETION_SUCCESSFUL if rule_set(rules).has_deletion_states() else R.OFFLINE),
                  "a replica is removed only after its deletion succeeded (or from OfflineReplica without them)")
@icontract.ensure(lambda result, from_state, to_state: not result or from_state != R.DELETION_SUCCESSFUL
                  or to_state == R.NON_EXISTENT, "ReplicaDeletionSuccessful is left only towards NonExistentReplica")
def replica_move_allowed(rules: str, from_state: str, to_state: str) -> bool:
    """Whether the named rule set lets a replica move from_state -> to_state."""
    return rule_set(rules).allows_replica(from_state, to_state)


@icontract.require(lambda from_state, to_state: from_state in P.ALL and to_state in P.ALL)
@icontract.ensure(lambda result: result, "every partition move of 'seeds' is a move of 'kafka'")
def kafka_partition_table_extends_seeds(from_state: str, to_state: str) -> bool:
    """Whether a partition move allowed by "seeds" is allowed by "kafka" (vacuously true if not in seeds)."""
    return not partition_move_allowed("seeds", from_state, to_state) or partition_move_allowed(
        "kafka", from_state, to_state)


@icontract.require(lambda from_state, to_state: from_state in R.ALL and to_state in R.ALL)
@icontract.ensure(lambda result: result, "every replica move of 'seeds' is a move of 'kafka'")
def kafka_replica_table_extends_seeds(from_state: str, to_state: str) -> bool:
    """Whether a replica move allowed by "seeds" is allowed by "kafka" (vacuously true if not in seeds)."""
    return not replica_move_allowed("seeds", from_state, to_state) or replica_move_allowed(
        "kafka", from_state, to_state)


@icontract.require(lambda rules: rules in RULE_SETS)
@icontract.require(lambda rules, from_state, to_state: partition_move_allowed(rules, from_state, to_state))
@icontract.ensure(lambda result, to_state: result == to_state, "an allowed move lands on its target")
def checked_partition_move(rules: str, from_state: str, to_state: str) -> str:
    """Move a partition through the guarded transition (IllegalStateTransition if refused)."""
    return partition_move(rule_set(rules), "t-0", from_state, to_state)


@icontract.require(lambda rules: rules in RULE_SETS)
@icontract.require(lambda rules, from_state, to_state: replica_move_allowed(rules, from_state, to_state))
@icontract.ensure(lambda result, to_state: result == to_state, "an allowed move lands on its target")
def checked_replica_move(rules: str, from_state: str, to_state: str) -> str:
    """Move a replica through the guarded transition (IllegalStateTransition if refused)."""
    return replica_move(rule_set(rules), "t-0@0", from_state, to_state)


def _law(err: icontract.ViolationError) -> str:
    # icontract's message: a location line, then "<description>: <condition>:", then the values.
    lines = str(err).splitlines()
    return (lines[1] if len(lines) > 1 else lines[0]).split(": ")[0]


def violations() -> list[str]:
    """Every table law broken by the active tables, found by trying each rule set and pair of states."""
    found: list[str] = []
    checks = [(partition_move_allowed, P.ALL), (replica_move_allowed, R.ALL)]
    for rules in RULE_SETS:
        for fn, states in checks:
            for a in states:
                for b in states:
                    try:
                        fn(rules, a, b)
                    except icontract.ViolationError as err:
                        found.append(f"{rules}: {a} -> {b}: {_law(err)}")
    for fn, states in ((kafka_partition_table_extends_seeds, P.ALL), (kafka_replica_table_extends_seeds, R.ALL)):
        for a in states:
            for b in states:
                try:
                    fn(a, b)
                except icontract.ViolationError as err:
                    found.append(f"{a} -> {b}: {_law(err)}")
    return found
