"""The one level loop of every breadth-first engine (local, owner processes, Spark).

`run` seeds the search (or resumes a checkpoint of any engine), then level by level: looks at the stop request,
writes the checkpoint when one is due, has the engine expand the level, records the new states' parent links in
the visited set (`visited.py`) and each property's (each goal's) first witness, reports progress, and
ends on the first violation of a `stop_at` property, on `max_states`, on an empty frontier or on a stop request
(the level in work given up, the checkpoint of its start written). An engine (`Levels`) supplies only how a
level is expanded and where the frontier's states live (and, for Spark, the visited set: `Books`, `Lazy`); the
bookkeeping, and so the counts, depths, verdicts, counterexamples and checkpoints, are the same for all.

The canonical order, which every engine follows so that all print the same counterexample: a level is kept in
fingerprint order; a state's parent link, and each property's witness, is the least (position of the parent in
its level, position of the action in `model.actions(parent)`) among the transitions that reach it (witness it)
at the shallowest depth. An engine's `Level` gives, per property, that least link among its level's transitions.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
from kcm.checkers.explore import stored_states
from kcm.checkers.explore.checkpoint import BadCheckpoint, Checkpointer, Snapshot
from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.stopping import StatesLeftOut, StopRequest, rebuilding
from kcm.checkers.explore.verdicts import Exploration, state_checks
from kcm.checkers.explore.visited import FP, LEVEL, Visited, replay, replay_levels, walk
from kcm.model.interface import STATE_KINDS

# A periodic checkpoint stores the frontier's states (so its resume need not replay) up to this many; a stop's
# checkpoint always does, since a resume is sure to follow it (on `large` at level 13: 2.5 million states).
STORE_BELOW = 100_000

Link = tuple[int, int]  # (parent's position in its level, action's position in model.actions(parent))
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


class Stopped(Exception):
    """An engine gave up the level in work for a stop request (see `stopping.py`)."""


@dataclass
class Level:
    """One expanded level, as an engine hands it to the loop."""

    fps: np.ndarray  # the new states' fingerprints (FP), in fingerprint order (empty when the engine keeps them)
    parents: np.ndarray  # each new state's least link, in the same order (int64)
    actions: np.ndarray
    frontier: Any  # the next frontier, as the engine holds it (the loop only passes it back)
    bad: dict[str, Any] = field(default_factory=dict)  # property violated in the level -> its least link
    goals: dict[str, Any] = field(default_factory=dict)  # goal reached in the level -> its least link
    size: int | None = -1  # the next frontier's size: -1, that of `fps`; None, not counted yet (a lazy engine)
    expanded: int | None = None  # the size of the frontier just expanded, when this expansion counted it
    ended: bool = False  # the frontier's own states broke a `stop_at` property: nothing else of the level counts


class Tick:
    """What an engine calls while it expands a level: progress reports, and the stop request's safe points."""

    def __init__(self, report: Callable[[int, int], None], stop: StopRequest | None) -> None:
        self.report, self.stop = report, stop

    def __call__(self, done: int, new: int) -> None:
        """`done` frontier states expanded and `new` states found so far: a progress line if one is due, and
        Stopped if a stop is requested."""
        self.report(done, new)
        self.poll()

    def poll(self) -> None:
        """Stopped if a stop is requested."""
        if self.stop is not None and self.stop.poll():
            raise Stopped


class Levels(Protocol):
    """How one engine expands levels; the rest of the search is `run`'s.

    An engine that keeps its visited set itself and counts its frontiers lazily (Spark) also has `opening`,
    `count` and `judge`, and `LAZY = True` (see `Lazy`).
    """

    def begin(self, states: Iterable[Any]) -> Any:
        """Take the first frontier (its states in fingerprint order); the frontier as the engine holds it."""

    def expand(self, frontier: Any, visited: Any, found: Exploration, tick: Tick) -> Level:
        """Expand the frontier: the level's new states (not in `visited`), least links and witnesses; counts the
        transitions, goals reached and coverage into `found`; Stopped (nothing recorded) on a stop request."""

    def halt(self) -> None:
        """The search gives up for a stop request: let go of the work in progress before the checkpoint."""


