"""The only way a partition or replica state changes: a move checked against the table.

Each function is guarded by an icontract precondition that reads the active rule set's table; a move
the table refuses raises `IllegalStateTransition` (naming the subject, the from and the to state)
before anything is written, so a refused move changes nothing.
"""

from __future__ import annotations

import icontract
from kcm.model.errors import IllegalStateTransition
from kcm.model.tables import RuleSet


@icontract.require(
    lambda rules, subject, from_state, to_state: rules.allows_partition(from_state, to_state),
    "the partition table allows the move",
    error=lambda rules, subject, from_state, to_state: IllegalStateTransition(
        "partition", subject, from_state, to_state, rules.name
    ),
)
def partition_move(rules: RuleSet, subject: str, from_state: str, to_state: str) -> str:
    """Check one partition move against the table and return the new state."""
    return to_state


@icontract.require(
    lambda rules, subject, from_state, to_state: rules.allows_replica(from_state, to_state),
    "the replica table allows the move",
    error=lambda rules, subject, from_state, to_state: IllegalStateTransition(
        "replica", subject, from_state, to_state, rules.name
    ),
)
def replica_move(rules: RuleSet, subject: str, from_state: str, to_state: str) -> str:
    """Check one replica move against the table and return the new state."""
    return to_state
