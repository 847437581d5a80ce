"""A broker's side of the data plane: what it does to its local replicas' logs when it applies a LeaderAndIsr
(becomes leader or follower), crashes and restarts, and the leader's high watermark with the acks it releases.

Called by the broker side of control requests (reference/requests.py) and by broker failure and restart
(reference/brokers.py); the client and follower requests that use them are in reference/dataplane.py. Nothing here
calls back into the controller, which is what lets the controller's modules import it directly.
"""

from __future__ import annotations

from kcm.model.cluster import ReplicaData
from kcm.model.fmap import EMPTY
from kcm.model.txn import Txn, draft_lookup
from kcm.reference import truncation

# Replica records are rebuilt from all their fields in order with tuple.__new__ (what the NamedTuple's constructor
# does, minus its Python-level __new__ and _replace's keyword machinery). That needs the field order below.
_new = tuple.__new__
if ReplicaData._fields != ("log", "hw", "leader", "leader_epoch", "isr", "zk_version", "replicas", "remote_leo",
                           "truncating"):
    raise ImportError("kcm.reference.broker_logs: ReplicaData's fields changed; update its positional rebuilds")


def _key(tp: tuple, broker: int) -> tuple:
    return (tp[0], tp[1], broker)


def _advance_hw(t: Txn, tp: tuple, leader: int) -> None:
    """maybeIncrementLeaderHW: HW := max(HW, min LEO over the ISR); acks=all records below it are acknowledged."""
    key = (tp[0], tp[1], leader)
    data = t.replicas[key]
    log, hw, _, _, isr, _, _, remote, _ = data
    leo = len(log)
    if isr:
        if remote:
            remote = dict(remote)
            lowest = min([leo if b == leader else remote.get(b, 0) for b in isr])
        else:  # no follower has reported a LEO since this replica took over: each counts as offset 0
            lowest = leo
            for b in isr:
                if b != leader:
                    lowest = 0
                    break
        new_hw = hw if lowest < hw else lowest
    else:
        new_hw = hw if leo < hw else leo
    if new_hw != hw:
        t.replicas[key] = _new(ReplicaData, (log, new_hw, *data[2:]))
    pending = draft_lookup(t.ghost, "pending", tp, ())
    if not pending:
        return
    acked = tuple([r for r in pending if r[0] < new_hw and r[0] < len(log) and log[r[0]] == r[1]])
    # A pending record truncated away was never acknowledged: its producer saw an error.
    gone = tuple([r for r in pending if r[0] >= len(log) or log[r[0]] != r[1]])
    rest = tuple([r for r in pending if r not in acked and r not in gone])
    if acked:
        t.ghost.acked[tp] = t.ghost.acked.get(tp, ()) + acked
    if rest:
        t.ghost.pending[tp] = rest
    else:
        t.ghost.pending.pop(tp, None)


def _truncated(data: ReplicaData, offset: int) -> ReplicaData:
    """The replica with its log cut to `offset` (and its HW not above the new LEO)."""
    offset = max(0, min(offset, data.leo))
    return _new(ReplicaData, (data[0][:offset], min(data.hw, offset), *data[2:]))


# -- LeaderAndIsr, crash and restart (called by the controller's broker side) ---------------------------


def _forget_old_incarnation(t: Txn, tp: tuple, broker: int) -> None:
    """A first, empty replica of a partition with no other replica left is a new topic: drop the old one's history."""
    replicas = t.replicas
    if replicas[(tp[0], tp[1], broker)][0]:
        return
    topic, partition = tp
    for k in replicas:
        if k[1] == partition and k[0] == topic and k[2] != broker:
            return
    for name in ("acked", "consumed", "pending"):
        t.ghost.discard(name, tp)  # most partitions have none: no thaw, no freeze


def become_leader(t: Txn, tp: tuple, broker: int) -> None:
    """makeLeader: stop any pending truncation, forget followers' LEOs (they report again on their next fetch).

    acks=all produces still waiting on the old leader fail with the leadership change: they are never acknowledged,
    even if the new leader later commits the same records.
    """
    _forget_old_incarnation(t, tp, broker)
    key = _key(tp, broker)
    data = t.replicas[key]
    t.replicas[key] = _new(ReplicaData, (*data[:7], EMPTY, False))
    t.ghost.discard("pending", tp)
    _advance_hw(t, tp, broker)


def become_follower(t: Txn, tp: tuple, broker: int) -> None:
    """makeFollower: truncate to the HW at once (high_watermark) or at the first fetch (leader-epoch variants)."""
    _forget_old_incarnation(t, tp, broker)
    key = _key(tp, broker)
    data = t.replicas[key]
    data = _new(ReplicaData, (*data[:7], EMPTY, data[8]))
    if truncation.truncates_on_become_follower(t.config.truncation):
        data = _truncated(data, data.hw)
    else:
        data = _new(ReplicaData, (*data[:8], True))
    t.replicas[key] = data


def on_broker_crash(t: Txn, broker: int) -> None:
    """The broker's process dies: its in-memory follower LEOs go; logs and checkpointed HWs stay on disk."""
    for key, data in t.items("replicas"):
        if key[2] == broker and data.remote_leo:
            t.replicas[key] = _new(ReplicaData, (*data[:7], EMPTY, data[8]))


def on_broker_restart(t: Txn, broker: int) -> None:
    """Log recovery at startup: before KIP-101 every local log is truncated to its checkpointed HW."""
    if not truncation.truncates_on_restart(t.config.truncation):
        return
    for key, data in t.items("replicas"):
        if key[2] == broker and data.leo > data.hw:
            t.replicas[key] = _truncated(data, data.hw)
