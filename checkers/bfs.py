"""Breadth-first search over 64-bit fingerprints: the level loop and the local engine.

`search` keeps the compact visited set (`checkers/visited.py`), dedupes, records verdicts, applies the bounds,
stops at the first violation when asked, reports progress and writes checkpoints at level boundaries. An engine
supplies only how a level is expanded (`expand_level`): in this process (`explore`), or in worker processes
(`checkers/workers.py`, which keeps its own loop with the same rules).

The canonical order, which every engine follows so that all print the same counterexample: a level is kept in
fingerprint order; a state's parent link, and each property's witness, is the least (position of the parent in
its level, position of the action in `model.actions(parent)`) among the transitions that reach it (witness it)
at the shallowest depth. `search` takes the least whatever order `expand_level` yields its rows in.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from kcm.checkers.checkpoint import BadCheckpoint, Checkpointer, Snapshot
from kcm.checkers.collector import no_collections
from kcm.checkers.frontier import SPILL, Frontier, codec_for, next_level
from kcm.checkers.stopping import StopRequest
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.visited import FP, Visited, replay, replay_levels
from kcm.model.interface import ALWAYS, STATE_KINDS, STEP, STEP_KINDS
from kcm.properties.reads import Rechecks

# One successor of a level: (fingerprint, state, parent's position in the frontier, action's position in
# model.actions(parent), action, step properties violated, state properties violated (None: not computed yet),
# sometimes-properties reached).
Row = tuple[int, Any, int, int, Any, list[str], list[str] | None, list[str]]
CHUNK = 4096  # candidates checked against the visited set at once (keeps a level's duplicates from piling up)
Witness = tuple[int, list[int]]  # (initial-state position, action positions): a path, rebuilt by replay


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


def safety_names(model: Any) -> set[str]:
    """The names of the model's safety properties (always and step rules): what `stop_at` usually lists."""
    return {p.name for p in model.properties() if p.expectation in (ALWAYS, STEP)}


