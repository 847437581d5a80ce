"""The replication data plane: produce, follower fetch, leader-driven ISR changes, consume, and the log side
of becoming leader or follower, crashing and restarting.

Timing of one follower fetch (Kafka's real timing, which is what makes KIP-101's bug reachable): the follower
fetches at offset = its LEO; the leader records that LEO, then advances its HW to the minimum LEO over the ISR;
the response carries the records from the fetch offset and the leader's HW *as it was before this fetch*; the
follower appends and sets its HW to min(that HW, its own LEO). So the follower learns a new HW one fetch later
than the leader has it. One `replicate` op is one fetch by each follower (every live follower, in broker order,
when no broker is named). After a produce of n records, the first `replicate` brings the followers' LEO to the
leader's, the second advances the leader's HW (and acknowledges acks=all records), the third gives the followers
that HW.

An acks=all record is acknowledged (recorded in the ghost's `acked`) when the leader's HW passes it; until then it
is `pending`. ISR expansion and shrink by the leader are conditional writes on the partition znode's zkVersion.
"""

from __future__ import annotations

from typing import Any

from kcm.model.actions import Consume, IsrShrink, Produce, Replicate
from kcm.model.cluster import NO_LEADER, LeaderAndIsr, ReplicaData
from kcm.model.errors import (
    BrokerNotAvailable,
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    StaleZkVersion,
    UnknownTopicOrPartition,
)
from kcm.model.fmap import EMPTY
from kcm.model.names import tp_name
from kcm.model.txn import Txn
from kcm.reference import reassignment, truncation

# Replica records are rebuilt on every fetch, produce and LeaderAndIsr: from all their fields in order, with
# tuple.__new__ (what the NamedTuple's constructor does, minus its Python-level __new__ and _replace's keyword
# machinery). That needs the field order below.
_new = tuple.__new__
if ReplicaData._fields != ("log", "hw", "leader", "leader_epoch", "isr", "zk_version", "replicas", "remote_leo",
                           "truncating"):
    raise ImportError("kcm.reference.dataplane: ReplicaData's fields changed; update its positional rebuilds")


def _key(tp: tuple, broker: int) -> tuple:
    return (tp[0], tp[1], broker)


def _alive(t: Txn, broker: int) -> bool:
    state = t.lookup("brokers", broker)
    return state is not None and state.alive


def _known(t: Txn, tp: tuple) -> None:
    """UnknownTopicOrPartition unless the partition exists at this moment."""
    if not t.zk.has("assignments", tp):
        raise UnknownTopicOrPartition(f"partition {tp_name(tp)} does not exist")


def acting_leader(t: Txn, tp: tuple) -> int:
    """The broker clients reach as leader: the znode's leader, live, and leading by its last LeaderAndIsr."""
    _known(t, tp)
    lai = t.zk.lookup("partitions", tp)
    if lai is None or lai.leader == NO_LEADER:
        raise NotLeaderOrFollower(f"partition {tp_name(tp)} has no leader")
    leader = lai.leader
    data = t.replicas.get(_key(tp, leader))
    if not _alive(t, leader) or data is None or data.leader != leader:
        raise NotLeaderOrFollower(f"broker {leader} is not acting as leader of {tp_name(tp)}")
    return leader


# -- the leader's high watermark and the acks it releases ---------------------------------------


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
    pending = t.ghost.lookup("pending", tp, ())
    if not pending:
        return
    acked = tuple(r for r in pending if r[0] < new_hw and r[0] < len(log) and log[r[0]] == r[1])
    # A pending record truncated away was never acknowledged: its producer saw an error.
    gone = tuple(r for r in pending if r[0] >= len(log) or log[r[0]] != r[1])
    rest = tuple(r for r in pending if r not in acked and r not in gone)
    if acked:
        t.ghost.acked[tp] = t.ghost.acked.get(tp, ()) + acked
    if rest:
        t.ghost.pending[tp] = rest
    else:
        t.ghost.pending.pop(tp, None)


def _write_isr(t: Txn, tp: tuple, leader: int, isr: tuple[int, ...]) -> None:
    """The leader's conditional ISR write: StaleZkVersion if its zkVersion is outdated; bumps only the zkVersion."""
    data = t.replicas[_key(tp, leader)]
    lai = t.zk.partitions[tp]
    if data.zk_version != lai.zk_version:
        raise StaleZkVersion(f"broker {leader} wrote the ISR of {tp_name(tp)} with zkVersion {data.zk_version}, "
                             f"the znode is at {lai.zk_version}")
    isr = tuple(sorted(isr))
    # Like Kafka's Partition.updateIsr, the leader writes its own view (itself, its leader epoch) with the new ISR;
    # the zkVersion condition above is what keeps a leader with an outdated view from overwriting a newer one.
    t.zk.partitions[tp] = LeaderAndIsr(leader, data.leader_epoch, isr, lai.controller_epoch, lai.zk_version + 1)
    log, hw, lead, leader_epoch, _, _, replicas, remote_leo, truncating = data
    t.replicas[_key(tp, leader)] = _new(ReplicaData, (log, hw, lead, leader_epoch, isr, lai.zk_version + 1, replicas,
                                                      remote_leo, truncating))
    reassignment.on_isr_change(t, tp)


