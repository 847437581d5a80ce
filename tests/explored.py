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