def search(model: Any, engine: str, expand_level: Callable[[list[Any]], Iterable[Row]],
           max_states: int | None = None, progress: ProgressFn | None = None,
           checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
           progress_every: float = 1.0, stop_at: Collection[str] | None = None,
           skip_unchanged: bool = True, stop: StopRequest | None = None, spill: int | None = SPILL,
           tally: Any = None) -> Exploration:
    """The level-synchronous loop: seed (or resume), expand each level with `expand_level`, dedupe, record.

    `stop_at`: property names; the search ends after the first level in which one of them is violated (every
    violation of that level is still found, so each counterexample is the canonical shortest one). None: the
    whole boundary is explored. `skip_unchanged`: a new state is judged only by the state properties that read a
    part its step changed (`properties/reads.py`); the others have its parent's verdict, already recorded.
    `stop` (a signal, the memory limit): the level in work is given up, the checkpoint of the level boundary
    written (`checkpoint`, if any) and the partial result returned (`checkers/stopping.py`).
    """
    # Only the properties state_checks judges (each state check skips the others anyway).
    props = [p for p in model.properties() if p.expectation in STATE_KINDS]
    rechecks = Rechecks(props) if skip_unchanged else None
    found = Exploration(engine, tally=tally)  # the coverage counts (if any) go into its checkpoints
    # Past `spill` new states in a level, each is kept encoded until its level is done (checkers/frontier.py).
    codec = codec_for(spill)
    spill_at = spill if spill is not None else 1 << 62
    start = time.perf_counter()
    visited, frontier_fps, frontier, witnesses, depth, sizes, expanded, spent = first_frontier(
        model, props, found, resume)
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

    def stop_now() -> bool:
        return should_stop(stop_at, witnesses)

    def give_up_level() -> None:
        # A level cut short by a stop request counts nothing: the checkpoint is of its start.
        found.transitions, found.reached = transitions_before, reached_before
        if counted_before is not None:
            found.tally.take()
            found.tally.merge(counted_before)

    stopped = stop_now()
    interrupted = False
    judged_props = props  # less the reachability goals already reached (judging them again changes nothing)
    while frontier and not stopped:
        still = unreached(judged_props, found.reached)
        if len(still) != len(judged_props):
            judged_props = still
            rechecks = Rechecks(judged_props) if skip_unchanged else None
        if stop is not None and stop.poll():
            interrupted = True
            break
        if checkpoint is not None and checkpoint.due():
            checkpoint.write(visited, frontier_fps, checkpoint_meta(found, witnesses, depth, sizes, expanded,
                                                                    spent + time.perf_counter() - start))
        level_start = time.perf_counter()
        # What a level given up for `stop` gives back: its transitions and goals are counted again on resume.
        transitions_before, reached_before = found.transitions, set(found.reached)
        counted_before = found.tally.counts() if found.tally is not None else None  # a level given up counts nothing
        # fingerprint -> (parent, action position, action, state, state properties violated or None)
        pending: dict[int, tuple[int, int, Any, Any, list[str] | None]] = {}
        level_best: dict[str, tuple[int, int]] = {}  # step property -> least (parent, action position)
        goal_best: dict[str, tuple[int, int]] = {}  # goal first reached in this level -> least link
        known = set(found.reached)
        unchecked: list[int] = []
        parent = 0
        n = -1
        for n, (nfp, item, parent, aidx, action, bad_step, bad, reached) in enumerate(expand_level(frontier)):
            if reached:
                found.reached.update(reached)
                least_of(goal_best, known, reached, (parent, aidx))
            for name in bad_step:
                if name not in witnesses and level_best.get(name, (parent, aidx)) >= (parent, aidx):
                    level_best[name] = (parent, aidx)
            old = pending.get(nfp)
            if old is not None:
                if (old[0], old[1]) > (parent, aidx):  # an engine that yields out of order: keep the least link
                    pending[nfp] = (parent, aidx, action, item, bad)
                continue
            pending[nfp] = (parent, aidx, action, item if len(pending) < spill_at else codec.encode(item), bad)
            unchecked.append(nfp)
            if len(unchecked) >= CHUNK:
                _drop_seen(visited, pending, unchecked)
                unchecked = []
            if n % 256 == 0:
                if progress is not None:
                    report(parent, len(pending))
                if stop is not None and stop.poll():
                    interrupted = True
                    break
        if interrupted:
            give_up_level()
            break
        found.transitions += n + 1  # counted once per level, not per transition (this loop is the hot path)
        _drop_seen(visited, pending, unchecked)
        expanded += len(frontier)
        fps = np.fromiter(pending, dtype=FP, count=len(pending))
        order = np.argsort(fps, kind="stable")
        rows = list(pending.values())
        for k, (parent, aidx, _, item, bad) in enumerate(rows):
            if k % 256 == 255 and stop is not None and stop.poll():
                interrupted = True
                break
            if bad is None:  # checked here, once per new state, when the engine did not
                if type(item) is bytes:
                    item = codec.decode(item)
                # A property that reads only parts the step left as they were has the parent's verdict: a
                # violation there already has its (shorter) witness, a goal reached there is already recorded.
                judged = judged_props if rechecks is None else rechecks.after_step(frontier[parent], item)
                bad, reached = state_checks(model, item, judged)
                if reached:
                    found.reached.update(reached)
                    least_of(goal_best, known, reached, (parent, aidx))
            for name in bad:
                if name not in witnesses and level_best.get(name, (parent, aidx)) >= (parent, aidx):
                    level_best[name] = (parent, aidx)
        if interrupted:
            give_up_level()
            break
        for best, into in ((level_best, witnesses), (goal_best, found.goals)):
            for name, (parent, aidx) in best.items():
                root, steps = visited.path(depth, parent)
                into[name] = (root, steps + [aidx])
        if rows:
            visited.add_level(fps[order], np.array([r[0] for r in rows], dtype=np.int64)[order],
                              np.array([r[1] for r in rows], dtype=np.int64)[order])
        frontier = next_level((rows[k][3] for k in order.tolist()), len(rows), spill, frontier, codec)
        frontier_fps = fps[order].tolist()
        found.levels.append((len(rows), time.perf_counter() - level_start))
        if isinstance(frontier, Frontier):  # the level's states now live encoded there only (checkers/frontier.py)
            rows.clear()
            pending.clear()
        if frontier:
            depth += 1
            sizes.append(len(frontier))
        report(0, 0)
        stopped = stop_now()
        if max_states is not None and len(visited) >= max_states and frontier:
            found.complete = False
            break
    report(0, 0, force=True)  # the last line shows where the search ended
    if interrupted:
        found.complete = False
        write_stop_checkpoint(stop, checkpoint, visited, frontier_fps,
                              checkpoint_meta(found, witnesses, depth, sizes, expanded,
                                              spent + time.perf_counter() - start))
    if stopped and frontier:
        found.complete = False
        found.stopped = True
    found.violations = {name: replay(model, root, steps) for name, (root, steps) in sorted(witnesses.items())}
    goal_traces(model, found)
    found.distinct_states = len(visited)
    found.depth = depth
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = visited.nbytes() / max(1, len(visited))
    found.visited = visited
    return found


