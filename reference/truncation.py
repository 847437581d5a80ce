"""Follower log recovery: the leader epoch cache and the four truncation variants of ClusterConfig.truncation.

A log is a tuple of leader epochs, one per record, so the leader epoch cache (epoch -> start offset) is
derived from it: an epoch's start offset is the offset of its first record.

- `high_watermark` (Kafka before KIP-101, seed 004): truncate to the local HW on becoming a follower and on
  restart, then fetch.
- `leader_epoch` (KIP-101): ask the leader for the end offset of the follower's last epoch; the leader answers
  with its LEO if that is its current epoch, else the start offset of the first epoch above it; truncate there.
- `kip279`: the leader also answers with the epoch it used (the largest it knows that is <= the one asked);
  the follower truncates to the smaller of the leader's end offset and its own end offset for that epoch.
- `kip320`: as kip279, and fetches carry the follower's leader epoch: a leader in another epoch refuses them.
  The contract delivers each LeaderAndIsr to every live replica at once (rule 6), so a follower and its leader
  never disagree on the epoch through contract ops alone and kip320 then behaves as kip279; the fencing matters
  for implementations (or states) where one replica learns of a new epoch before another.
"""

from __future__ import annotations

from collections.abc import Sequence

HIGH_WATERMARK = "high_watermark"
LEADER_EPOCH = "leader_epoch"
KIP279 = "kip279"
KIP320 = "kip320"
UNDEFINED_EPOCH = -1


def epoch_cache(log: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """The leader epoch cache of a log: (epoch, start offset) in offset order."""
    cache: list[tuple[int, int]] = []
    for offset, epoch in enumerate(log):
        if not cache or cache[-1][0] != epoch:
            cache.append((epoch, offset))
    return tuple(cache)


def end_offset_kip101(log: Sequence[int], current_epoch: int, asked: int) -> int:
    """KIP-101's OffsetsForLeaderEpoch answer: LEO for the current epoch, else the start of the next higher epoch."""
    if asked == current_epoch:
        return len(log)
    for epoch, start in epoch_cache(log):
        if epoch > asked:
            return start
    return len(log)


def end_offset_kip279(log: Sequence[int], asked: int) -> tuple[int, int]:
    """KIP-279's answer: (largest known epoch <= asked, the end offset of that epoch), or (UNDEFINED_EPOCH, -1)."""
    cache = epoch_cache(log)
    for i in range(len(cache) - 1, -1, -1):
        epoch = cache[i][0]
        if epoch <= asked:
            end = cache[i + 1][1] if i + 1 < len(cache) else len(log)
            return epoch, end
    return UNDEFINED_EPOCH, -1


def truncation_offset(variant: str, follower: Sequence[int], follower_hw: int, leader: Sequence[int],
                      leader_epoch: int) -> int:
    """The offset a follower of `leader` (in `leader_epoch`) truncates its log to before fetching, per variant."""
    if variant == HIGH_WATERMARK:
        return min(follower_hw, len(follower))
    if not follower:
        return 0
    asked = follower[-1]
    if variant == LEADER_EPOCH:
        return min(end_offset_kip101(leader, leader_epoch, asked), len(follower))
    # kip279 / kip320: the leader names the epoch it answered for; the follower also bounds by its own end of it.
    epoch, end = end_offset_kip279(leader, asked)
    if epoch == UNDEFINED_EPOCH:
        return min(follower_hw, len(follower))  # the leader knows no epoch this old: fall back to the HW
    own_epoch, own_end = end_offset_kip279(follower, epoch)
    return min(end, own_end if own_epoch != UNDEFINED_EPOCH else 0)


def truncates_on_become_follower(variant: str) -> bool:
    """Whether makeFollower truncates at once (to the HW) rather than in the fetcher's first round."""
    return variant == HIGH_WATERMARK


def truncates_on_restart(variant: str) -> bool:
    """Whether a restarting broker truncates every local log to its checkpointed HW (before KIP-101)."""
    return variant == HIGH_WATERMARK


def fences_fetches(variant: str) -> bool:
    """Whether fetches carry the follower's leader epoch and a leader in another epoch refuses them (KIP-320)."""
    return variant == KIP320
