"""The controller's writes of partition state znodes: conditional on zkVersion, fenced by the controller epoch.

Each check lives here once, so a bug variant can revert it: the zkVersion condition of a leader/ISR write
(`conditional_write`) and the /controller_epoch zkVersion guard of every controller write
(`check_controller_epoch`, the KAFKA-6082 fix).
"""

from __future__ import annotations

from collections.abc import Callable

from kcm.model.cluster import NO_LEADER, LeaderAndIsr
from kcm.model.errors import StaleControllerEpoch
from kcm.model.txn import OutOfBounds, Txn, draft_lookup

MAX_RETRIES = 3


def check_controller_epoch(t: Txn) -> None:
    """Refuse a controller write when /controller_epoch moved past the epoch this controller was elected with."""
    if t.config.has("KAFKA-6082"):
        return
    if t.ctx.controller_id < 0 or t.ctx.epoch_zk_version != t.zk.controller_epoch_zk_version:
        raise StaleControllerEpoch(
            f"controller {t.ctx.controller_id} (epoch {t.ctx.epoch}) is fenced: /controller_epoch is at "
            f"{t.zk.controller_epoch} (zkVersion {t.zk.controller_epoch_zk_version})")


def conditional_write(t: Txn, tp: tuple, new: LeaderAndIsr, expected_zk_version: int) -> bool:
    """Write a partition state znode if its zkVersion is still expected_zk_version; False on a mismatch."""
    check_controller_epoch(t)
    current = draft_lookup(t.zk, "partitions", tp)
    if current is not None and current.zk_version != expected_zk_version and not t.config.has("no-zkversion-check"):
        return False
    limit = t.max_leader_epoch
    if limit is not None and new.leader_epoch > limit:
        raise OutOfBounds(f"{tp[0]}-{tp[1]}: leader epoch {new.leader_epoch} passes the bound {limit}")
    t.zk.partitions[tp] = new
    t.ctx.leadership[tp] = new
    if new.leader != NO_LEADER:
        t.ghost.elected[(tp[0], tp[1], new.leader_epoch)] = new.leader
    return True


def create_partition_state(t: Txn, tp: tuple, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
    """Create a new partition's state znode: leader epoch 0, zkVersion 0 (contract rule 11)."""
    check_controller_epoch(t)
    lai = LeaderAndIsr(leader, 0, tuple(sorted(isr)), t.ctx.epoch, 0)
    t.zk.partitions[tp] = lai
    t.ctx.leadership[tp] = lai
    if leader != NO_LEADER:
        t.ghost.elected[(tp[0], tp[1], 0)] = leader
    return lai


def update_leader_and_isr(t: Txn, tp: tuple,
                          decide: Callable[[LeaderAndIsr], tuple[int, tuple[int, ...]] | None]) -> LeaderAndIsr | None:
    """Read the znode, decide (leader, ISR), write it with the next leader epoch; retry on a stale zkVersion.

    `decide` returns None to leave the partition as it is. Every write made here bumps the leader
    epoch and the zkVersion (contract rule 11).
    """
    for _ in range(MAX_RETRIES):
        current = draft_lookup(t.zk, "partitions", tp)
        if current is None:
            return None
        decision = decide(current)
        if decision is None:
            return None
        leader, isr = decision
        new = LeaderAndIsr(leader, bump_leader_epoch(current), tuple(sorted(isr)), t.ctx.epoch,
                           current.zk_version + 1)
        if conditional_write(t, tp, new, current.zk_version):
            return new
        t.note(f"write of {tp[0]}-{tp[1]} refused: stale zkVersion; re-reading ZooKeeper")
    return None


def bump_leader_epoch(current: LeaderAndIsr) -> int:
    """The leader epoch of the controller's next write of this partition."""
    return current.leader_epoch + 1


def refresh_from_zk(t: Txn, tp: tuple) -> None:
    """Update the controller's cached leadership of tp from ZooKeeper (an ISR-change notification)."""
    lai = draft_lookup(t.zk, "partitions", tp)
    if lai is not None and t.ctx.controller_id >= 0:
        t.ctx.leadership[tp] = lai


def remove_replica_from_isr(t: Txn, tp: tuple, replica: int) -> LeaderAndIsr | None:
    """The controller takes replica out of the ISR (and the leadership), never emptying the ISR (rule 12)."""

    def decide(cur: LeaderAndIsr) -> tuple[int, tuple[int, ...]] | None:
        if replica not in cur.isr and cur.leader != replica:
            return None
        leader = NO_LEADER if cur.leader == replica else cur.leader
        isr = cur.isr if len(cur.isr) == 1 else tuple([b for b in cur.isr if b != replica])
        return leader, isr

    return update_leader_and_isr(t, tp, decide)
