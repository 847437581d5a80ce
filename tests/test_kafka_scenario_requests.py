"""The requests Kafka's controller unit tests verify on their mocked request batch, checked on the traces of the
scenarios in specs/scenarios/kafka/ that translate them (a scenario's `expect` sees only the final state)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kcm.checkers.core.scenario import parse_text, run

KAFKA_SCENARIOS = Path(__file__).resolve().parent.parent / "specs" / "scenarios" / "kafka"


def step_requests(name: str, step: int) -> list[tuple]:
    """(type, broker, partition or partitions, and leader, ISR or delete) of each request the step sent."""
    outcome = run(parse_text((KAFKA_SCENARIOS / name).read_bytes()), trace=True)
    assert outcome.mismatches == []
    out = []
    for r in outcome.result["log"][step]["requests"]:
        if r["type"] == "LeaderAndIsr":
            out.append(("LeaderAndIsr", r["broker"], r["partition"], r["leader"], r["isr"]))
        elif r["type"] == "UpdateMetadata":
            out.append(("UpdateMetadata", r["broker"], r["partitions"]))
        else:
            out.append(("StopReplica", r["broker"], r["partition"], r["delete"]))
    return out


def without_metadata(requests: list[tuple]) -> list[tuple]:
    """The LeaderAndIsr and StopReplica requests (each LeaderAndIsr batch also updates every live broker's metadata)."""
    return [r for r in requests if r[0] != "UpdateMetadata"]


def test_new_replica_to_offline_without_leadership_sends_empty_update_metadata():
    """testNewReplicaToOfflineReplicaTransition: StopReplica (no delete) to the broker, and UpdateMetadata to the live
    brokers, which carries no partition state for a partition without a leader and ISR (dead broker 2 gets none)."""
    assert step_requests("rsm-new-replica.json", 10) == [
        ("UpdateMetadata", 0, []), ("UpdateMetadata", 1, []), ("StopReplica", 1, "u-0", False)]


def test_online_replica_to_online_sends_leader_and_isr():
    """testOnlineReplicaToOnlineReplicaTransition: LeaderAndIsr with the current leadership to the broker."""
    assert without_metadata(step_requests("rsm-online-replica.json", 6)) == [("LeaderAndIsr", 0, "t-0", 0, [0, 1])]


def test_online_leader_replica_to_offline():
    """testOnlineReplicaToOfflineReplicaTransition: StopReplica to the leader's broker, LeaderAndIsr with no leader
    and the other replica as ISR to the other replica."""
    assert without_metadata(step_requests("rsm-online-replica.json", 7)) == [
        ("LeaderAndIsr", 1, "t-0", -1, [1]), ("StopReplica", 0, "t-0", False)]


@pytest.mark.parametrize("name,step,broker", [
    ("rsm-offline-replica.json", 6, 1),  # testOfflineReplicaToOnlineReplicaTransition
    ("rsm-deletion-ineligible.json", 7, 1),  # testReplicaDeletionIneligibleToOnlineReplicaTransition
])
def test_replica_to_online_sends_leader_and_isr(name, step, broker):
    """OfflineReplica / ReplicaDeletionIneligible -> OnlineReplica: LeaderAndIsr with the current leadership."""
    assert without_metadata(step_requests(name, step)) == [("LeaderAndIsr", broker, "t-0", 0, [0])]


def test_offline_replica_to_deletion_started_sends_stop_replica_with_delete():
    """testOfflineReplicaToReplicaDeletionStartedTransition, with no deletion queued: StopReplica(delete=true)."""
    assert step_requests("rsm-offline-replica.json", 8) == [("StopReplica", 1, "t-0", True)]


def test_an_offline_replica_outside_the_isr_still_sends_the_unchanged_leader_and_isr():
    """removeReplicasFromIsr returns the partitions that do not hold the replica unchanged: taking t-0@1 offline a
    second time (it left the ISR the first time) still sends the other replica LeaderAndIsr, same leader epoch."""
    assert without_metadata(step_requests("rsm-offline-replica.json", 7)) == [
        ("LeaderAndIsr", 0, "t-0", 0, [0]), ("StopReplica", 1, "t-0", False)]


def test_controlled_shutdown_election_tells_both_brokers():
    """testOnlinePartitionToOnlineTransitionForControlledShutdown: LeaderAndIsr to both brokers, the shutting-down
    one included."""
    assert without_metadata(step_requests("psm-controlled-shutdown-election.json", 1)) == [
        ("LeaderAndIsr", 0, "t-0", 1, [1]), ("LeaderAndIsr", 1, "t-0", 1, [1])]
