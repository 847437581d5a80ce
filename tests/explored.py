"""The states a model reaches, breadth first: shared by the tests that need real states of a config."""

from __future__ import annotations

from typing import Any

from kcm.checkers.explore.verdicts import indexed_successors


def bfs_states(model: Any, levels: int | None = None, limit: int | None = None) -> list[Any]:
    """Every state reached from the initial ones within `levels` steps (None: all), once each, level by level;
    only the first `limit` of them when given."""
    seen: set[int] = set()
    out: list[Any] = []
    frontier = []
    for state in model.init_states():
        fp = model.fingerprint(state)
        if fp not in seen:
            seen.add(fp)
            frontier.append(state)
    depth = 0
    while frontier:
        out.extend(frontier)
        if limit is not None and len(out) >= limit:
            return out[:limit]
        if levels is not None and depth + 1 >= levels:
            break
        nxt = []
        for state in frontier:
            for _, _, succ, _ in indexed_successors(model, state):
                fp = model.fingerprint(succ)
                if fp not in seen:
                    seen.add(fp)
                    nxt.append(succ)
        frontier = nxt
        depth += 1
    return out


def as_explored(cfg: Any) -> tuple[Any, str]:
    """The model `kcm explore` explores for a config by default (the reductions `auto` picks) and the identity its
    checkpoints carry: what a test's own engine run needs for the command to resume its checkpoint, or to read the
    command's."""
    from kcm.checkers.core.bounded import BoundedSystem
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.reductions import choice as reductions

    base = BoundedSystem(cfg)
    choice = reductions.choose(base, None)
    return choice.model, checkpoint.config_identity(base.cfg, choice.identity())


def unjudged_checkpoint(model: Any, identity: str, path: Any, marked: bool = True) -> int:
    """Write at `path` the checkpoint of `model`'s search at the first level whose own states break a property, as
    a lazy engine's stop writes it before its judging pass: the verdicts first met at that level left out, marked
    `unjudged` (with `marked` False, not marked: what a resume cannot tell from a judged file). Its depth."""
    from kcm.checkers.explore import bfs, checkpoint
    from kcm.checkers.explore.visited import Visited

    whole = bfs.explore(model)
    depth = min(len(trace) for trace in whole.violations.values())
    full = path.with_suffix(".judged")

    class AtDepth(checkpoint.Checkpointer):
        def write(self, visited: Any, frontier: list[int], meta: dict[str, Any], stored: Any = None,
                  give_up: Any = None) -> None:
            if meta["depth"] == depth:
                super().write(visited, frontier, meta, None, give_up)

    bfs.explore(model, checkpoint=AtDepth(full, 0, identity))
    snap = checkpoint.load(full, identity)
    meta = dict(snap.meta)
    meta["witnesses"] = {n: w for n, w in meta["witnesses"].items() if len(w[1]) < depth}
    late = {n for n, w in meta.get("goals", {}).items() if len(w[1]) == depth}
    meta["goals"] = {n: w for n, w in meta.get("goals", {}).items() if n not in late}
    meta["reached"] = [n for n in meta["reached"] if n not in late]
    assert len(meta["witnesses"]) < len(snap.meta["witnesses"])  # the level's own verdicts are left out
    if marked:
        meta["unjudged"] = True
    checkpoint.Checkpointer(path, 0, identity).write(Visited.from_arrays(snap.arrays),
                                                       snap.arrays["frontier"].tolist(), meta)
    return depth
