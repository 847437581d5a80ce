"""The local engine: breadth-first search over 64-bit fingerprints, shortest counterexamples from parent links."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kcm.checkers.verdicts import Exploration, state_checks, step_checks, successors


def trace_to(parents: dict[int, tuple[int, Any]], fp: int) -> list[Any]:
    """The actions from an initial state to the state with this fingerprint."""
    out = []
    while True:
        parent, action = parents[fp]
        if action is None:
            return out[::-1]
        out.append(action)
        fp = parent


def explore(model: Any, max_states: int | None = None,
            progress: Callable[[int, int, int, float], None] | None = None) -> Exploration:
    """Explore every state reachable inside the boundary, checking every property of the model."""
    props = model.properties()
    fingerprint = model.fingerprint
    found = Exploration("local")
    start = time.perf_counter()
    parents: dict[int, tuple[int, Any]] = {}
    frontier = []
    for s in model.init_states():
        fp = fingerprint(s)
        if fp not in parents:
            parents[fp] = (fp, None)
            frontier.append((fp, s))
            bad, reached = state_checks(model, s, props)
            found.reached.update(reached)
            for name in bad:
                found.violations.setdefault(name, [])
    depth = 0
    while frontier:
        nxt_frontier = []
        for fp, state in frontier:
            for action, nxt, effects in successors(model, state):
                found.transitions += 1
                bad, reached = step_checks(model, state, action, nxt, effects, props)
                found.reached.update(reached)
                for name in bad:
                    if name not in found.violations:
                        found.violations[name] = trace_to(parents, fp) + [action]
                nfp = fingerprint(nxt)
                if nfp in parents:
                    continue
                parents[nfp] = (fp, action)
                nxt_frontier.append((nfp, nxt))
                bad, reached = state_checks(model, nxt, props)
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
