"""Kafka's textual names: TopicPartition "t-0" and replica "t-0@2", parsed and printed in one place."""

from __future__ import annotations

TopicPartition = tuple  # (topic: str, partition: int)


def tp_name(tp: TopicPartition) -> str:
    """Kafka's TopicPartition form, e.g. "t-0"."""
    return f"{tp[0]}-{tp[1]}"


def replica_name(tp: TopicPartition, broker: int) -> str:
    """The contract's replica form, e.g. "t-0@2"."""
    return f"{tp[0]}-{tp[1]}@{broker}"


def parse_tp(name: str) -> TopicPartition:
    """Parse "t-0" (the topic may itself contain dashes); ValueError if it is not of that form."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        raise ValueError(f"{name!r} is not a partition name of the form <topic>-<partition>")
    return (topic, int(part))


def parse_replica(name: str) -> tuple[TopicPartition, int]:
    """Parse "t-0@2" into ((topic, partition), broker); ValueError if it is not of that form."""
    left, sep, broker = name.rpartition("@")
    if not sep or not broker.lstrip("-").isdigit():
        raise ValueError(f"{name!r} is not a replica name of the form <topic>-<partition>@<broker>")
    return parse_tp(left), int(broker)
