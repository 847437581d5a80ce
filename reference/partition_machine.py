"""The partition state machine (Kafka's PartitionStateMachine.handleStateChanges)."""

from __future__ import annotations

from collections.abc import Iterable

from kcm.model.errors import NoLeaderAvailable
from kcm.model.names import tp_name
from kcm.model.states import PartitionState as P
from kcm.model.txn import Txn, draft_lookup, draft_peek, draft_sorted_items
from kcm.reference import leadership, requests, selectors
from kcm.reference.context import eligible_brokers, is_deleting


def handle_partition_changes(t: Txn, tps: Iterable[tuple], target: str, selector: str | None = None,
                             strict: bool = False) -> list[tuple]:
    """Move partitions to target, then send the batch; returns the partitions that could not be moved.

    Controller operations (strict False) skip moves the table refuses and partitions without an
    eligible leader, as Kafka does; a direct call (strict True) raises instead.
    """
    failed = []
    for tp in tps:
        if not strict and not t.can_move_partition(tp, target):
            failed.append(tp)
            continue
        if target == P.ONLINE:
            # Check the move first so an illegal one is reported as such, not as a missing leader.
            if strict and not t.can_move_partition(tp, target):
                t.set_partition_state(tp, target)
            if not _bring_online(t, tp, selector):
                if strict:
                    raise NoLeaderAvailable(f"no eligible leader for {tp_name(tp)} (selector "
                                            f"{selector or _default_selector(t, tp)})")
                t.note(f"{tp_name(tp)}: no eligible leader; left {t.partition_state(tp)}")
                failed.append(tp)
                continue
        t.set_partition_state(tp, target)
    requests.flush(t)
    return failed


def _default_selector(t: Txn, tp: tuple) -> str:
    return "initial" if t.partition_state(tp) == P.NEW else selectors.OFFLINE


def _bring_online(t: Txn, tp: tuple, selector: str | None) -> bool:
    if t.partition_state(tp) == P.NEW and tp not in t.zk.partitions:
        return initialize_leader_and_isr(t, tp)
    return elect_leader(t, tp, selector or selectors.OFFLINE)


def initialize_leader_and_isr(t: Txn, tp: tuple) -> bool:
    """NewPartition -> OnlinePartition: the first live replica leads, the live replicas form the ISR."""
    live = eligible_brokers(t)
    ar = draft_lookup(t.ctx, "assignments", tp, ())
    live_ar = tuple([b for b in ar if b in live])
    if not live_ar:
        return False
    leadership.create_partition_state(t, tp, live_ar[0], live_ar)
    requests.add_leader_and_isr(t, live_ar, tp)
    return True


def choose(t: Txn, tp: tuple, selector: str, isr: tuple[int, ...]) -> selectors.Choice:
    """Run the named selector on the partition's AR and the given ISR."""
    ar = draft_lookup(t.ctx, "assignments", tp, ())  # read without thawing the field
    live = eligible_brokers(t)
    if selector == selectors.OFFLINE:
        return selectors.offline(ar, isr, live, t.config.unclean_leader_election)
    if selector == selectors.REASSIGNED:
        r = draft_lookup(t.ctx, "reassignments", tp)
        return selectors.reassigned(r.target if r is not None else ar, isr, live)
    if selector == selectors.PREFERRED:
        return selectors.preferred(ar, isr, live)
    if selector == selectors.CONTROLLED_SHUTDOWN:
        return selectors.controlled_shutdown(ar, isr, draft_peek(t.ctx, "live_brokers"),
                                             draft_peek(t.ctx, "shutting_down"))
    raise ValueError(f"unknown selector {selector!r}; known: {', '.join(selectors.NAMES)}")


def elect_leader(t: Txn, tp: tuple, selector: str) -> bool:
    """OfflinePartition/OnlinePartition -> OnlinePartition: select, write with the next leader epoch, notify."""
    new = leadership.update_leader_and_isr(t, tp, lambda cur: choose(t, tp, selector, cur.isr))
    if new is None:
        return False
    r = draft_lookup(t.ctx, "reassignments", tp)
    if selector == selectors.REASSIGNED and r is not None:
        recipients = r.target
    else:
        recipients = draft_lookup(t.ctx, "assignments", tp, ())
    requests.add_leader_and_isr(t, recipients, tp)
    return True


def trigger_online_partition_state_change(t: Txn) -> None:
    """Every NewPartition and OfflinePartition not being deleted -> OnlinePartition (offline selector)."""
    tps = [tp for tp, s in draft_sorted_items(t.ctx, "partition_states")
           if s in (P.NEW, P.OFFLINE) and not is_deleting(t, tp[0])]
    handle_partition_changes(t, tps, P.ONLINE, selectors.OFFLINE)