# -- client and follower requests -----------------------------------------------------------------


def produce(t: Txn, a: Produce) -> None:
    """Append records in the leader's epoch; acks=all is refused (nothing appended) while |ISR| < min ISR."""
    leader = acting_leader(t, a.tp)
    data = t.replicas[_key(a.tp, leader)]
    acks_all = str(a.acks) == "all"
    if acks_all and len(data.isr) < t.config.min_insync_replicas:
        raise NotEnoughReplicas(f"{tp_name(a.tp)}: ISR {list(data.isr)} is smaller than min.insync.replicas "
                                f"{t.config.min_insync_replicas}")
    start = data.leo
    t.replicas[_key(a.tp, leader)] = _new(ReplicaData, (data[0] + (data.leader_epoch,) * a.records, *data[1:]))
    if acks_all:
        new = tuple((start + i, data.leader_epoch) for i in range(a.records))
        t.ghost.pending[a.tp] = t.ghost.pending.get(a.tp, ()) + new
    _advance_hw(t, a.tp, leader)  # a leader alone in its ISR commits at once
    t.result = a.records


def followers(t: Txn, tp: tuple, leader: int) -> list[int]:
    """The live brokers that follow `leader` for tp by their last LeaderAndIsr, in broker order."""
    return sorted(b for (topic, part, b), d in t.replicas.items()
                  if (topic, part) == tp and b != leader and d.leader == leader and _alive(t, b))


def believed_leader(t: Txn, tp: tuple, follower: int) -> int:
    """The broker the follower fetches from: the leader of its last LeaderAndIsr, if that broker acts as leader.

    Under delivery "async" this may be a leader the controller has already replaced (it has not heard yet);
    a fetch carries no leader epoch before KIP-320, so such a leader serves it.
    """
    _known(t, tp)
    data = t.replicas.get(_key(tp, follower))
    if not _alive(t, follower):
        raise BrokerNotAvailable(f"broker {follower} is not live")
    leader = NO_LEADER if data is None else data.leader
    if leader in (NO_LEADER, follower):
        raise NotLeaderOrFollower(f"broker {follower} follows no leader of {tp_name(tp)}")
    ldata = t.replicas.get(_key(tp, leader))
    if not _alive(t, leader) or ldata is None or ldata.leader != leader:
        raise NotLeaderOrFollower(f"broker {leader} is not acting as leader of {tp_name(tp)}")
    return leader


def replicate(t: Txn, a: Replicate) -> None:
    """One fetch by the named follower, or by every live follower in broker order (see the module docstring)."""
    if a.broker >= 0 and t.config.delivery == "async":
        fetch(t, a.tp, believed_leader(t, a.tp, a.broker), a.broker)
        return
    leader = acting_leader(t, a.tp)
    if a.broker >= 0:
        if not _alive(t, a.broker):
            raise BrokerNotAvailable(f"broker {a.broker} is not live")
        if a.broker not in followers(t, a.tp, leader):
            raise NotLeaderOrFollower(f"broker {a.broker} does not follow broker {leader} for {tp_name(a.tp)}")
        fetch(t, a.tp, leader, a.broker)
        return
    fetched = 0
    for b in followers(t, a.tp, leader):
        try:
            fetch(t, a.tp, leader, b)
            fetched += 1
        except FencedLeaderEpoch as err:
            t.note(err.message)  # a fenced follower waits for its LeaderAndIsr; the others still fetch
    t.result = fetched


