"""The replication data plane's named properties, each a function over Cluster values with its rule in words.

A record is identified by (offset, leader epoch): one leader per epoch appends each offset once. "Lost" means
absent from the log of the acting leader (the live broker that leads by the znode and its own LeaderAndIsr).
"Leader in ISR in AR" and "at most one leader per leader epoch" are controller rules: they live in
kcm.properties.controller and hold here too.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import Cluster
from kcm.model.effects import Effects
from kcm.model.interface import ALWAYS, SOMETIMES, STEP, Property
from kcm.model.logs import epoch_start_offset, leader_log
from kcm.model.names import replica_name, tp_name
from kcm.properties import facts
from kcm.properties.facts import NO_RECORDS, TRACE_NO, declared_in, rule
from kcm.properties.reads import partition_local, reads


def _missing(state: Cluster, records: Any) -> list[tuple]:
    """The (partition, offset, epoch) of ghost records not in their partition's acting leader's log."""
    out = []
    for tp, recs in records:
        log = leader_log(state, tp)
        if log is None:
            continue  # no acting leader: nothing can be read or lost yet
        out.extend((tp, o, e) for o, e in recs if o >= len(log) or log[o] != e)
    return out


def lost_acked(state: Cluster) -> list[dict[str, Any]]:
    """The acknowledged records missing from their acting leader's log, for a report."""
    return [{"partition": tp_name(tp), "offset": o, "leader_epoch": e, "lost": "not in the acting leader's log"}
            for tp, o, e in _missing(state, state.ghost.acked)]


def lost_consumed(state: Cluster) -> list[dict[str, Any]]:
    """The consumed records missing from their acting leader's log, for a report."""
    return [{"partition": tp_name(tp), "offset": o, "leader_epoch": e, "lost": "consumed, then not in the leader's log"}
            for tp, o, e in _missing(state, state.ghost.consumed)]


