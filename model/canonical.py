"""Canonical forms of a Cluster that keep every behaviour: what an explorer may identify states by.

zkVersions only ever meet in equality tests (a conditional write succeeds when the version it expects is
the znode's), and a znode's version only grows: a cached version below the znode's can never match again,
whatever its value. So every version of a partition can be written relative to its znode's: the znode's as 1,
every older one as 0 (the leader's ISR updates, each a new version with no new leader epoch, would otherwise
make a data-plane run's space unbounded). A partition with no znode has its versions shifted so the lowest is 0.
"""

from __future__ import annotations

from typing import Any

from kcm.model.cluster import Cluster, ControllerContext
from kcm.model.effects import LeaderAndIsrRequest


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


def relative_zk_versions(state: Cluster) -> Cluster:
    """The state with every zkVersion written relative to its partition's znode (see the module docstring)."""
    current, low = _versions(state)

    def rel(tp: tuple, v: int) -> int:
        cur = current.get(tp)
        if cur is None:
            return v - low.get(tp, 0)
        return v - cur + 1 if v >= cur else 0

    # A part is rebuilt only when one of its versions moves; unchanged entries are kept as they are.
    def shift_map(m: Any) -> Any:
        out = []
        changed = False
        for kv in m:
            tp, lai = kv
            v = rel(tp, lai.zk_version)
            if v == lai.zk_version:
                out.append(kv)
            else:
                out.append((tp, lai._replace(zk_version=v)))
                changed = True
        return tuple(out) if changed else m

    def shift_ctx(ctx: ControllerContext | None) -> ControllerContext | None:
        if ctx is None:
            return None
        leadership = shift_map(ctx.leadership)
        return ctx if leadership is ctx.leadership else ctx._replace(leadership=leadership)

    def shift_replicas(m: Any) -> Any:
        out = []
        changed = False
        for kv in m:
            k, d = kv
            v = rel((k[0], k[1]), d.zk_version)
            if v == d.zk_version:
                out.append(kv)
            else:
                out.append((k, d._replace(zk_version=v)))
                changed = True
        return tuple(out) if changed else m

    def shift_queue(queue: tuple) -> tuple:
        if all(not isinstance(r, LeaderAndIsrRequest) or rel(r.tp, r.zk_version) == r.zk_version for r in queue):
            return queue
        return tuple(r._replace(zk_version=rel(r.tp, r.zk_version)) if isinstance(r, LeaderAndIsrRequest) else r
                     for r in queue)

    replicas = shift_replicas(state.replicas)
    inflight = state.inflight
    if inflight:
        inflight = tuple((key, shift_queue(queue)) for key, queue in inflight)
        if all(new[1] is old[1] for new, old in zip(inflight, state.inflight, strict=True)):
            inflight = state.inflight
    partitions = shift_map(state.zk.partitions)
    zk = state.zk if partitions is state.zk.partitions else state.zk._replace(partitions=partitions)
    ctx, zombie = shift_ctx(state.ctx), shift_ctx(state.zombie)
    if (zk is state.zk and ctx is state.ctx and zombie is state.zombie and replicas is state.replicas
            and inflight is state.inflight):
        return state
    return state._replace(zk=zk, ctx=ctx, zombie=zombie, replicas=replicas, inflight=inflight)
