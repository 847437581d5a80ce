"""The local engine: breadth-first search in this process, over 64-bit fingerprints.

The level loop (`level_loop.py`: seeding or resuming, the visited set, witnesses, bounds, progress,
checkpoints, stop requests) is every engine's; this module supplies how the local engine expands a level: it
dedupes the successors `expand_level` yields (in this process: `expander`) against the level and the compact
visited set (`visited.py`), judges each new state's properties once, and keeps a level of more than
`spill` states encoded (`frontier.py`), its new states past that many written to disk as they are found, in
sorted runs merged at the level's end (`runs.py`). Whatever order `expand_level` yields its rows in, each new state
keeps its least link and each property its least witness (the canonical order, see `level_loop`).
"""

from __future__ import annotations

import contextlib
import gc
from array import array
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np
from kcm.checkers.explore.checkpoint import Checkpointer, Snapshot
from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.frontier import SPILL, Frontier, codec_for, next_level
from kcm.checkers.explore.level_loop import Level, Progress, ProgressFn, Tick, least, resume_frontier, run, unreached
from kcm.checkers.explore.runs import RUN, LevelRuns
from kcm.checkers.explore.stopping import StopRequest
from kcm.checkers.explore.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.explore.visited import FP, Visited
from kcm.model.interface import ALWAYS, STATE_KINDS, STEP, STEP_KINDS
from kcm.properties.reads import Rechecks

__all__ = ["CHUNK", "Progress", "ProgressFn", "Row", "expander", "explore", "resume_frontier", "safety_names",
           "search"]

# One successor of a level: (fingerprint, state, parent's position in the frontier, action's position in
# model.actions(parent), action, step properties violated, state properties violated (None: not computed yet),
# sometimes-properties reached).
Row = tuple[int, Any, int, int, Any, list[str], list[str] | None, list[str]]
CHUNK = 4096  # candidates checked against the visited set at once (keeps a level's duplicates from piling up)


def safety_names(model: Any) -> set[str]:
    """The names of the model's safety properties (always and step rules): what `stop_at` usually lists."""
    return {p.name for p in model.properties() if p.expectation in (ALWAYS, STEP)}


