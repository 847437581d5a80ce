"""Canonical forms of a Cluster that keep every behaviour: what an explorer may identify states by.

zkVersions only ever meet in equality tests (a conditional write succeeds when the version it expects is
the znode's), and a znode's version only grows: a cached version below the znode's can never match again,
whatever its value. So every version of a partition can be written relative to its znode's: the znode's as 1,
every older one as 0 (the leader's ISR updates, each a new version with no new leader epoch, would otherwise
make a data-plane run's space unbounded). A partition with no znode has its versions shifted so the lowest is 0.

The shift of each part of the state (zk, ctx, replicas, inflight, zombie) depends on that part and the znodes'
versions alone, except for partitions with no znode: `relative_part` shifts one part, so that an explorer can
fingerprint the parts separately and memoize them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcm.model.cluster import Cluster, ControllerContext
from kcm.model.effects import LeaderAndIsrRequest

Rel = Callable[[tuple, int], int]  # (partition, version) -> its relative version

# The parts of a Cluster that hold zkVersions; the others (brokers, ghost) have none.
VERSIONED_PARTS = ("zk", "ctx", "replicas", "inflight", "zombie")


class NoZnode(LookupError):
    """A version of a partition with no znode: its shift depends on every part (use relative_zk_versions)."""


def _versions(state: Cluster) -> tuple[dict[tuple, int], dict[tuple, int]]:
    """Each partition's znode version, and the lowest version anywhere for partitions with no znode."""
    current = {tp: lai.zk_version for tp, lai in state.zk.partitions}
    low: dict[tuple, int] = {}

    def see(tp: tuple, v: int) -> None:
        if tp not in current and v < low.get(tp, v + 1):
            low[tp] = v

    for ctx in (state.ctx, state.zombie):
        if ctx is not None:
            for tp, lai in ctx.leadership:
                see(tp, lai.zk_version)
    for (topic, part, _b), data in state.replicas:
        see((topic, part), data.zk_version)
    for _key, queue in state.inflight:
        for req in queue:
            if isinstance(req, LeaderAndIsrRequest):
                see(req.tp, req.zk_version)
    return current, low


# A part is rebuilt only when one of its versions moves; unchanged entries are kept as they are.
def _shift_pairs(m: Any, rel: Rel, tp_of: Callable[[Any], tuple]) -> Any:
    """A frozen map whose values carry a zk_version (LeaderAndIsr, ReplicaData), each made relative."""
    out = []
    changed = False
    for kv in m:
        key, value = kv
        v = rel(tp_of(key), value.zk_version)
        if v == value.zk_version:
            out.append(kv)
        else:
            out.append((key, value._replace(zk_version=v)))
            changed = True
    return tuple(out) if changed else m


def _partition(tp: tuple) -> tuple:
    return tp


def _replica_partition(key: tuple) -> tuple:
    return (key[0], key[1])


def _shift_map(m: Any, rel: Rel) -> Any:
    return _shift_pairs(m, rel, _partition)


def _shift_ctx(ctx: ControllerContext | None, rel: Rel) -> ControllerContext | None:
    if ctx is None:
        return None
    leadership = _shift_map(ctx.leadership, rel)
    return ctx if leadership is ctx.leadership else ctx._replace(leadership=leadership)


def _shift_replicas(m: Any, rel: Rel) -> Any:
    return _shift_pairs(m, rel, _replica_partition)


def _shift_queue(queue: tuple, rel: Rel) -> tuple:
    if all(not isinstance(r, LeaderAndIsrRequest) or rel(r.tp, r.zk_version) == r.zk_version for r in queue):
        return queue
    return tuple(r._replace(zk_version=rel(r.tp, r.zk_version)) if isinstance(r, LeaderAndIsrRequest) else r
                 for r in queue)


def _shift_inflight(inflight: Any, rel: Rel) -> Any:
    if not inflight:
        return inflight
    shifted = tuple((key, _shift_queue(queue, rel)) for key, queue in inflight)
    return inflight if all(new[1] is old[1] for new, old in zip(shifted, inflight, strict=True)) else shifted


def _shift_zk(zk: Any, rel: Rel) -> Any:
    partitions = _shift_map(zk.partitions, rel)
    return zk if partitions is zk.partitions else zk._replace(partitions=partitions)


_SHIFTS: dict[str, Callable[[Any, Rel], Any]] = {
    "zk": _shift_zk, "ctx": _shift_ctx, "replicas": _shift_replicas, "inflight": _shift_inflight,
    "zombie": _shift_ctx}


def _relative(current: dict[tuple, int], low: dict[tuple, int] | None) -> Rel:
    """The version map: a znode's version is 1, older ones 0; without a znode, shifted by `low` (None: NoZnode)."""
    def rel(tp: tuple, v: int) -> int:
        cur = current.get(tp)
        if cur is None:
            if low is None:
                raise NoZnode(tp)
            return v - low.get(tp, 0)
        return v - cur + 1 if v >= cur else 0

    return rel


def relative_part(name: str, value: Any, current: dict[tuple, int]) -> Any:
    """One part (named as in VERSIONED_PARTS) of `relative_zk_versions(state)`, given the znodes' versions.

    Equal to the same field of the whole state's canonical form; NoZnode when the part holds a version of a
    partition that has no znode (then only `relative_zk_versions` knows the shift).
    """
    return _SHIFTS[name](value, _relative(current, None))


def relative_zk_versions(state: Cluster) -> Cluster:
    """The state with every zkVersion written relative to its partition's znode (see the module docstring)."""
    current, low = _versions(state)
    rel = _relative(current, low)
    zk, ctx, replicas = _shift_zk(state.zk, rel), _shift_ctx(state.ctx, rel), _shift_replicas(state.replicas, rel)
    inflight, zombie = _shift_inflight(state.inflight, rel), _shift_ctx(state.zombie, rel)
    if (zk is state.zk and ctx is state.ctx and zombie is state.zombie and replicas is state.replicas
            and inflight is state.inflight):
        return state
    return state._replace(zk=zk, ctx=ctx, zombie=zombie, replicas=replicas, inflight=inflight)
