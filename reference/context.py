"""Small reads of the controller's context shared by every controller operation."""

from __future__ import annotations

from kcm.model.txn import Txn, draft_has, draft_peek, draft_sorted_items


def eligible_brokers(t: Txn) -> set[int]:
    """Brokers that may lead: live and not shutting down (Kafka's liveBrokerIds)."""
    ctx = t.ctx
    return set(draft_peek(ctx, "live_brokers")).difference(draft_peek(ctx, "shutting_down"))


def is_deleting(t: Txn, topic: str) -> bool:
    """Whether the topic is queued for deletion."""
    return draft_has(t.ctx, "topics_to_delete", topic)


def partitions_of(t: Txn, topic: str) -> list[tuple]:
    """The topic's partitions the controller knows, in partition order."""
    return sorted([tp for tp in t.ctx.assignments if tp[0] == topic])


def replicas_on(t: Txn, brokers: set[int]) -> list[tuple[tuple, int]]:
    """Every (partition, broker) replica of the assignment hosted on one of brokers."""
    return [(tp, b) for tp, ar in draft_sorted_items(t.ctx, "assignments") for b in ar if b in brokers]


def topic_exists(t: Txn, topic: str) -> bool:
    """Whether the topic is registered in ZooKeeper (/brokers/topics)."""
    return any(tp[0] == topic for tp in t.zk.assignments)


def has_controller(t: Txn) -> bool:
    """Whether a controller is active."""
    return t.ctx.controller_id >= 0