class LocalLevels:
    """The local engine's levels: the frontier a list of states (or a spilled `Frontier`) in this process."""

    STORES_STATES = True  # a checkpoint can store the frontier's states (`level_loop.run`)

    def __init__(self, model: Any, expand_level: Callable[[Any], Iterable[Row]], skip_unchanged: bool = True,
                 spill: int | None = SPILL, run_size: int | None = RUN) -> None:
        self.model, self.expand_level, self.skip_unchanged, self.spill = model, expand_level, skip_unchanged, spill
        # Past `spill` new states, the level in work is written to disk in sorted runs of `run_size` states
        # (runs.py); None: kept in memory, each state encoded alone.
        self.run = run_size
        self.last_runs: tuple[int, int, int, int] | None = None  # the last level on disk: runs, records, bytes,
        # bytes of its written fingerprints
        # Only the properties state_checks judges (each state check skips the others anyway), less the
        # reachability goals already reached (judging them again changes nothing).
        self.judged = [p for p in model.properties() if p.expectation in STATE_KINDS]
        self.rechecks = Rechecks(self.judged) if skip_unchanged else None
        self.codec = codec_for(spill)
        self.spill_at = spill if spill is not None else 1 << 62

    def begin(self, states: Iterable[Any]) -> Any:
        """The first frontier, as it is (a list, or a resumed level's `Frontier`)."""
        return states

    def halt(self) -> None:
        """Nothing runs elsewhere: nothing to let go."""

    def expand(self, frontier: Any, visited: Visited, found: Exploration, tick: Tick) -> Level:
        """Expand the frontier with `expand_level`, dedupe, judge the new states; the level in fingerprint order."""
        still = unreached(self.judged, found.reached)
        if len(still) != len(self.judged):
            self.judged = still
            self.rechecks = Rechecks(still) if self.skip_unchanged else None
        codec, spill_at = self.codec, self.spill_at
        # fingerprint -> (parent, action position, action, state, state properties violated or None)
        pending: dict[int, tuple[int, int, Any, Any, list[str] | None]] = {}
        bad_best: dict[str, tuple[int, int]] = {}  # property -> least (parent, action position)
        goal_best: dict[str, tuple[int, int]] = {}
        unchecked: list[int] = []
        # Past `spill_at` new states (with `run` set), the level in work goes to disk a run at a time (runs.py).
        disk: LevelRuns | None = None
        run_at = spill_at
        ordered = True  # whether the rows came in link order so far (then a state written is never re-linked)
        last = (-1, -1)
        parent = 0
        n = -1
        try:
            for n, (nfp, item, parent, aidx, action, bad_step, bad, reached) in enumerate(
                    self.expand_level(frontier)):
                if reached:
                    found.reached.update(reached)
                    least(goal_best, reached, (parent, aidx))
                if bad_step:
                    least(bad_best, bad_step, (parent, aidx))
                if ordered and (parent, aidx) < last:
                    ordered = False
                last = (parent, aidx)
                old = pending.get(nfp)
                if old is not None:
                    if (old[0], old[1]) > (parent, aidx):  # an engine that yields out of order: keep the least link
                        pending[nfp] = (parent, aidx, action, item, bad)
                    continue
                if self.run is None and len(pending) >= spill_at:
                    item = codec.encode(item)  # kept encoded in memory (no runs on disk)
                pending[nfp] = (parent, aidx, action, item, bad)
                unchecked.append(nfp)
                if len(unchecked) >= CHUNK:
                    _drop_seen(visited, pending, unchecked, disk, ordered)
                    unchecked = []
                    if self.run is not None and len(pending) >= run_at:
                        if disk is None:
                            disk = LevelRuns()
                            run_at = self.run
                        self._write_run(disk, pending, frontier, found, tick)
                if n % 256 == 0:
                    tick(parent, len(pending) + (len(disk.written) if disk is not None else 0))
            found.transitions += n + 1  # counted once per level, not per transition (this loop is the hot path)
            _drop_seen(visited, pending, unchecked, disk, ordered)
            if disk is not None:
                self._write_run(disk, pending, frontier, found, tick)
                return self._merge(disk, frontier, bad_best, goal_best)
        finally:
            if disk is not None:
                disk.close()
        fps = np.fromiter(pending, dtype=FP, count=len(pending))
        order = np.argsort(fps, kind="stable")
        rows = list(pending.values())
        for k, (parent, aidx, _, item, bad) in enumerate(rows):
            if k % 256 == 255:
                tick.poll()
            if bad is None:  # checked here, once per new state, when the engine did not
                if type(item) is bytes:
                    item = codec.decode(item)
                bad, reached = self._judge(frontier, parent, item, found)
                if reached:
                    least(goal_best, reached, (parent, aidx))
            if bad:
                least(bad_best, bad, (parent, aidx))
        parents = np.array([r[0] for r in rows], dtype=np.int64)[order]
        actions = np.array([r[1] for r in rows], dtype=np.int64)[order]
        following = next_level((rows[k][3] for k in order.tolist()), len(rows), self.spill, frontier, codec)
        if isinstance(following, Frontier):  # the level's states now live encoded there only (frontier.py)
            rows.clear()
            pending.clear()
        return Level(fps[order], parents, actions, following, bad_best, goal_best)

    def _judge(self, frontier: Any, parent: int, item: Any, found: Exploration) -> tuple[list[str], list[str]]:
        """The state properties a new state breaks and the goals it reaches (added to `found.reached`)."""
        # A property that reads only parts the step left as they were has the parent's verdict: a violation there
        # already has its (shorter) witness, a goal reached there is already recorded.
        bad, reached = state_checks(self.model, item, self.judged if self.rechecks is None else
                                    self.rechecks.after_step(frontier[parent], item))
        if reached:
            found.reached.update(reached)
        return bad, reached

    def _write_run(self, disk: LevelRuns, pending: dict[int, tuple[int, int, Any, Any, list[str] | None]],
                   frontier: Any, found: Exploration, tick: Tick) -> None:
        """Judge the buffered new states (in the order found: their parents are read from the chunk decoded
        last), and write them as one sorted run; the buffer is emptied."""
        codec = self.codec
        fps, parents, actions, blobs = [], [], [], []
        verdicts: dict[int, tuple[list[str], list[str]]] = {}
        for k, (nfp, (parent, aidx, _, item, bad)) in enumerate(pending.items()):
            if k % 256 == 255:
                tick.poll()
            fps.append(nfp)
            parents.append(parent)
            actions.append(aidx)
            if item is None:  # a link-only record (`_drop_seen`): the state is in an earlier run
                blobs.append(None)
                continue
            if type(item) is bytes:
                item = codec.decode(item)
            reached: list[str] = []
            if bad is None:
                bad, reached = self._judge(frontier, parent, item, found)
            if bad or reached:
                verdicts[k] = (list(bad), list(reached))
            blobs.append(codec.encode(item))
        pending.clear()
        disk.write(fps, parents, actions, blobs, verdicts)

    def _merge(self, disk: LevelRuns, frontier: Any, bad_best: dict[str, tuple[int, int]],
               goal_best: dict[str, tuple[int, int]]) -> Level:
        """The level from its runs: merged in fingerprint order straight into the next frontier's chunks."""
        # As the visited set keeps them (a level of more than 2^32 states, or a state of more than 2^16 actions,
        # is an OverflowError there too).
        fps, parents, actions = array("Q"), array("I"), array("H")

        def states() -> Iterable[bytes]:
            for fp, parent, aidx, blob, verdicts in disk.merged():
                fps.append(fp)
                parents.append(parent)
                actions.append(aidx)
                for bad, reached in verdicts:  # judged with a link that may not be the least: recorded with it
                    least(bad_best, bad, (parent, aidx))
                    least(goal_best, reached, (parent, aidx))
                yield blob

        if isinstance(frontier, Frontier):
            frontier.close()
        following = Frontier(states(), self.codec, self.spill if self.spill is not None else 0)
        self.last_runs = (len(disk.runs), disk.records, disk.bytes, disk.written.nbytes())
        return Level(np.frombuffer(fps, dtype=FP), np.frombuffer(parents, dtype=np.uint32),
                     np.frombuffer(actions, dtype=np.uint16), following, bad_best, goal_best)