@rule("AckedRecordsSurvive", ALWAYS, offenders=lost_acked, **NO_RECORDS,
      induction=facts.NO_DATA_PLANE_ENCODED, bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
@reads("ghost.acked", "zk.partitions", "replicas", "brokers")
def acked_records_survive(model: Any, state: Cluster) -> bool:
    """Every record acknowledged with acks=all is in the log of every later leader."""
    return not _missing(state, state.ghost.acked)


@rule("ConsumedRecordsSurvive", ALWAYS, offenders=lost_consumed, **NO_RECORDS,
      induction=facts.NO_DATA_PLANE_ENCODED, bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
@reads("ghost.consumed", "zk.partitions", "replicas", "brokers")
def consumed_records_survive(model: Any, state: Cluster) -> bool:
    """A consumer never reads a record that is later lost."""
    return not _missing(state, state.ghost.consumed)


def divergent_replicas(state: Cluster) -> list[tuple]:
    """Pairs of replicas of one partition whose logs differ below both their HWs: (tp, a, b, offset)."""
    out: list[tuple] = []
    # The map is sorted by (topic, partition, broker): each partition's replicas come together, in broker order.
    # A replica with nothing below its HW (or an empty log) differs from none, so only the others are paired.
    topic, part, reps = None, None, []
    for (t, p, broker), data in state.replicas:
        if t != topic or p != part:
            _pair_up((topic, part), reps, out)
            topic, part, reps = t, p, []
        if data.hw > 0 and data.log:
            reps.append((broker, data))
    _pair_up((topic, part), reps, out)
    return out


def _pair_up(tp: tuple, reps: list[tuple[int, Any]], out: list[tuple]) -> None:
    """Add to `out` each pair of one partition's replicas whose logs differ below both HWs, with the offset."""
    for i, (a, da) in enumerate(reps):
        for b, db in reps[i + 1:]:
            limit = min(da.hw, db.hw, da.leo, db.leo)
            if limit <= 0 or da.log[:limit] == db.log[:limit]:
                continue  # nothing below both HWs, or all of it equal (compared in C; this runs per state)
            out.append((tp, a, b, next(o for o in range(limit) if da.log[o] != db.log[o])))


def diverged(state: Cluster) -> list[dict[str, Any]]:
    """The pairs of replicas whose logs differ below both HWs, for a report."""
    return [{"partition": tp_name(tp), "replicas": [replica_name(tp, a), replica_name(tp, b)], "offset": o}
            for tp, a, b, o in divergent_replicas(state)]


@rule("LogsAgreeBelowHw", ALWAYS, offenders=diverged, **NO_RECORDS,
      induction=facts.NO_DATA_PLANE_ENCODED, bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
@reads("replicas")
def logs_agree_below_hw(model: Any, state: Cluster) -> bool:
    """Replicas' logs agree below their high watermarks (no divergence of committed data)."""
    return not divergent_replicas(state)


def _leaders(state: Cluster) -> dict[tuple, tuple[int, int, int]]:
    """tp -> (leader, leader epoch, HW) of each acting leader."""
    brokers = dict(state.brokers)
    return {(topic, part): (broker, data.leader_epoch, data.hw) for (topic, part, broker), data in state.replicas
            if data.leader == broker and brokers[broker].alive}


@rule("LeaderHwMonotone", STEP, log=NO_RECORDS["log"],
      induction=facts.NO_DATA_PLANE_ENCODED, bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
def leader_hw_monotone(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A leader's HW never goes backwards while it leads in one leader epoch."""
    if after.replicas is before.replicas:
        return True  # no replica changed, so no replica's HW went back (see below)
    # A leader's HW going back is some replica's HW going back: when none did, there is nothing to compare.
    previous = dict(before.replicas)
    for key, data in after.replicas:
        prev = previous.get(key)
        if prev is not None and data.hw < prev.hw:
            break
    else:
        return True
    old = _leaders(before)
    for tp, (leader, epoch, hw) in _leaders(after).items():
        prev = old.get(tp)
        if prev is not None and prev[:2] == (leader, epoch) and hw < prev[2]:
            return False
    return True


@rule("IsrJoinsReachEpochStart", STEP, trace=TRACE_NO + "epoch start offsets", log=NO_RECORDS["log"],
      induction=facts.NO_DATA_PLANE_ENCODED, bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
def isr_joins_reach_epoch_start(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A follower the leader lets into the ISR had fetched up to the start offset of the leader's epoch (KAFKA-7128).

    A leader's own ISR expansion keeps the leader epoch; the follower's fetch offset is the LEO the leader records
    for it. Controller writes (a new leader epoch) are not judged here.
    """
    if after.zk.partitions is before.zk.partitions:
        return True  # no znode written, so no ISR grew
    old = dict(before.zk.partitions)
    replicas = dict(after.replicas)
    for tp, lai in after.zk.partitions:
        prev = old.get(tp)
        if prev is None or prev.leader_epoch != lai.leader_epoch or prev.leader != lai.leader:
            continue
        joined = set(lai.isr) - set(prev.isr)
        data = replicas.get((tp[0], tp[1], lai.leader))
        if not joined or data is None:
            continue
        fetched = dict(data.remote_leo)
        if any(fetched.get(b, 0) < epoch_start_offset(data) for b in joined):
            return False
    return True


@rule("SomeRecordAcked", SOMETIMES, needs=("data_plane",),
      bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
@reads("ghost.acked")
def some_record_acked(model: Any, state: Cluster) -> bool:
    """Some acks=all record is acknowledged (the HW passed it)."""
    return bool(state.ghost.acked)


@rule("SomeRecordConsumed", SOMETIMES, needs=("consume",),
      bmc=facts.BMC_NO_DATA_PLANE)
@partition_local()
@reads("ghost.consumed")
def some_record_consumed(model: Any, state: Cluster) -> bool:
    """Some consumer read a committed record."""
    return bool(state.ghost.consumed)


def holds_by_design(config: Any) -> bool:
    """Whether the data-plane safety properties should hold: KIP-320 truncation and no unclean election.

    Under the older truncation variants and with unclean election on, the bug scenarios break them on purpose;
    a checker that asserts "no violation" should run these properties only where this is true.
    """
    return config.truncation == "kip320" and not config.unclean_leader_election


PROPERTIES: list[Property] = declared_in(globals())