def write_stop_checkpoint(stop: StopRequest | None, checkpoint: Checkpointer | None, visited: Visited,
                          frontier_fps: list[int], meta: dict[str, Any]) -> None:
    """The checkpoint of the level boundary where a search gave up for `stop` (every local engine's last act)."""
    if stop is not None:
        stop.acted = True
    if checkpoint is not None:
        checkpoint.write(visited, frontier_fps, meta)


def least_of(best: dict[str, tuple[int, int]], known: Collection[str], names: Iterable[str],
             key: tuple[int, int]) -> None:
    """Keep `key` as the link of each of `names` not `known` before the level, where it is the least yet."""
    for name in names:
        if name not in known and best.get(name, key) >= key:
            best[name] = key


def goal_traces(model: Any, found: Exploration) -> None:
    """Turn the goals' witnesses (initial-state position, action positions), which a search keeps in
    `found.goals`, into the action traces that reach them (a resumed run has none for goals reached before)."""
    found.goals = {name: replay(model, root, steps) for name, (root, steps) in sorted(found.goals.items())}


def unreached(props: list[Any], reached: Collection[str]) -> list[Any]:
    """The properties still to judge: `props` less the reachability goals (of states or of steps) already
    `reached`, whose names are the only ones `reached` holds (judging a reached goal again changes nothing)."""
    return [p for p in props if p.name not in reached]


def checkpoint_meta(found: Exploration, witnesses: dict[str, Any], depth: int, sizes: list[int], expanded: int,
                    seconds: float) -> dict[str, Any]:
    """What a checkpoint keeps besides the visited arrays and the frontier: counters, witnesses and timings, and
    the coverage counted so far when the run counts it."""
    meta = {"transitions": found.transitions, "reached": sorted(found.reached),
            "witnesses": {name: [root, steps] for name, (root, steps) in sorted(witnesses.items())},
            "depth": depth, "sizes": sizes, "expanded": expanded, "seconds": seconds}
    if found.tally is not None:
        meta["coverage"] = found.tally.counts()
    return meta


class Start(NamedTuple):
    """Where a level loop starts: a resumed checkpoint's frontier and counters, or the checked initial states."""

    visited: Visited
    frontier_fps: list[int]
    frontier: list[Any]
    witnesses: dict[str, Witness]
    depth: int
    sizes: list[int]  # frontier size of each level, for the estimate of the time left
    expanded: int
    spent: float  # seconds spent before a resume


def restore_counters(found: Exploration, meta: dict[str, Any], where: str = "the checkpoint") -> dict[str, Witness]:
    """Put a checkpoint's transition count, reached goals and coverage counts (where both the checkpoint and this
    run count them) back into `found`; its witnesses, as lists."""
    found.transitions, found.reached = meta["transitions"], set(meta["reached"])
    if found.tally is not None and "coverage" in meta:
        if not found.tally.valid(meta["coverage"]):
            raise BadCheckpoint(f"{where}: the coverage counts are malformed")
        found.tally.merge(meta["coverage"])
    return {name: (root, list(steps)) for name, (root, steps) in meta["witnesses"].items()}


