"""Breadth-first search over 64-bit fingerprints: the level loop both engines share, and the local engine.

An engine supplies only how a level is expanded (in this process, or on Spark workers); `search` keeps the
visited set with parent links (for shortest counterexamples), dedupes, records verdicts and applies the bounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kcm.checkers.verdicts import Exploration, state_checks, step_checks, successors

# One successor of a level: (fingerprint, payload shipped in the next frontier, parent fingerprint, action,
# step properties violated, state properties violated (None: not computed yet), sometimes-properties reached).
Row = tuple[int, Any, int, Any, list[str], list[str] | None, list[str]]
Progress = Callable[[int, int, int, float], None]


def trace_to(parents: dict[int, tuple[int, Any]], fp: int) -> list[Any]:
    """The actions from an initial state to the state with this fingerprint."""
    out = []
    while True:
        parent, action = parents[fp]
        if action is None:
            return out[::-1]
        out.append(action)
        fp = parent


def search(model: Any, engine: str, payload: Callable[[Any], Any],
           expand_level: Callable[[list[tuple[int, Any]]], Iterable[Row]], state_of: Callable[[Any], Any],
           max_states: int | None = None, progress: Progress | None = None) -> Exploration:
    """The level-synchronous loop: seed, expand each level with `expand_level`, dedupe, record verdicts."""
    props = model.properties()
    found = Exploration(engine)
    start = time.perf_counter()
    parents: dict[int, tuple[int, Any]] = {}
    frontier: list[tuple[int, Any]] = []
    for s in model.init_states():
        fp = model.fingerprint(s)
        if fp not in parents:
            parents[fp] = (fp, None)
            frontier.append((fp, payload(s)))
            bad, reached = state_checks(model, s, props)
            found.reached.update(reached)
            for name in bad:
                found.violations.setdefault(name, [])
    depth = 0
    while frontier:
        nxt_frontier: list[tuple[int, Any]] = []
        for nfp, item, parent, action, bad_step, bad, reached in expand_level(frontier):
            found.transitions += 1
            found.reached.update(reached)
            for name in bad_step:
                if name not in found.violations:
                    found.violations[name] = trace_to(parents, parent) + [action]
            if nfp in parents:
                continue
            parents[nfp] = (parent, action)
            nxt_frontier.append((nfp, item))
            if bad is None:  # checked here, once per new state, when the engine did not
                bad, reached = state_checks(model, state_of(item), props)
                found.reached.update(reached)
            for name in bad:
                if name not in found.violations:
                    found.violations[name] = trace_to(parents, nfp)
        if nxt_frontier:
            depth += 1
        frontier = nxt_frontier
        if progress:
            progress(depth, len(parents), len(frontier), time.perf_counter() - start)
        if max_states is not None and len(parents) >= max_states and frontier:
            found.complete = False
            break
    found.distinct_states = len(parents)
    found.depth = depth
    found.seconds = time.perf_counter() - start
    return found


def explore(model: Any, max_states: int | None = None, progress: Progress | None = None) -> Exploration:
    """Explore every state reachable inside the boundary in this process, checking every property."""
    props = model.properties()
    fingerprint = model.fingerprint

    def expand_level(frontier: list[tuple[int, Any]]) -> Iterable[Row]:
        for fp, state in frontier:
            for action, nxt, effects in successors(model, state):
                bad_step, reached = step_checks(model, state, action, nxt, effects, props)
                yield fingerprint(nxt), nxt, fp, action, bad_step, None, reached

    return search(model, "local", lambda s: s, expand_level, lambda s: s, max_states, progress)
