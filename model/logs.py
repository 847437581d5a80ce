"""Read-only views of the replicas' logs in a Cluster value, shared by the reference and the properties."""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import NO_LEADER, ReplicaData


def epoch_start_offset(data: ReplicaData) -> int:
    """The start offset of the replica's current leader epoch: its first record in that epoch, else its LEO.

    A leader appends only in its own epoch, so this is its LEO when it became leader (Kafka's
    leaderEpochStartOffsetOpt, set in makeLeader).
    """
    return next((o for o, e in enumerate(data.log) if e == data.leader_epoch), data.leo)


def leader_log(state: Any, tp: tuple) -> tuple[int, ...] | None:
    """The log of tp's acting leader in a Cluster value, or None when no live broker leads it."""
    lai = dict(state.zk.partitions).get(tp)
    if lai is None or lai.leader == NO_LEADER:
        return None
    data = dict(state.replicas).get((tp[0], tp[1], lai.leader))
    broker = dict(state.brokers).get(lai.leader)
    if data is None or broker is None or not broker.alive or data.leader != lai.leader:
        return None
    return data.log