class Books(Protocol):
    """Where the visited set lives, as the loop sees it: a level's new states added, witnesses, checkpoints."""

    visited: Visited | None  # the local visited set, kept on the exploration (None when it lives elsewhere)

    def add(self, level: Level) -> None:
        """The level's new states join the visited set."""

    def mark(self, depth: int, link: Any) -> Any:
        """A witness found by the expansion of level `depth` through `link`, as the loop keeps it until the end."""

    def paths(self, witnesses: dict[str, Any]) -> dict[str, Witness]:
        """The witnesses as paths (initial-state position, action positions)."""

    def write(self, checkpoint: Checkpointer, depth: int, width: int, witnesses: dict[str, Any],
              meta: Callable[[dict[str, Witness]], dict[str, Any]], states: Any = None,
              give_up: Callable[[], bool] | None = None) -> None:
        """Write the checkpoint of the level boundary: the visited set, the frontier, `meta` of the witnesses'
        paths; `states`, the frontier's states when the engine holds them here, stored too, unless `give_up`
        says so while they are made (StatesLeftOut, nothing written)."""

    def nbytes(self) -> int:
        """Bytes the visited set takes."""


class Lazy(Protocol):
    """The extra methods of an engine whose visited set and frontier sizes are its own (Spark)."""

    LAZY: bool

    def opening(self, found: Exploration, resume: Snapshot | None) -> tuple[Books, Any, Start]:
        """The books, the first frontier as the engine holds it, and where the search starts."""

    def count(self, frontier: Any) -> int:
        """The frontier's size (counted now)."""

    def judge(self, frontier: Any, storing: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """Check the frontier's own states now (before a checkpoint, or the end): the least link of each property
        they break and of each goal they reach; the goals are added to `found.reached`. `storing`: a checkpoint
        that stores the frontier's states may follow (the engine may encode them on the same pass)."""


class LocalBooks:
    """The visited set in this process (`visited.py`), and the fingerprints of the frontier."""

    def __init__(self, visited: Visited, frontier_fps: list[int]) -> None:
        self.visited, self.frontier_fps = visited, frontier_fps

    def add(self, level: Level) -> None:
        """Add the level's parent links; its fingerprints are the frontier now."""
        if level.fps.size:
            self.visited.add_level(level.fps, level.parents, level.actions)
        self.frontier_fps = level.fps.tolist()

    def mark(self, depth: int, link: Any) -> Witness:
        """The path through (parent's position in level `depth`, action position)."""
        parent, aidx = link
        root, steps = self.visited.path(depth, parent)
        return root, steps + [aidx]

    def paths(self, witnesses: dict[str, Any]) -> dict[str, Witness]:
        """The witnesses are paths already."""
        return witnesses

    def write(self, checkpoint: Checkpointer, depth: int, width: int, witnesses: dict[str, Any],
              meta: Callable[[dict[str, Witness]], dict[str, Any]], states: Any = None,
              give_up: Callable[[], bool] | None = None) -> None:
        """The visited arrays and the frontier's fingerprints (and its states, when given: a frontier whose
        states live elsewhere gives them as stored arrays, `stored`)."""
        maker = None
        if states is not None:
            gather = getattr(states, "stored", None)  # a frontier whose states live elsewhere (the workers)
            maker = (lambda: gather(give_up)) if gather is not None else (lambda: stored_states.pack(states, give_up))
        levels = self.visited.levels
        if maker is not None and levels is not None:
            maker = with_levels(maker, levels)
        checkpoint.write(self.visited, self.frontier_fps, meta(witnesses), maker, give_up)

    def nbytes(self) -> int:
        """The visited set's arrays."""
        return self.visited.nbytes()


def with_levels(pack: Callable[[], dict[str, np.ndarray] | None],
                levels: np.ndarray) -> Callable[[], dict[str, np.ndarray] | None]:
    """A maker of a checkpoint's stored states that also stores each visited state's level: with both, the Spark
    engine (parent links by fingerprint) resumes the file without a replay."""
    def packed() -> dict[str, np.ndarray] | None:
        stored = pack()
        return None if stored is None else {**stored, "levels": levels}

    return packed


def run(model: Any, found: Exploration, levels: Levels, max_states: int | None = None,
        progress: ProgressFn | None = None, checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
        progress_every: float = 1.0, stop_at: Collection[str] | None = None,
        stop: StopRequest | None = None) -> Exploration:
    """The level-synchronous loop: seed (or resume), expand each level with `levels`, record; fills `found`.

    `stop_at`: property names; the search ends after the first level in which one of them is violated (every
    violation of that level is still found, so each counterexample is the canonical shortest one). None: the
    whole boundary is explored. `stop` (a signal, the memory limit): the level in work is given up, the checkpoint
    of the level boundary written (`checkpoint`, if any) and the partial result returned.

    A lazy engine (`Lazy`) may leave a new frontier uncounted (its size None) until its expansion, a checkpoint,
    a bound or the end needs the number; it judges a frontier's own states when it expands it, so the loop has it
    judge them before a checkpoint and at an early end. Its progress names the last level counted, once each.
    The checkpoint's file is this search's alone while it runs (`checkpoint_lock.py`).
    """
    if checkpoint is None:
        return _run(model, found, levels, max_states, progress, None, resume, progress_every, stop_at, stop)
    checkpoint.hold()
    try:
        return _run(model, found, levels, max_states, progress, checkpoint, resume, progress_every, stop_at, stop)
    finally:
        checkpoint.close()


def _run(model: Any, found: Exploration, levels: Levels, max_states: int | None, progress: ProgressFn | None,
         checkpoint: Checkpointer | None, resume: Snapshot | None, progress_every: float,
         stop_at: Collection[str] | None, stop: StopRequest | None) -> Exploration:
    """`run`, its checkpoint's file held."""
    start = time.perf_counter()
    lazy: Any = levels if getattr(levels, "LAZY", False) else None
    with rebuilding(stop, resume.path if resume is not None else None):
        if lazy is not None:
            books, frontier, (_, _, _, witnesses, depth, sizes, expanded, spent) = lazy.opening(found, resume)
        else:
            props = [p for p in model.properties() if p.expectation in STATE_KINDS]
            visited, frontier_fps, states, witnesses, depth, sizes, expanded, spent = first_frontier(
                model, props, found, resume)
            books = LocalBooks(visited, frontier_fps)
            frontier = levels.begin(states)
            del states
    width: int | None = sizes[-1] if sizes else 0  # the frontier's size (None: not counted yet)
    total = sum(sizes)  # states visited (counted)
    # The level boundary last put on file: the one a resume starts from (a periodic checkpoint made due by the
    # rebuild would only write it again, without its states when the frontier is big), then each periodic one's
    # (a stop at that boundary then only adds the frontier's states).
    on_file = depth if resume is not None else -1
    last_report = 0.0
    shown: tuple[int, int, int] | None = None  # a lazy engine's last line: (level, states, frontier)

    def report(level_done: int, new: int, force: bool = False) -> None:
        nonlocal last_report, shown
        now = time.perf_counter()
        if progress is None or (now - last_report < progress_every and not force):
            return
        last_report = now
        seconds = spent + now - start
        rate = (total + new) / seconds if seconds else 0.0
        if lazy is None:
            progress(Progress(depth + 1 if width else depth, total + new, width or 0, seconds, rate,
                              eta(sizes, width or 0, level_done, new, expanded + level_done, seconds)))
            return
        # The last level counted: a new frontier left uncounted is not known yet, the level just expanded is.
        line = (depth, total, width) if width is not None else (depth - 1, total, sizes[-1])
        if line != shown:
            shown = line
            progress(Progress(*line, seconds, rate, eta(sizes, line[2], 0, 0, max(1, expanded), seconds)))

    def settle(count: int | None = None) -> int:
        """The frontier's size, counted now if it was not (`count`: what its expansion counted)."""
        nonlocal width, depth, total
        if width is None:
            width = lazy.count(frontier) if count is None else count
            if width:
                sizes.append(width)
                total += width
            else:
                depth -= 1  # the level made last was empty: the search was over
        return width

    def judged(storing: bool = False) -> None:
        """A lazy engine judges the frontier's own states now (the local engine judged them as it found them);
        `storing`: a checkpoint storing them may follow."""
        if lazy is not None:
            known = set(found.reached)
            bad, goals = lazy.judge(frontier, storing)
            for best, into, before in ((bad, witnesses, witnesses), (goals, found.goals, known)):
                for name, link in best.items():
                    if name not in before:
                        into[name] = books.mark(depth, link)

    def marked() -> dict[Any, Any]:
        """The witnesses a checkpoint keeps: the violations' under their names, the goals' under (GOAL, name)."""
        return {**witnesses, **{(GOAL, name): w for name, w in found.goals.items()}}

    unjudged = False  # the checkpoint being written is of a frontier whose states are not judged yet

    def meta(paths: dict[Any, Witness]) -> dict[str, Any]:
        bad = {name: w for name, w in paths.items() if not isinstance(name, tuple)}
        goals = {name[1]: w for name, w in paths.items() if isinstance(name, tuple)}
        return checkpoint_meta(found, bad, depth, sizes, expanded, spent + time.perf_counter() - start, goals,
                               unjudged)

    def held(states: Any, wanted: bool) -> Any:
        """The frontier's states for a checkpoint, if `wanted` and this process holds them (else None)."""
        return states if wanted and getattr(levels, "STORES_STATES", False) else None

    if resume is not None and resume.meta.get("unjudged"):
        judged()  # a lazy engine's stop wrote this file before judging its frontier (the others did in opening)
    tick = Tick(report, stop)
    stopped = should_stop(stop_at, witnesses)
    interrupted = False
    while width != 0 and not stopped:
        if stop is not None and stop.poll():
            interrupted = True
            break
        if checkpoint is not None and depth != on_file and checkpoint.due():
            # A checkpoint holds whole levels, each state judged: count and judge the frontier first.
            if not settle():
                break
            storing = held(frontier, (width or 0) <= STORE_BELOW) is not None
            judged(storing)
            stopped = should_stop(stop_at, witnesses)
            if stopped:
                break  # the local engine would have stopped already
            books.write(checkpoint, depth, width, marked(), meta, frontier if storing else None)
            on_file = depth
        level_start = time.perf_counter()
        # What a level given up for `stop` gives back: its transitions, goals and coverage are counted again on
        # resume (the checkpoint is of the level's start).
        transitions_before, known = found.transitions, set(found.reached)
        counted_before = found.tally.counts() if found.tally is not None else None
        try:
            level = levels.expand(frontier, books.visited, found, tick)
        except Stopped:
            found.transitions, found.reached = transitions_before, known
            if counted_before is not None:
                found.tally.take()
                found.tally.merge(counted_before)
            interrupted = True
            break
        for best, into, before in ((level.bad, witnesses, witnesses), (level.goals, found.goals, known)):
            for name, link in best.items():
                if name not in before:
                    into[name] = books.mark(depth, link)
        if width is None and not settle(level.expanded):
            break
        if level.ended:
            stopped = True
            break
        books.add(level)
        frontier = level.frontier
        expanded += width
        width = int(level.fps.size) if level.size == -1 else level.size
        if lazy is None:
            found.levels.append((width, time.perf_counter() - level_start))
        if width != 0:
            depth += 1
            if width is not None:
                sizes.append(width)
                total += width
        stopped = should_stop(stop_at, witnesses)
        if lazy is not None and (stopped or max_states is not None):
            settle()  # the bound, and the stop, are looked at once the level has joined
        report(0, 0, force=lazy is not None)
        if width and (stopped or max_states is not None and total >= max_states):
            judged()  # the last level is counted and its own properties checked, not expanded
            found.complete = False
            break
    if lazy is None:
        report(0, 0, force=True)  # the last line shows where the search ended
    if interrupted and settle():
        states = held(frontier, checkpoint is not None)
        # A big frontier's states take long to store (minutes on `large`), and a supervisor's SIGKILL may come
        # first: the checkpoint goes to the file without them, then again with them, unless a second signal
        # leaves them out (its resume then replays the visited states).
        late = states is not None and (width or 0) > STORE_BELOW
        if lazy is not None and late and checkpoint is not None and stop is not None and on_file != depth:
            # A lazy engine judges a big frontier in a job of its own (a pass over every state), which a
            # supervisor's SIGKILL may not wait for: the checkpoint goes to the file before it, marked unjudged
            # (its resume judges the frontier first, on any engine).
            unjudged = True
            books.write(checkpoint, depth, width, marked(), meta)
            unjudged = False
            on_file = depth
        judged(states is not None and not late)
        stopped = should_stop(stop_at, witnesses)
        if not stopped:
            found.complete = False
            levels.halt()  # before the write: workers still expanding would only grow (see --max-memory)
            if stop is not None:
                stop.acted = True
            if late and checkpoint is not None and stop is not None:
                if on_file != depth:
                    books.write(checkpoint, depth, width, marked(), meta)
                with stop.storing_states(depth, width, checkpoint.path), contextlib.suppress(StatesLeftOut):
                    try:
                        books.write(checkpoint, depth, width, marked(), meta, states, stop.leave_states_out)
                    except OSError as err:
                        stop.not_stored(err)
            elif checkpoint is not None:
                books.write(checkpoint, depth, width, marked(), meta, states)
    if stopped and width:
        found.complete = False
        found.stopped = True
    found.violations = {name: replay(model, root, steps)
                        for name, (root, steps) in sorted(books.paths(witnesses).items())}
    found.goals = {name: replay(model, root, steps) for name, (root, steps) in sorted(books.paths(found.goals).items())}
    found.distinct_states = total
    found.depth = depth
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = books.nbytes() / max(1, total)
    found.visited = books.visited
    return found


GOAL = "goal"  # the tag of a goal's witness among a checkpoint's witnesses (`marked` in `run`)


def least(best: dict[str, Link], names: Iterable[str], key: Link) -> None:
    """Keep `key` as the link of each of `names` where it is the least yet (the canonical witness)."""
    for name in names:
        if best.get(name, key) >= key:
            best[name] = key


def unreached(props: list[Any], reached: Collection[str]) -> list[Any]:
    """The properties still to judge: `props` less the reachability goals (of states or of steps) already
    `reached`, whose names are the only ones `reached` holds (judging a reached goal again changes nothing)."""
    return [p for p in props if p.name not in reached]


def should_stop(stop_at: Collection[str] | None, witnesses: Collection[str]) -> bool:
    """Whether a search told to stop at these properties has a witness of one of them (so ends after this level)."""
    return stop_at is not None and any(name in witnesses for name in stop_at)


def checkpoint_meta(found: Exploration, witnesses: dict[str, Any], depth: int, sizes: list[int], expanded: int,
                    seconds: float, goals: dict[str, Any] | None = None, unjudged: bool = False) -> dict[str, Any]:
    """What a checkpoint keeps besides the visited arrays and the frontier: counters, the violations' and the
    goals' witnesses and timings, the coverage counted so far when the run counts it, and `unjudged` when the
    frontier's own states are not judged yet."""
    meta = {"transitions": found.transitions, "reached": sorted(found.reached),
            "witnesses": {name: [root, steps] for name, (root, steps) in sorted(witnesses.items())},
            "goals": {name: [root, steps] for name, (root, steps) in sorted((goals or {}).items())},
            "depth": depth, "sizes": sizes, "expanded": expanded, "seconds": seconds}
    if found.tally is not None:
        meta["coverage"] = found.tally.counts()
    if unjudged:
        meta["unjudged"] = True
    return meta


def restore_counters(found: Exploration, meta: dict[str, Any], where: str = "the checkpoint") -> dict[str, Witness]:
    """Put a checkpoint's transition count, reached goals and coverage counts (where both the checkpoint and this
    run count them) and its goals' witnesses (a file that has them) back into `found`; its violations'
    witnesses, as lists."""
    found.transitions, found.reached = meta["transitions"], set(meta["reached"])
    found.goals = {name: (root, list(steps)) for name, (root, steps) in meta.get("goals", {}).items()
                   if name in found.reached}
    if found.tally is not None and "coverage" in meta:
        if not found.tally.valid(meta["coverage"]):
            raise BadCheckpoint(f"{where}: the coverage counts are malformed")
        found.tally.merge(meta["coverage"])
    return {name: (root, list(steps)) for name, (root, steps) in meta["witnesses"].items()}


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


def first_frontier(model: Any, props: list[Any], found: Exploration, resume: Snapshot | None) -> Start:
    """The first frontier of a search: resumed, or the initial states in fingerprint order, each checked against
    the state properties `props`."""
    if resume is not None:
        visited, frontier_fps, frontier = resume_frontier(model, resume)
        meta = resume.meta
        witnesses = restore_counters(found, meta, str(resume.path))
        if meta.get("unjudged"):
            judge_frontier(model, props, found, visited, meta["depth"], frontier, witnesses)
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


def judge_frontier(model: Any, props: list[Any], found: Exploration, visited: Visited, depth: int, frontier: Any,
                   witnesses: dict[str, Witness]) -> None:
    """Judge the frontier of a checkpoint written before its states were judged (a lazy engine's stop): for each
    property a state of it breaks or goal one reaches, not already witnessed, the witness the search would have
    recorded (the least link, parent position then action position, among those states)."""
    parents, actions = visited.parents[depth], visited.actions[depth]
    bad_best: dict[str, tuple[int, int, int]] = {}
    goal_best: dict[str, tuple[int, int, int]] = {}
    for pos, state in enumerate(frontier):
        bad, reached = state_checks(model, state, props)
        key = (int(parents[pos]), int(actions[pos]), pos)
        least(bad_best, [n for n in bad if n not in witnesses], key)
        least(goal_best, [n for n in reached if n not in found.reached], key)
    for name, (_, _, pos) in bad_best.items():
        witnesses[name] = visited.path(depth, pos)
    for name, (_, _, pos) in goal_best.items():
        found.goals[name] = visited.path(depth, pos)
    found.reached.update(goal_best)


def resume_frontier(model: Any, snapshot: Snapshot,
                    on_fingerprints: Callable[[int, np.ndarray], None] | None = None
                    ) -> tuple[Visited, list[int], list[Any]]:
    """The visited set and the frontier of a checkpoint, the frontier's states rebuilt by replaying its levels.

    Every rebuilt state's fingerprint must be a visited one and the last level's must be the saved frontier:
    a body that does not hang together is refused (BadCheckpoint), never resumed. `on_fingerprints` goes to
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
        for kind in ("witnesses", "goals"):
            for name, (root, steps) in meta.get(kind, {}).items():
                if len(steps) > meta["depth"]:
                    raise ValueError(f"the witness of {name} is longer than the search is deep")
                replay(model, root, steps)
        if decodes_frontier(snapshot, by_level=on_fingerprints is not None):
            if want.size != visited.parents[-1].size or bool(np.any(want[1:] <= want[:-1])) \
                    or bool(visited.unseen(want).any()):
                raise BadCheckpoint(f"{snapshot.path}: the saved frontier is not the last level of the visited set")
            # The levels, where the file keeps them, are checked whoever reads them: the next checkpoint keeps
            # them too (`LocalBooks.write`).
            try:
                by_level = level_fingerprints(model, visited, snapshot, want) if "levels" in snapshot.arrays else None
            except ValueError as err:
                raise BadCheckpoint(f"{snapshot.path}: the stored levels do not fit the visited set ({err})") from None
            sampled_paths(model, visited, want, by_level)
            if by_level is not None:
                visited.levels = snapshot.arrays["levels"]  # checked by `level_fingerprints`, which it partitions
                for level, fps in enumerate(by_level if on_fingerprints is not None else ()):
                    on_fingerprints(level, fps)
            return visited, want.tolist(), stored_frontier(model, snapshot, want)
        every: list[np.ndarray] = []

        def keep(level: int, fps: np.ndarray) -> None:
            every.append(fps)
            if on_fingerprints is not None:
                on_fingerprints(level, fps)

        states = replay_levels(model, visited, on_fingerprints=keep)
        fps = every[-1]
        if fps.size != want.size or not np.array_equal(fps, want):
            raise BadCheckpoint(f"{snapshot.path}: the saved frontier is not the last level of the visited set")
        try:
            visited.set_levels(every)  # every replayed state is a visited one, in one level
        except ValueError as err:
            raise BadCheckpoint(f"{snapshot.path}: the replayed levels are not the visited fingerprints ({err})") \
                from None
    except BadCheckpoint:
        raise
    except (IndexError, ValueError, RuntimeError) as err:
        raise BadCheckpoint(f"{snapshot.path}: the parent links do not replay ({err})") from None
    return visited, want.tolist(), states


def decodes_frontier(snapshot: Snapshot, by_level: bool = False) -> bool:
    """Whether a resume of `snapshot` decodes the frontier's states it stores (else it replays every visited
    state); `by_level`: for a loader that also needs each visited state's level (Spark's)."""
    return "states.ends" in snapshot.arrays and stored_states.available() and \
        (not by_level or "levels" in snapshot.arrays)


def resume_note(snapshot: Snapshot, by_level: bool = False) -> str:
    """What a resume of `snapshot` is about to do, in one line (a replay of a big file takes a while)."""
    sizes = snapshot.meta["sizes"]  # a loaded checkpoint's: a level size a level, level 0 included
    head = f"resuming {snapshot.path} at level {snapshot.meta['depth']} ({sum(sizes):,} states visited)"
    if decodes_frontier(snapshot, by_level):
        return f"{head}: decoding the frontier's {sizes[-1]:,} states stored in it"
    return f"{head}: rebuilding the frontier by replaying every visited state (the file stores no frontier " \
           "states this engine reads)"


SAMPLED = 256  # frontier states whose paths a resume from stored states replays (each costs one step a level)


def level_fingerprints(model: Any, visited: Visited, snapshot: Snapshot, want: np.ndarray) -> list[np.ndarray]:
    """Each level's fingerprints in position order, from the checkpoint's `levels` (each visited fingerprint's
    level; a level is kept in fingerprint order); ValueError unless they fit the levels, the initial states and
    the frontier."""
    levels = snapshot.arrays["levels"]
    depth = len(visited.parents) - 1
    if levels.dtype != LEVEL or levels.shape != visited.seen.shape:
        raise ValueError("the visited fingerprints' levels are not one byte each")
    if np.bincount(levels, minlength=depth + 1).tolist() != [p.size for p in visited.parents]:
        raise ValueError("the visited fingerprints' levels do not have the levels' sizes")
    out = [visited.seen[levels == level] for level in range(depth + 1)]
    inits = model.init_states()
    roots = visited.parents[0].tolist()
    if any(not 0 <= r < len(inits) for r in roots) or \
            [model.fingerprint(inits[r]) for r in roots] != out[0].tolist():
        raise ValueError("level 0 is not the initial states it names")
    if not np.array_equal(out[-1], want):
        raise ValueError("the last level's fingerprints are not the saved frontier")
    return out


def sampled_paths(model: Any, visited: Visited, want: np.ndarray, by_level: list[np.ndarray] | None = None) -> None:
    """Replay the paths of up to SAMPLED frontier states, spread over it, from their parent links; ValueError
    unless each ends at its saved fingerprint, and passes through its level's fingerprints (`by_level`, when
    given). (A resume from stored states replays no level: this checks that the links the counterexamples will
    follow hang together with the states, at a cost of depth steps each.)"""
    depth = len(visited.parents) - 1
    for at in sorted({int(k) for k in np.linspace(0, want.size - 1, min(SAMPLED, want.size))}):
        root, steps = visited.path(depth, at)
        where = [at]  # the path's position in each level, from the frontier back to level 1
        for level in range(depth, 1, -1):
            where.append(int(visited.parents[level][where[-1]]))
        where.reverse()
        state = None
        for level, (_, state) in enumerate(walk(model, root, steps), start=1):
            if by_level is not None and model.fingerprint(state) != int(by_level[level][where[level - 1]]):
                raise ValueError(f"a path leaves level {level}'s fingerprints")
        if state is None:
            state = model.init_states()[root]  # a path of no step (walk has checked the root)
        if model.fingerprint(state) != int(want[at]):
            raise ValueError(f"the path of frontier state {at} does not lead to its fingerprint")


def stored_frontier(model: Any, snapshot: Snapshot, want: np.ndarray) -> Any:
    """The frontier's states stored in a checkpoint, each checked to have its saved fingerprint; a list, or a
    `Frontier` when it is big (as the search keeps it); BadCheckpoint when they are malformed or do not match."""
    from kcm.checkers.explore import frontier as compact

    spill = compact.SPILL
    fingerprint = model.fingerprint
    expected = want.tolist()

    def checked() -> Any:
        at = 0
        for batch in stored_states.unpack(snapshot.arrays):
            if at + len(batch) > len(expected):
                raise ValueError("more stored states than the frontier has")
            for state in batch:
                if fingerprint(state) != expected[at]:
                    raise ValueError(f"stored state {at} does not have the frontier's fingerprint there")
                at += 1
                yield state
        if at != len(expected):
            raise ValueError(f"{at} stored states for a frontier of {len(expected)}")

    try:
        with no_collections():  # the decoded states are acyclic values: a cycle scan would revisit them all
            return compact.next_level(checked(), len(expected), spill, codec=compact.codec_for(spill))
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as err:
        # A value of the wrong kind inside a record fails in the fingerprint's own code.
        raise BadCheckpoint(f"{snapshot.path}: the stored frontier states are not the frontier ({err})") from None


def eta(sizes: list[int], frontier: int, done: int, new: int, expanded: int, seconds: float) -> float | None:
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
