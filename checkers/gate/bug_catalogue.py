"""Kafka's bug history as named model variants: each reverts one fix at the one place the model holds it.

A variant is either a switch (one of `kcm.model.variants.SWITCHES`, listed in a config's `variants` and read
with `config.has(NAME)` where the fix lives) or a setting the model already has (the truncation rule, unclean
election). `on` is what a bounded configuration gets to show the bug, `off` what it gets to show the fixed model
is clean. `breaks` names the catalogue properties the bug violates (any one of them rediscovers it), `where` the
source file that reads the switch or holds the setting. The model knows only the switch names; what each bug
is, and how `kcm bugs` shows it, is said here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kcm.model.variants import SWITCHES


class Variant(NamedTuple):
    """One catalogued bug as a model variant."""

    name: str
    title: str
    affected: str  # Kafka versions with the bug
    fixed: str  # first Kafka version with the fix
    breaks: tuple[str, ...]  # property names, any of which the bug violates
    where: str  # the module that reads the switch (or holds the setting)
    on: dict[str, Any]  # config keys that put the bug in
    off: dict[str, Any]  # config keys of the fixed model


def _switch(name: str) -> dict[str, Any]:
    return {"variants": [name]}


VARIANTS: tuple[Variant, ...] = (
    Variant("KIP-101", "follower truncates to its high watermark and loses acknowledged records (KAFKA-1211)",
            "<= 0.10.2", "0.11.0", ("AckedRecordsSurvive", "LogsAgreeBelowHw"), "reference/truncation.py",
            {"truncation": "high_watermark"}, {"truncation": "leader_epoch"}),
    Variant("KIP-279", "log divergence after fast leader fail-over (KAFKA-6361)",
            "0.11.0 - 1.1", "2.0.0", ("LogsAgreeBelowHw", "AckedRecordsSurvive"), "reference/truncation.py",
            {"truncation": "leader_epoch"}, {"truncation": "kip279"}),
    Variant("KIP-320", "a fetch carries no leader epoch: a follower that missed leader changes is served by a leader "
            "whose log changed, and takes a HW over a record that leader no longer has (KAFKA-7395)",
            "<= 2.0", "2.1.0", ("LogsAgreeBelowHw", "AckedRecordsSurvive"), "reference/truncation.py",
            {"truncation": "kip279"}, {"truncation": "kip320"}),
    Variant("KAFKA-7128", "a follower rejoins the ISR having caught up only to a lagging high watermark",
            "<= 2.0.0", "2.0.1", ("IsrJoinsReachEpochStart", "AckedRecordsSurvive"), "reference/dataplane.py",
            _switch("KAFKA-7128"), {}),
    Variant("KIP-106", "unclean leader election on by default: an out-of-sync replica is elected (KAFKA-4623)",
            "<= 0.10.2", "0.11.0", ("AckedRecordsSurvive", "LeaderInIsrInAr"), "reference/selectors.py",
            {"unclean_leader_election": True}, {"unclean_leader_election": False}),
    Variant("KAFKA-6082", "controller writes not fenced by the /controller_epoch zkVersion: a zombie elects",
            "0.11.0 - 2.0", "2.1.0", ("ZkEpochFencing", "ControllerCacheMatchesZk"), "reference/leadership.py",
            _switch("KAFKA-6082"), {}),
    Variant("KAFKA-1120", "a fast broker bounce goes unnoticed: the restarted broker never learns its partitions "
            "(KIP-380)", "<= 2.1", "2.2.0", ("LivenessView",), "reference/brokers.py", _switch("KAFKA-1120"), {}),
    Variant("KAFKA-8152", "controller failover leaves replicas on dead brokers ReplicaDeletionIneligible, not "
            "offline (KAFKA-3143)", "<= 2.2", "2.3.0", ("LivenessView", "DeletionStatesOnlyWhileDeleting"),
            "reference/controller.py", _switch("KAFKA-8152"), {}),
    Variant("KAFKA-4214", "a resumed reassignment with a new replica not yet live is abandoned half done",
            "<= 0.10.0", "0.10.1.0", ("ReassignmentEndsComplete",), "reference/controller.py",
            _switch("KAFKA-4214"), {}),
    Variant("KAFKA-9478", "an entry the controller will not act on stays in /admin/reassign_partitions",
            ">= 2.4 (ZooKeeper path)", "unfixed upstream (workaround: re-elect the controller)",
            ("ReassignmentsTracked",), "reference/reassignment.py", _switch("KAFKA-9478"), {}),
)

VARIANTS += (
    Variant("KAFKA-2729", "a broker whose session expired is not told what changed: it keeps its old leadership "
            "and zkVersion, and its ISR updates fail forever", "0.8.2 - 1.0", "1.1.0", ("ReplicasFollowZk",),
            "reference/brokers.py", _switch("KAFKA-2729"), {}),
    Variant("KAFKA-12315", "a fenced controller's request batch is not cleared, so that broker cannot become "
            "controller again (KAFKA-3173's message)", "2.x", "unmerged upstream (PR 10089)", ("ControllerActive",),
            "reference/zombie.py", _switch("KAFKA-12315"), {}),
    Variant("KAFKA-2937", "a topic whose partition has no leader and ISR znode can never finish deletion",
            "0.9.0", "0.10.0.0", ("DeletionProgress",), "reference/replica_machine.py", _switch("KAFKA-2937"), {}),
    # At the event grain (config "grain": "event"): found only where other steps come between controller events.
    Variant("KAFKA-6650", "a topic's deletion cut half way by a failover cannot be finished: the new controller leaves "
            "the replicas of partitions whose state znode is gone online", "<= 1.1", "2.0.0", ("DeletionProgress",),
            "reference/replica_machine.py", _switch("KAFKA-6650"), {}),
    Variant("KAFKA-3083", "a controller that lost its session still processes the events it had queued, with its "
            "stale context (the 1.1.0 part; its writes unfenced before KAFKA-6082's fix)", "<= 1.0", "1.1.0",
            ("ZkEpochFencing", "ControllerCacheMatchesZk"), "reference/controller.py", _switch("KAFKA-3083"), {}),
    Variant("KAFKA-9307", "a leader made follower records the new leader epoch, loses its session before the move "
            "is done, and ignores the resent LeaderAndIsr of that epoch: it never follows", "2.2.0 - 2.4.0", "2.4.1",
            ("ReplicasFollowZk", "LivenessView"), "reference/brokers.py", _switch("KAFKA-9307"), {}),
    # Under "delivery": "async", with the queues bounded by the config's controller_message_queue_size.
    Variant("KAFKA-1305", "the controller blocks, holding its lock, on a full request queue whose send thread waits "
            "for that lock to run a topic deletion callback: the controller hangs", "0.8.1", "0.8.2.0",
            ("ControllerNotDeadlocked",), "reference/requests.py", _switch("KAFKA-1305"), {}),
)


def by_name(name: str) -> Variant:
    """The variant of that name; KeyError lists the known ones."""
    for v in VARIANTS:
        if v.name == name:
            return v
    raise KeyError(f"unknown variant {name!r}; known: {', '.join(v.name for v in VARIANTS)}")


def is_switch(v: Variant) -> bool:
    """Whether the variant is one of the model's switches (rather than a setting the model already has)."""
    return v.on.get("variants") == [v.name] and v.name in SWITCHES


__all__ = ["VARIANTS", "Variant", "by_name", "is_switch"]