def first_frontier(model: Any, props: list[Any], found: Exploration, resume: Snapshot | None) -> Start:
    """The first frontier of a search (every engine in this process family): resumed, or the initial states in
    fingerprint order, each checked against the state properties `props`."""
    if resume is not None:
        visited, frontier_fps, frontier = resume_frontier(model, resume)
        meta = resume.meta
        witnesses = restore_counters(found, meta, str(resume.path))
        return Start(visited, frontier_fps, frontier, witnesses, meta["depth"], list(meta["sizes"]),
                     meta["expanded"], meta["seconds"])
    visited = Visited()
    inits: dict[int, tuple[int, Any]] = {}
    for i, s in enumerate(model.init_states()):
        inits.setdefault(model.fingerprint(s), (i, s))
    fps = np.fromiter(inits, dtype=FP, count=len(inits))
    order = np.argsort(fps, kind="stable")
    roots = np.array([i for i, _ in inits.values()], dtype=np.int64)[order]
    visited.add_level(fps[order], roots, np.zeros(len(inits), dtype=np.int64))
    states = list(inits.values())
    frontier = [states[k][1] for k in order.tolist()]
    witnesses: dict[str, Witness] = {}
    for pos, s in enumerate(frontier):
        bad, reached = state_checks(model, s, props)
        found.reached.update(reached)
        for name in reached:
            found.goals.setdefault(name, visited.path(0, pos))
        for name in bad:
            witnesses.setdefault(name, visited.path(0, pos))
    return Start(visited, fps[order].tolist(), frontier, witnesses, 0, [len(frontier)], 0, 0.0)


def should_stop(stop_at: Collection[str] | None, witnesses: dict[str, Any]) -> bool:
    """Whether a search told to stop at these properties has a witness of one of them (so ends after this level)."""
    return stop_at is not None and any(name in witnesses for name in stop_at)


def resume_frontier(model: Any, snapshot: Snapshot, on_level: Callable[[int, list[Any]], None] | None = None
                    ) -> tuple[Visited, list[int], list[Any]]:
    """The visited set and the frontier of a checkpoint, the frontier's states rebuilt by replaying its levels.

    Every rebuilt state's fingerprint must be a visited one and the last level's must be the saved frontier:
    a body that does not hang together is refused (BadCheckpoint), never resumed. `on_level` goes to
    `visited.replay_levels`.
    """
    if not isinstance(snapshot, Snapshot):
        raise BadCheckpoint("not a checkpoint of the local engine")
    try:
        visited = Visited.from_arrays(snapshot.arrays)
    except ValueError as err:
        raise BadCheckpoint(f"{snapshot.path}: the visited set is malformed ({err})") from None
    want = snapshot.arrays.get("frontier")
    meta = snapshot.meta
    if want is None or want.dtype != FP or want.ndim != 1:
        raise BadCheckpoint(f"{snapshot.path}: the body has no frontier")
    if meta["sizes"] != [p.size for p in visited.parents]:
        raise BadCheckpoint(f"{snapshot.path}: the level sizes do not match the parent links")
    try:
        for name, (root, steps) in meta["witnesses"].items():
            if len(steps) > meta["depth"]:
                raise ValueError(f"the witness of {name} is longer than the search is deep")
            replay(model, root, steps)
        states = replay_levels(model, visited, on_level)
    except (IndexError, ValueError, RuntimeError) as err:
        raise BadCheckpoint(f"{snapshot.path}: the parent links do not replay ({err})") from None
    fps = np.fromiter((model.fingerprint(s) for s in states), dtype=FP, count=len(states))
    if fps.size != want.size or not np.array_equal(fps, want):
        raise BadCheckpoint(f"{snapshot.path}: the saved frontier is not the last level of the visited set")
    return visited, want.tolist(), states


