"""Breadth-first search over 64-bit fingerprints: the level loop both engines share, and the local engine.

An engine supplies only how a level is expanded (in this process, or on Spark workers); `search` keeps the
compact visited set (`checkers/visited.py`), dedupes, records verdicts, applies the bounds, reports progress and
writes checkpoints at level boundaries. Each level is kept in fingerprint order, so the order in which states are
expanded, hence every counterexample, does not depend on the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from kcm.checkers.checkpoint import BadCheckpoint, Checkpointer
from kcm.checkers.collector import rare_collections
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.visited import FP, Visited, replay
from kcm.model.interface import STATE_KINDS, STEP_KINDS

# One successor of a level: (fingerprint, payload shipped in the next frontier, parent's position in the frontier,
# action's position in model.actions(parent), action, step properties violated, state properties violated (None:
# not computed yet), sometimes-properties reached).
Row = tuple[int, Any, int, int, Any, list[str], list[str] | None, list[str]]
CHUNK = 4096  # candidates checked against the visited set at once (keeps a level's duplicates from piling up)


@dataclass
class Progress:
    """A progress report: where the search is and an estimate of the time left."""

    level: int
    states: int
    frontier: int
    seconds: float
    states_per_second: float
    eta_seconds: float | None  # an estimate from the frontier's growth; None while the frontier still grows


ProgressFn = Callable[[Progress], None]


def search(model: Any, engine: str, payload: Callable[[Any], Any],
           expand_level: Callable[[list[tuple[int, Any]]], Iterable[Row]], state_of: Callable[[Any], Any],
           max_states: int | None = None, progress: ProgressFn | None = None,
           checkpoint: Checkpointer | None = None, resume: dict[str, Any] | None = None,
           progress_every: float = 1.0) -> Exploration:
    """The level-synchronous loop: seed (or resume), expand each level with `expand_level`, dedupe, record."""
    # Only the properties state_checks judges (each state check skips the others anyway).
    props = [p for p in model.properties() if p.expectation in STATE_KINDS]
    found = Exploration(engine)
    start = time.perf_counter()
    visited = Visited()
    sizes: list[int] = []  # frontier size of each level, for the estimate of the time left
    expanded = 0
    spent = 0.0  # seconds spent before a resume

    def trace(level: int, index: int) -> list[Any]:
        root, steps = visited.path(level, index)
        return replay(model, root, steps)

    if resume is not None:
        if resume.get("engine", "local") != "local":
            raise BadCheckpoint("a checkpoint of the spark engine: resume it with --engine spark")
        visited = Visited.from_arrays(resume["visited"])
        frontier = [(fp, payload(s)) for fp, s in zip(resume["frontier_fps"], resume["frontier_states"], strict=True)]
        found.transitions, found.violations = resume["transitions"], dict(resume["violations"])
        found.reached = set(resume["reached"])
        depth, sizes, expanded, spent = resume["depth"], list(resume["sizes"]), resume["expanded"], resume["seconds"]
    else:
        inits: dict[int, tuple[int, Any]] = {}
        for i, s in enumerate(model.init_states()):
            inits.setdefault(model.fingerprint(s), (i, s))
        fps = np.fromiter(inits, dtype=FP, count=len(inits))
        order = np.argsort(fps, kind="stable")
        roots = np.array([i for i, _ in inits.values()], dtype=np.int64)[order]
        visited.add_level(fps[order], roots, np.zeros(len(inits), dtype=np.int64))
        states = list(inits.values())
        frontier = []
        for pos, k in enumerate(order.tolist()):
            s = states[k][1]
            frontier.append((int(fps[k]), payload(s)))
            bad, reached = state_checks(model, s, props)
            found.reached.update(reached)
            for name in bad:
                if name not in found.violations:
                    found.violations[name] = trace(0, pos)
        depth = 0
        sizes = [len(frontier)]
    last_report = 0.0

    def report(level_done: int, new: int, force: bool = False) -> None:
        nonlocal last_report
        now = time.perf_counter()
        if progress is None or (now - last_report < progress_every and not force):
            return
        last_report = now
        seconds = spent + now - start
        rate = (len(visited) + new) / seconds if seconds else 0.0
        progress(Progress(depth + 1 if frontier else depth, len(visited) + new, len(frontier), seconds, rate,
                          _eta(sizes, len(frontier), level_done, new, expanded + level_done, seconds)))

    while frontier:
        if checkpoint is not None and checkpoint.due():
            checkpoint.write({"engine": "local",
                "visited": visited.arrays(), "frontier_fps": [fp for fp, _ in frontier],
                "frontier_states": [state_of(item) for _, item in frontier], "transitions": found.transitions,
                "violations": found.violations, "reached": sorted(found.reached), "depth": depth, "sizes": sizes,
                "expanded": expanded, "seconds": spent + time.perf_counter() - start})
        pending: dict[int, tuple[int, int, Any, Any, list[str] | None]] = {}
        unchecked: list[int] = []
        parent = 0
        for n, (nfp, item, parent, aidx, action, bad_step, bad, reached) in enumerate(expand_level(frontier)):
            found.transitions += 1
            found.reached.update(reached)
            for name in bad_step:
                if name not in found.violations:
                    found.violations[name] = trace(depth, parent) + [action]
            if nfp in pending:
                continue
            pending[nfp] = (parent, aidx, action, item, bad)
            unchecked.append(nfp)
            if len(unchecked) >= CHUNK:
                _drop_seen(visited, pending, unchecked)
                unchecked = []
            if progress is not None and n % 256 == 0:
                report(parent, len(pending))
        _drop_seen(visited, pending, unchecked)
        expanded += len(frontier)
        fps = np.fromiter(pending, dtype=FP, count=len(pending))
        order = np.argsort(fps, kind="stable")
        rows = list(pending.values())
        for parent, _, action, item, bad in rows:
            if bad is None:  # checked here, once per new state, when the engine did not
                bad, reached = state_checks(model, state_of(item), props)
                found.reached.update(reached)
            for name in bad:
                if name not in found.violations:
                    found.violations[name] = trace(depth, parent) + [action]
        if rows:
            visited.add_level(fps[order], np.array([r[0] for r in rows], dtype=np.int64)[order],
                              np.array([r[1] for r in rows], dtype=np.int64)[order])
        frontier = [(fp, rows[k][3]) for fp, k in zip(fps[order].tolist(), order.tolist(), strict=True)]
        if frontier:
            depth += 1
            sizes.append(len(frontier))
        report(0, 0)
        if max_states is not None and len(visited) >= max_states and frontier:
            found.complete = False
            break
    report(0, 0, force=True)  # the last line shows where the search ended
    found.distinct_states = len(visited)
    found.depth = depth
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = visited.nbytes() / max(1, len(visited))
    found.visited = visited
    return found


def _drop_seen(visited: Visited, pending: dict[int, Any], keys: list[int]) -> None:
    """Remove from `pending` the candidates among `keys` that an earlier level already visited."""
    if not keys:
        return
    fps = np.fromiter(keys, dtype=FP, count=len(keys))
    for fp in fps[~visited.unseen(fps)].tolist():
        pending.pop(fp, None)


def _eta(sizes: list[int], frontier: int, done: int, new: int, expanded: int, seconds: float) -> float | None:
    """Seconds left, estimated: this level's rest, then later levels shrinking at the last growth ratio."""
    if not frontier:
        return 0.0
    if not expanded or not seconds:
        return None
    per_state = seconds / expanded
    left = frontier - done
    if done:
        nxt = new * frontier / done  # the next level, extrapolated from the part of this one already expanded
    else:
        nxt = frontier * (sizes[-1] / sizes[-2]) if len(sizes) > 1 else frontier
    ratio = nxt / frontier if frontier else 0.0
    if ratio >= 1.0:
        return None
    return (left + nxt / (1.0 - ratio)) * per_state


def explore(model: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Checkpointer | None = None, resume: dict[str, Any] | None = None) -> Exploration:
    """Explore every state reachable inside the boundary in this process, checking every property."""
    props = [p for p in model.properties() if p.expectation in STEP_KINDS]  # the ones step_checks judges
    fingerprint = model.fingerprint

    def expand_level(frontier: list[tuple[int, Any]]) -> Iterable[Row]:
        for pos, (_, state) in enumerate(frontier):
            for aidx, action, nxt, effects in indexed_successors(model, state):
                bad_step, reached = step_checks(model, state, action, nxt, effects, props)
                yield fingerprint(nxt), nxt, pos, aidx, action, bad_step, None, reached

    with rare_collections():
        return search(model, "local", lambda s: s, expand_level, lambda s: s, max_states, progress, checkpoint,
                      resume)
