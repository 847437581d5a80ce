"""The replication data plane: produce, follower fetch, leader-driven ISR changes and consume (the log side of
becoming leader or follower, crashing and restarting is reference/broker_logs.py).

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
from kcm.model.logs import epoch_start_offset
from kcm.model.names import tp_name
from kcm.model.txn import Txn, draft_has, draft_lookup
from kcm.reference import reassignment, truncation
from kcm.reference.broker_logs import _advance_hw, _key, _new, _truncated
from kcm.reference.handlers import handles

# Replica records are rebuilt on every fetch and produce positionally, with broker_logs' _new (its field-order
# guard covers this module too).

def _alive(t: Txn, broker: int) -> bool:
    state = t.lookup("brokers", broker)
    return state is not None and state.alive


def _known(t: Txn, tp: tuple) -> None:
    """UnknownTopicOrPartition unless the partition exists at this moment."""
    if not draft_has(t.zk, "assignments", tp):
        raise UnknownTopicOrPartition(f"partition {tp_name(tp)} does not exist")


def acting_leader(t: Txn, tp: tuple) -> int:
    """The broker clients reach as leader: the znode's leader, live, and leading by its last LeaderAndIsr."""
    _known(t, tp)
    lai = draft_lookup(t.zk, "partitions", tp)
    if lai is None or lai.leader == NO_LEADER:
        raise NotLeaderOrFollower(f"partition {tp_name(tp)} has no leader")
    leader = lai.leader
    data = t.replicas.get(_key(tp, leader))
    if not _alive(t, leader) or data is None or data.leader != leader:
        raise NotLeaderOrFollower(f"broker {leader} is not acting as leader of {tp_name(tp)}")
    return leader


# -- the leader's high watermark and the acks it releases ---------------------------------------


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


@handles(Produce)
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
        new = tuple([(start + i, data.leader_epoch) for i in range(a.records)])
        t.ghost.pending[a.tp] = t.ghost.pending.get(a.tp, ()) + new
    _advance_hw(t, a.tp, leader)  # a leader alone in its ISR commits at once
    t.result = a.records


def followers(t: Txn, tp: tuple, leader: int) -> list[int]:
    """The live brokers that follow `leader` for tp by their last LeaderAndIsr, in broker order."""
    return sorted([b for (topic, part, b), d in t.replicas.items()
                   if (topic, part) == tp and b != leader and d.leader == leader and _alive(t, b)])


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


@handles(Replicate)
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


def caught_up(t: Txn, leader: ReplicaData, fetch_offset: int) -> bool:
    """Whether a follower fetching at fetch_offset may join the leader's ISR.

    Since Kafka 2.0.1/2.1.0 (the fix of KAFKA-7128) it must reach both the leader's HW and the start offset of
    the leader's current epoch: a new leader's HW can lag behind what the previous leader committed, so the HW
    alone would admit a follower that lacks committed records. The variant `KAFKA-7128` restores the HW-only rule.
    """
    if fetch_offset < leader.hw:
        return False
    return t.config.has("KAFKA-7128") or fetch_offset >= epoch_start_offset(leader)


@handles(IsrShrink)
def isr_shrink(t: Txn, a: IsrShrink) -> None:
    """The leader drops a follower from the ISR (in an untimed model any follower may have lagged too long)."""
    leader = acting_leader(t, a.tp)
    data = t.replicas[_key(a.tp, leader)]
    if a.broker == leader:
        raise NotLeaderOrFollower(f"broker {a.broker} leads {tp_name(a.tp)}: a leader never drops itself")
    if a.broker not in data.isr:
        raise NotLeaderOrFollower(f"broker {a.broker} is not in the ISR {list(data.isr)} of {tp_name(a.tp)}")
    _write_isr(t, a.tp, leader, tuple([b for b in data.isr if b != a.broker]))
    _advance_hw(t, a.tp, leader)  # a smaller ISR may let the HW move (min LEO over fewer replicas)


def consumed_records(t: Txn, tp: tuple, offset: int) -> tuple[tuple[int, int], ...]:
    """The (offset, leader epoch) records a consumer fetch from `offset` gets: those below the acting leader's HW."""
    data = t.replicas[_key(tp, acting_leader(t, tp))]
    return tuple([(o, data.log[o]) for o in range(max(offset, 0), data.hw)])


def unseen(t: Txn, tp: tuple, records: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The records no consumer was handed before (the ghost record of consumed records lacks them)."""
    seen = t.ghost.consumed.get(tp, ())
    return tuple([r for r in records if r not in seen])


@handles(Consume)
def consume(t: Txn, a: Consume) -> None:
    """A consumer fetch from the leader: the records from `offset` below the HW; t.result is how many."""
    records = consumed_records(t, a.tp, a.offset)
    new = unseen(t, a.tp, records)
    if new:
        t.ghost.consumed[a.tp] = t.ghost.consumed.get(a.tp, ()) + new
    t.result = len(records)