def fetch(t: Txn, tp: tuple, leader: int, follower: int) -> None:
    """One follower fetch: truncation if pending, append from the leader, leader HW, follower HW, ISR expansion."""
    lkey, fkey = _key(tp, leader), _key(tp, follower)
    if lkey not in t.replicas or fkey not in t.replicas:
        # A broker that has not (yet, or any more) got the partition's LeaderAndIsr holds no replica to fetch with.
        raise NotLeaderOrFollower(f"{tp_name(tp)}: broker {leader if lkey not in t.replicas else follower} "
                                  "holds no replica of it")
    ldata, fdata = t.replicas[lkey], t.replicas[fkey]
    variant = t.config.truncation
    if truncation.fences_fetches(variant) and fdata.leader_epoch != ldata.leader_epoch:
        raise FencedLeaderEpoch(f"{tp_name(tp)}: broker {follower} fetched in leader epoch {fdata.leader_epoch}, "
                                f"leader {leader} is in {ldata.leader_epoch}")
    if fdata.truncating:
        to = truncation.truncation_offset(variant, fdata.log, fdata.hw, ldata.log, ldata.leader_epoch)
        fdata = _new(ReplicaData, (*_truncated(fdata, to)[:8], False))
    if fdata.leo > ldata.leo:
        # OffsetOutOfRange: a follower ahead of its leader truncates to the leader's LEO and fetches again.
        fdata = _truncated(fdata, ldata.leo)
    offset = fdata.leo
    hw_as_of_fetch = ldata.hw
    remote_leo = dict(ldata.remote_leo)
    remote_leo[follower] = offset
    t.replicas[lkey] = _new(ReplicaData, (*ldata[:7], tuple(sorted(remote_leo.items())), ldata[8]))
    _advance_hw(t, tp, leader)
    ldata = t.replicas[lkey]
    log = fdata.log + ldata.log[offset:]
    t.replicas[fkey] = _new(ReplicaData, (log, max(fdata.hw, min(hw_as_of_fetch, len(log))), *fdata[2:]))
    # maybeExpandIsr: a follower in AR, not in the ISR, caught up with the leader joins it (contract rule 4).
    if follower not in ldata.isr and follower in ldata.replicas and caught_up(t, ldata, offset):
        try:
            _write_isr(t, tp, leader, ldata.isr + (follower,))
        except StaleZkVersion as err:
            t.note(f"ISR expansion skipped: {err.message}")  # KAFKA-2729: the leader retries with a stale version


def epoch_start_offset(data: ReplicaData) -> int:
    """The start offset of the replica's current leader epoch: its first record in that epoch, else its LEO.

    A leader appends only in its own epoch, so this is its LEO when it became leader (Kafka's
    leaderEpochStartOffsetOpt, set in makeLeader).
    """
    return next((o for o, e in enumerate(data.log) if e == data.leader_epoch), data.leo)


def caught_up(t: Txn, leader: ReplicaData, fetch_offset: int) -> bool:
    """Whether a follower fetching at fetch_offset may join the leader's ISR.

    Since Kafka 2.0.1/2.1.0 (the fix of KAFKA-7128) it must reach both the leader's HW and the start offset of
    the leader's current epoch: a new leader's HW can lag behind what the previous leader committed, so the HW
    alone would admit a follower that lacks committed records. The variant `KAFKA-7128` restores the HW-only rule.
    """
    if fetch_offset < leader.hw:
        return False
    return t.config.has("KAFKA-7128") or fetch_offset >= epoch_start_offset(leader)


def _truncated(data: ReplicaData, offset: int) -> ReplicaData:
    """The replica with its log cut to `offset` (and its HW not above the new LEO)."""
    offset = max(0, min(offset, data.leo))
    return _new(ReplicaData, (data[0][:offset], min(data.hw, offset), *data[2:]))


def isr_shrink(t: Txn, a: IsrShrink) -> None:
    """The leader drops a follower from the ISR (in an untimed model any follower may have lagged too long)."""
    leader = acting_leader(t, a.tp)
    data = t.replicas[_key(a.tp, leader)]
    if a.broker == leader:
        raise NotLeaderOrFollower(f"broker {a.broker} leads {tp_name(a.tp)}: a leader never drops itself")
    if a.broker not in data.isr:
        raise NotLeaderOrFollower(f"broker {a.broker} is not in the ISR {list(data.isr)} of {tp_name(a.tp)}")
    _write_isr(t, a.tp, leader, tuple(b for b in data.isr if b != a.broker))
    _advance_hw(t, a.tp, leader)  # a smaller ISR may let the HW move (min LEO over fewer replicas)


def consume(t: Txn, a: Consume) -> None:
    """A consumer fetch from the leader: the records from `offset` below the HW; t.result is how many."""
    leader = acting_leader(t, a.tp)
    data = t.replicas[_key(a.tp, leader)]
    records = tuple((o, data.log[o]) for o in range(max(a.offset, 0), data.hw))
    if records:
        t.ghost.consumed[a.tp] = t.ghost.consumed.get(a.tp, ()) + tuple(
            r for r in records if r not in t.ghost.consumed.get(a.tp, ()))
    t.result = len(records)


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


def leader_log(state: Any, tp: tuple) -> tuple[int, ...] | None:
    """The log of tp's acting leader in a Cluster value, or None when no live broker leads it."""
    lai = dict(state.zk.partitions).get(tp)
    if lai is None or lai.leader == NO_LEADER:
        return None
    data = dict(state.replicas).get(_key(tp, lai.leader))
    broker = dict(state.brokers).get(lai.leader)
    if data is None or broker is None or not broker.alive or data.leader != lai.leader:
        return None
    return data.log


# -- the bounded system's canonical form ------------------------------------------------------------