def _drop_seen(visited: Visited, pending: dict[int, Any], keys: list[int]) -> None:
    """Remove from `pending` the candidates among `keys` that an earlier level already visited."""
    if not keys:
        return
    fps = np.fromiter(keys, dtype=FP, count=len(keys))
    for fp in fps[~visited.unseen(fps)].tolist():
        pending.pop(fp, None)


def _eta(sizes: list[int], frontier: int, done: int, new: int, expanded: int, seconds: float) -> float | None:
    """Seconds left, estimated once the levels shrink: the rest of this level, then later levels whose growth ratio
    keeps changing as it did over the last two whole levels (breadth-first levels rise and fall like a bell: the
    logarithms of their sizes lie near a parabola). None while the levels still grow.

    Only whole levels are read (`new`, what this level found so far, is not): extrapolating the next level from part
    of this one, or from the last ratio alone, swung the estimate from minutes to seconds within one run.
    """
    if not frontier:
        return 0.0
    if not expanded or not seconds or len(sizes) < 3 or not sizes[-2] or not sizes[-3]:
        return None
    ratio, before = sizes[-1] / sizes[-2], sizes[-2] / sizes[-3]
    if ratio >= 1.0:
        return None
    change = ratio / before  # how the growth ratio changed from one level to the next
    if change >= 1.0:  # not falling faster: a geometric tail at the last ratio
        later = frontier * ratio / (1.0 - ratio)
    else:
        later, size = 0.0, float(frontier)
        while size >= 0.5:
            ratio *= change
            size *= ratio
            later += size
    return (frontier - done + later) * seconds / expanded


def expander(model: Any, tally: Any = None) -> Callable[[list[Any]], Iterable[Row]]:
    """The local engine's `expand_level`: every kept successor of every frontier state, with its step checks;
    with a coverage `tally` (`checkers/coverage.py`), each transition is counted there as well."""
    props = [p for p in model.properties() if p.expectation in STEP_KINDS]  # the ones step_checks judges
    fingerprint = model.fingerprint
    successors = indexed_successors if tally is None else tally.successors

    def expand_level(frontier: Iterable[Any]) -> Iterable[Row]:  # a list or a spilled Frontier
        nonlocal props
        for pos, state in enumerate(frontier):
            for aidx, action, nxt, effects in successors(model, state):
                bad_step, reached = step_checks(model, state, action, nxt, effects, props)
                if reached:
                    # A step goal reached once is reported once: `search` records it, judging it again changes
                    # nothing (as for the state goals, see `search`).
                    props = unreached(props, reached)
                yield fingerprint(nxt), nxt, pos, aidx, action, bad_step, None, reached

    return expand_level


def explore(model: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
            stop_at: Collection[str] | None = None, skip_unchanged: bool = True,
            coverage: bool = False, stop: StopRequest | None = None, spill: int | None = SPILL) -> Exploration:
    """Explore every state reachable inside the boundary in this process, checking every property.

    `stop_at` (property names) ends the search after the first level that violates one of them;
    `skip_unchanged=False` judges every state property in every new state (see `search`); `coverage` counts
    the transitions taken into `found.tally` (`checkers/coverage.py`); `stop` cuts the search short; a level of
    more than `spill` states is kept encoded, its states past that many in a temporary file (`checkers/frontier.py`;
    None: every level a list of states).
    """
    from kcm.checkers.tally import Tally

    tally = Tally() if coverage else None
    with no_collections(), (tally.probing() if tally is not None else contextlib.nullcontext()):
        found = search(model, "local", expander(model, tally), max_states, progress, checkpoint, resume,
                       stop_at=stop_at, skip_unchanged=skip_unchanged, stop=stop, spill=spill, tally=tally)
        # Every object the search made and kept (the model's memos, the visited set's links) is young when
        # collection resumes, so the first collection after it would scan them all (about 3% of a run of
        # `controller`). They form no reference cycles (checkers/collector.py): moved out of the collector's
        # sight, they are still freed by reference counting.
        gc.freeze()
        return found
