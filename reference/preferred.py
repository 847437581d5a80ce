"""Preferred replica election (onPreferredReplicaElection)."""

from __future__ import annotations

from kcm.model.actions import PreferredElection
from kcm.model.errors import UnknownTopicOrPartition
from kcm.model.names import tp_name
from kcm.model.states import PartitionState as P
from kcm.model.txn import Txn, draft_lookup
from kcm.reference import selectors
from kcm.reference.context import has_controller, is_deleting
from kcm.reference.events import enqueue, processes
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import handle_partition_changes


def not_needed(deleting: bool, lai: object | None, ar: tuple[int, ...]) -> bool:
    """Whether a preferred election skips the partition: being deleted, not led, or led by its preferred replica.

    Kafka 3.x skips partitions being deleted and those whose leader already is the preferred replica
    (ELECTION_NOT_NEEDED): no write, no epoch bump. A partition being reassigned is elected too, its preferred
    replica being the first of the reassignment's replica list (the target's first).
    """
    return deleting or lai is None or not ar or lai.leader == ar[0]


def tried(t: Txn, tps: list[tuple]) -> list[tuple]:
    """The partitions of tps a preferred election tries to re-elect: none without an active controller."""
    if not has_controller(t):
        return []
    ctx = t.ctx  # read with lookup: nothing is thawed (the explorer asks this of every state it expands)
    return [tp for tp in tps if not not_needed(is_deleting(t, tp[0]), draft_lookup(ctx, "leadership", tp),
                                               draft_lookup(ctx, "assignments", tp, ()))]


@handles(PreferredElection)
def preferred_election(t: Txn, a: PreferredElection) -> None:
    """Ask the controller for a preferred election of the partitions (all by default): a ReplicaLeaderElection."""
    if a.tps is None:
        tps = [tp for tp in sorted(t.zk.assignments) if tp[0] not in t.zk.delete_topics]
    else:
        for tp in a.tps:
            if tp not in t.zk.assignments or tp[0] in t.zk.delete_topics:
                raise UnknownTopicOrPartition(f"partition {tp_name(tp)} does not exist")
        tps = list(a.tps)
    if has_controller(t):
        enqueue(t, "ReplicaLeaderElection", tuple(tps))


@processes("ReplicaLeaderElection")
def replica_leader_election(t: Txn, tps: tuple) -> None:
    """ReplicaLeaderElection (preferred): the controller re-elects the partitions it finds not led by their
    preferred replica; those it does not know, or being deleted, are skipped."""
    for tp in handle_partition_changes(t, tried(t, list(tps)), P.ONLINE, selectors.PREFERRED):
        t.note(f"{tp_name(tp)}: preferred replica not eligible; leader kept")