def search(model: Any, engine: str, expand_level: Callable[[Any], Iterable[Row]],
           max_states: int | None = None, progress: ProgressFn | None = None,
           checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
           progress_every: float = 1.0, stop_at: Collection[str] | None = None,
           skip_unchanged: bool = True, stop: StopRequest | None = None, spill: int | None = SPILL,
           tally: Any = None, run_size: int | None = RUN) -> Exploration:
    """The level loop (`level_loop.run`) with this process's levels, expanded by `expand_level`.

    `skip_unchanged`: a new state is judged only by the state properties that read a part its step changed
    (`properties/reads.py`); the others have its parent's verdict, already recorded. `tally`: the coverage counts,
    which go into the checkpoints. `run_size`: past `spill` new states, the level in work goes to disk in sorted
    runs of this many states (`runs.py`; None: it stays in memory, encoded). The other options are
    `level_loop.run`'s.
    """
    found = Exploration(engine, tally=tally)
    return run(model, found, LocalLevels(model, expand_level, skip_unchanged, spill, run_size), max_states,
               progress, checkpoint, resume, progress_every, stop_at, stop)


def _drop_seen(visited: Visited, pending: dict[int, Any], keys: list[int], disk: LevelRuns | None = None,
               ordered: bool = True) -> None:
    """Remove from `pending` the candidates among `keys` that an earlier level already visited, and those already
    written in a run of this level (kept as a link-only record when the rows came out of order)."""
    if not keys:
        return
    fps = np.fromiter(keys, dtype=FP, count=len(keys))
    for fp in fps[~visited.unseen(fps)].tolist():
        pending.pop(fp, None)
    if disk is not None and len(disk.written.parts):
        for fp in fps[disk.written.has(fps)].tolist():
            if ordered:
                pending.pop(fp, None)
            elif fp in pending:
                # Its first link, written, may not be its least: the merge keeps the least of the two.
                parent, aidx, action, _, _ = pending[fp]
                pending[fp] = (parent, aidx, action, None, None)


def expander(model: Any, tally: Any = None) -> Callable[[list[Any]], Iterable[Row]]:
    """The local engine's `expand_level`: every kept successor of every frontier state, with its step checks;
    with a coverage `tally` (`coverage.py`), each transition is counted there as well."""
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
    the transitions taken into `found.tally` (`coverage.py`); `stop` cuts the search short; a level of
    more than `spill` states is kept encoded, its states past that many in a temporary file (`frontier.py`;
    None: every level a list of states).
    """
    from kcm.checkers.explore.tally import Tally

    tally = Tally() if coverage else None
    with no_collections(), (tally.probing() if tally is not None else contextlib.nullcontext()):
        found = search(model, "local", expander(model, tally), max_states, progress, checkpoint, resume,
                       stop_at=stop_at, skip_unchanged=skip_unchanged, stop=stop, spill=spill, tally=tally)
        # Every object the search made and kept (the model's memos, the visited set's links) is young when
        # collection resumes, so the first collection after it would scan them all (about 3% of a run of
        # `controller`). They form no reference cycles (collector.py): moved out of the collector's
        # sight, they are still freed by reference counting.
        gc.freeze()
        return found
