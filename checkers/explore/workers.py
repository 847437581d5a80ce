"""The multi-process local engine (`kcm explore --workers N`): N processes expand a level, states never travel.

Each worker process holds a share of the frontier (the states themselves, with their global positions in the
level). Level by level, in step with the coordinator (this process):

1. every worker expands the frontier states it holds (the step checks run there) and keeps its successors, each
   fingerprint once with its least (parent position, action position); it sends the coordinator only numpy
   arrays of fingerprints and links, never a state; a worker that has expanded all it holds takes the last half
   of what a busy one has left (pickled, relayed by the coordinator), so the level ends on every core together;
2. the coordinator drops the fingerprints already visited, picks for each new one its least link over every
   worker (the canonical choice), puts the level in fingerprint order, records the links in its `Visited`, and
   tells each worker which of its candidates won and at which global positions;
3. each worker keeps its winners as its next frontier and judges their state properties, by the same rule as
   the single-process engine (only the properties that read a part the step changed, `Rechecks`), with the parent
   it has at hand; the coordinator merges each property's least witness;
4. when the workers' shares differ by more than a little, the coordinator has the larger ones hand some states
   to the smaller ones (pickled bytes relayed through it), so the load stays even.

Past its share of the spill threshold, a worker's level in work goes to disk as the local engine's does
(`runs.py`): its candidates are buffered a run at a time, those an earlier level visited dropped (the coordinator
answers which), the others judged and written as a sorted run; its report is then the runs' distinct candidates in
fingerprint order with their least links, and its winners are merged from the runs straight into its next share.

So the counts, the verdicts and every counterexample are the single-process engine's (`bfs.py` defines
the canonical order). Checkpoints have the single-process format (the coordinator holds the whole visited set):
either engine resumes the other's.
"""

from __future__ import annotations

import ctypes
import gc
import heapq
import multiprocessing
import os
import pickle
import signal
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import islice
from multiprocessing.connection import wait
from typing import Any

import numpy as np
from kcm.checkers.explore import stored_states
from kcm.checkers.explore.batches import batched
from kcm.checkers.explore.checkpoint import Checkpointer, Snapshot
from kcm.checkers.explore.codec import StateCodec
from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.frontier import CHUNK, MEMO, SPILL, Frontier
from kcm.checkers.explore.level_loop import Level, ProgressFn, Stopped, Tick, least, run, unreached
from kcm.checkers.explore.runs import RUN, LevelRuns
from kcm.checkers.explore.stopping import MemoryOnly, StopRequest, ignore_signals, unless_left_out
from kcm.checkers.explore.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.explore.visited import FP, Visited
from kcm.model.interface import STATE_KINDS, STEP_KINDS
from kcm.properties.reads import Rechecks

SLACK = 0.03  # a share may exceed an even split by this fraction of the level before states are handed over
MIN_MOVE = 32  # fewer states than this are never handed over (the pickling would cost more than it saves)
POLL = 4  # states expanded between two looks for a request to hand over work
MIN_STEAL = 4  # a worker with fewer states left to expand keeps them
WATCH = 0.25  # seconds between two looks at the stop request while the coordinator waits for its workers
PR_SET_PDEATHSIG = 1  # Linux prctl(2): the signal this process gets when its parent dies


class Share:
    """A worker's states to expand, in order, each with its global position in the level.

    Past `spill` states, the states are kept as a `Frontier` (`frontier.py`: the Spark codec's bytes,
    compressed in chunks, past `spill` in a temporary file), as the local engine keeps its levels; below, as a
    list. States handed to another worker travel as the codec's bytes when the share holds them so.
    """

    def __init__(self, rows: Iterable[tuple[int, Any]], encoded: bool, codec: StateCodec, spill: int) -> None:
        self.codec = codec
        self.positions = array("q")
        self.states: Any = Frontier((), codec, spill) if encoded else []
        self.extend(rows)

    def extend(self, rows: Iterable[tuple[int, Any]]) -> None:
        """Add (position, state or its bytes) rows at the end."""
        positions, states = self.positions, self.states
        listed = type(states) is list
        decode = self.codec.decode
        for pos, state in rows:
            positions.append(pos)
            states.append(decode(state) if listed and type(state) is bytes else state)
        if not listed:
            states.seal()

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: int) -> tuple[int, Any]:
        return self.positions[i], self.states[i]

    def state(self, i: int) -> Any:
        """The state at index i."""
        return self.states[i]

    def rows(self) -> Iterator[tuple[int, Any]]:
        """Every (position, state or its bytes) row in order, a chunk's bytes at a time when kept encoded."""
        states = self.states
        if type(states) is list:
            yield from zip(self.positions.tolist(), states, strict=True)
            return
        for start in range(0, len(self.positions), CHUNK):
            end = min(start + CHUNK, len(self.positions))
            yield from zip(self.positions[start:end].tolist(), states.blobs(start, end), strict=True)

    def span(self, start: int, end: int) -> list[tuple[int, Any]]:
        """The rows from index `start` to `end` (their states as bytes when the share keeps them encoded); they
        stay in the share."""
        states = self.states
        blobs = states[start:end] if type(states) is list else states.blobs(start, end)
        return list(zip(self.positions[start:end].tolist(), blobs, strict=True))

    def close(self) -> None:
        """Let go of the states (a spilled share's temporary file with them)."""
        if isinstance(self.states, Frontier):
            self.states.close()
        self.states = []
        self.positions = array("q")


class _Store(Exception):
    """In a worker: the coordinator asked for the level's states (a stop), so the level in work is given up."""


class _Worker:
    """One worker process's state: its share of the frontier and the candidates of the level in work."""

    def __init__(self, model: Any, conn: Any, frontier: Share, tally: Any = None, spill: int = SPILL,
                 run_size: int | None = None) -> None:
        self.model, self.conn, self.tally = model, conn, tally
        self.frontier = frontier  # (global position in the level, state), in position order
        # The level's share is the frontier's first `own` rows. It stays whole while the level is expanded:
        # states handed to an idle worker are only no longer expanded here (`end`), and those taken come after
        # it, so a stop can still store the level's states (`_store`) whatever was handed over.
        self.own = len(frontier)
        self.end = self.own  # the frontier's rows before this index are this worker's to expand
        # A share of more than `spill` states is kept encoded, and so are the level's candidates past that many:
        # the same threshold per worker as the local engine's per level, over the workers.
        self.spill, self.codec = spill, frontier.codec
        self.step_props = [p for p in model.properties() if p.expectation in STEP_KINDS]
        self.state_props = [p for p in model.properties() if p.expectation in STATE_KINDS]
        self.rechecks = Rechecks(self.state_props)
        self.judged = self.state_props  # less the goals reached anywhere (the coordinator's word)
        # The level's candidates: state (its bytes past `spill`), the parent's index in self.frontier, and the
        # link sent for it.
        self.states: list[Any] = []
        self.local: list[int] = []
        self.links: tuple[np.ndarray, np.ndarray] = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        # Past `spill` candidates, the level in work goes to disk in sorted runs of `run` (runs.py; None: it stays
        # in memory, encoded): then the candidates are the runs' distinct states in fingerprint order.
        self.run = run_size
        self.disk: LevelRuns | None = None

    def serve(self) -> None:
        """Serve the coordinator's commands until it says stop (or goes away); the level's runs closed then."""
        try:
            self._serve()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            # The coordinator went away (killed, or ended without a word) mid-conversation: nothing is left to
            # report to; end quietly rather than with a traceback on the terminal.
            return
        finally:
            if self.disk is not None:
                self.disk.close()

    def _serve(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except EOFError:
                return
            if msg[0] == "stop":
                return
            if msg[0] == "expand":
                try:
                    report = self.expand()
                except EOFError:
                    return
                except _Store:  # the level is given up for a stop: the checkpoint takes the level's states
                    self._store()
                    continue
                self.conn.send(report)
            elif msg[0] == "winners":
                self.keep(*msg[1:])
            elif msg[0] == "store":
                self._store()

    def expand(self) -> tuple:
        """Expand the held frontier (and states taken from busier workers) and keep each new fingerprint's least
        link; the level's report. Every POLL states a request to hand over half of what is left is answered.
        Past `spill` candidates (with `run` set), they go to disk a run at a time, judged as they are written."""
        model, conn = self.model, self.conn
        fingerprint = model.fingerprint
        step_props = self.step_props
        step_best: dict[str, tuple[int, int]] = {}
        goal_best: dict[str, tuple[int, int]] = {}  # step goal -> least link that reaches it
        reached: set[str] = set()
        transitions = 0
        successors = indexed_successors if self.tally is None else self.tally.successors
        # The candidates (on disk: those since the last run): fingerprint -> index, then by index.
        seen: dict[int, int] = {}
        fps: list[int] = []
        parents: list[int] = []
        actions: list[int] = []
        states: list[Any] = []
        local: list[int] = []
        work = self.frontier
        self.end = self.own
        spill, encode = self.spill, self.codec.encode
        run_at = spill if self.run is not None else 1 << 62
        written: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # each run's fingerprints and links
        ordered = True  # whether the states were expanded in position order so far (see runs.py)
        last = -1
        li = 0
        try:
            while True:
                while li < self.end:
                    if len(fps) >= run_at:
                        if self.disk is None:
                            self.disk = LevelRuns()
                            run_at = self.run  # type: ignore[assignment]
                        written.append(self._write_run(fps, parents, actions, states, local, ordered, work, li))
                        seen.clear()
                    if li % POLL == 0 and conn.poll():
                        msg = conn.recv()
                        self._answer(msg, work, li)
                        if li >= self.end:
                            break
                    pos, state = work[li]
                    if pos < last:
                        ordered = False
                    last = pos
                    for aidx, action, nxt, effects in successors(model, state):
                        transitions += 1
                        bad_step, hit = step_checks(model, state, action, nxt, effects, step_props)
                        if bad_step:
                            least(step_best, bad_step, (pos, aidx))
                        if hit:
                            reached.update(hit)
                            least(goal_best, hit, (pos, aidx))
                        fp = fingerprint(nxt)
                        at = seen.get(fp)
                        if at is not None:
                            # States taken from another worker come out of position order: keep the least link.
                            if (pos, aidx) < (parents[at], actions[at]):
                                parents[at], actions[at], local[at] = pos, aidx, li
                                states[at] = nxt if at < spill else encode(nxt)
                            continue
                        seen[fp] = len(fps)
                        fps.append(fp)
                        parents.append(pos)
                        actions.append(aidx)
                        states.append(nxt if len(states) < spill else encode(nxt))
                        local.append(li)
                    li += 1
                conn.send(("idle",))
                msg = conn.recv()
                while msg[0] == "give":  # a request that crossed our "idle": nothing is left to give
                    self._give(msg, work, li)
                    msg = conn.recv()
                if msg[0] == "finish":
                    break
                if msg[0] == "stop":  # the coordinator gave up (another worker died): end here
                    raise EOFError
                if msg[0] == "store":
                    raise _Store
                li = len(work)  # past the rows handed over: those taken are expanded next
                work.extend(pickle.loads(msg[1]))  # noqa: S301 - states pickled by a sibling worker of this run
                self.end = len(work)
            if self.disk is not None:
                written.append(self._write_run(fps, parents, actions, states, local, ordered, work, li))
        except BaseException:
            if self.disk is not None:
                self.disk.close()
                self.disk = None
            raise
        self.frontier = work  # the parents of this level's candidates, by their index `local`
        if self.disk is not None:
            # The candidates as the runs' merge gives them: each fingerprint once, in order, with its least link.
            keys = np.concatenate([w[0] for w in written])
            links = np.concatenate([w[1] for w in written]), np.concatenate([w[2] for w in written])
            del written
            order = np.lexsort((links[1], links[0], keys))
            first = np.ones(order.size, dtype=bool)
            first[1:] = keys[order[1:]] != keys[order[:-1]]
            order = order[first]
            fps_out = keys[order]
            self.links = (links[0][order], links[1][order])
            self.states, self.local = [], []
        else:
            fps_out = np.array(fps, dtype=FP)
            self.states, self.local = states, local
            self.links = (np.array(parents, dtype=np.int64), np.array(actions, dtype=np.int64))
        counted = self.tally.take() if self.tally is not None else None
        return ("report", fps_out, self.links[0], self.links[1], step_best, reached, transitions, goal_best,
                counted)

    def _write_run(self, fps: list[int], parents: list[int], actions: list[int], states: list[Any],
                   local: list[int], ordered: bool, work: Share, li: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Write the buffered candidates as one run (runs.py) and empty the buffer: those an earlier level
        visited (the coordinator's word) left out, those written already only as a link-only record when the
        states came out of position order, the others judged (in the order found: their parents are read from
        the share's chunk decoded last) and encoded. The run's fingerprints and links, sorted."""
        disk = self.disk
        assert disk is not None
        model, conn = self.model, self.conn
        keys = np.array(fps, dtype=FP)
        fresh = self._unseen(keys, work, li)
        again = disk.written.has(keys) if len(disk.written.parts) else np.zeros(keys.size, dtype=bool)
        after_step, decode, encode = self.rechecks.after_step, self.codec.decode, self.codec.encode
        out_fps: list[int] = []
        out_parents: list[int] = []
        out_actions: list[int] = []
        blobs: list[bytes | None] = []
        verdicts: dict[int, tuple[list[str], list[str]]] = {}
        for k in np.flatnonzero(fresh & ~(again & ordered)).tolist():
            if k % 256 == 255 and conn.poll():  # a request for work waits no longer than a few states
                self._answer(conn.recv(), work, li)
            out_fps.append(fps[k])
            out_parents.append(parents[k])
            out_actions.append(actions[k])
            if again[k]:  # its first link, written, may not be its least: the merge keeps the least of the two
                blobs.append(None)
                continue
            state = states[k]
            if type(state) is bytes:
                state = decode(state)
            # A property reading only parts the step left as they were has the parent's verdict (as in bfs).
            bad, hit = state_checks(model, state, after_step(work.state(local[k]), state))
            if bad or hit:
                verdicts[len(blobs)] = (list(bad), list(hit))
            blobs.append(encode(state))
        for buffer in (fps, parents, actions, states, local):
            buffer.clear()
        return disk.write(out_fps, out_parents, out_actions, blobs, verdicts)

    def _unseen(self, keys: np.ndarray, work: Share, li: int) -> np.ndarray:
        """Ask the coordinator which of these fingerprints no earlier level visited (a mask), answering the
        requests for work that cross the question meanwhile."""
        self.conn.send(("unseen", keys))
        while True:
            msg = self.conn.recv()
            if msg[0] == "unseen":
                return msg[1]
            self._answer(msg, work, li)

    def _answer(self, msg: tuple, work: Share, done: int) -> None:
        """Answer a message that comes while this worker expands: a request for work, the level given up (the
        run ends), or given up for a stop (the level's states go to the checkpoint)."""
        if msg[0] == "stop":
            raise EOFError
        if msg[0] == "store":
            raise _Store
        self._give(msg, work, done)

    def _give(self, msg: tuple, work: Share, done: int) -> None:
        """Answer a request for work: the last half of the states not expanded yet (none when few are left)."""
        left = self.end - done
        count = left // 2 if left >= MIN_STEAL else 0
        out = work.span(self.end - count, self.end) if count else []
        self.end -= count
        self.conn.send(("gift", pickle.dumps(out, pickle.HIGHEST_PROTOCOL) if out else b""))

    def _store(self) -> None:
        """Send the coordinator the level's share (`own` rows), as (positions, each state's stored-state bytes)
        batches in position order, then an end saying whether that was all of it; the level in work, if any, is
        let go first."""
        if self.disk is not None:
            self.disk.close()
            self.disk = None
        self.states, self.local = [], []
        decode = self.codec.decode
        whole = True
        try:
            for rows in batched(islice(self.frontier.rows(), self.own), CHUNK):
                states = [decode(s) if type(s) is bytes else s for _, s in rows]
                self.conn.send(("stored", [pos for pos, _ in rows], list(stored_states.state_bytes(states))))
        except TypeError:  # a value the encoding does not know: the checkpoint goes without states
            whole = False
        self.conn.send(("stored", None, whole))

    def keep(self, winners: np.ndarray, positions: np.ndarray, reached: set[str], gives: list[int],
             takes: int) -> None:
        """Keep the winning candidates as the next frontier, judge them, report, then hand over or take states."""
        model = self.model
        still = unreached(self.judged, reached)
        if len(still) != len(self.judged):
            self.judged, self.rechecks = still, Rechecks(still)
        if self.disk is not None:
            self._keep_runs(winners, positions, gives, takes)
            return
        after_step = self.rechecks.after_step
        states, local, frontier = self.states, self.local, self.frontier
        parents, actions = self.links
        decode = self.codec.decode
        state_best: dict[str, tuple[int, int]] = {}
        goal_best: dict[str, tuple[int, int]] = {}  # state goal -> least link of a new state that reaches it
        hits: set[str] = set()
        # Judged in the order the candidates were found, so that their parents are read in the share's order (a
        # spilled share decodes one chunk at a time); the verdicts are the least links whatever the order.
        for i in np.sort(winners).tolist():
            state = states[i]
            if type(state) is bytes:
                state = decode(state)
            # A property reading only parts the step left as they were has the parent's verdict (as in bfs).
            bad, hit = state_checks(model, state, after_step(frontier.state(local[i]), state))
            if bad:
                least(state_best, bad, (int(parents[i]), int(actions[i])))
            if hit:
                hits.update(hit)
                least(goal_best, hit, (int(parents[i]), int(actions[i])))
        frontier.close()
        self.frontier = Share((), False, self.codec, self.spill)
        self.local = []
        order = np.argsort(positions, kind="stable")
        kept: list[tuple[int, Any]] = list(zip(positions[order].tolist(),
                                               (states[i] for i in winners[order].tolist()), strict=True))
        self.states = states = []
        self.conn.send(("verdicts", state_best, hits, goal_best))
        encode = self.codec.encode
        for count in gives:
            # States spread evenly over the share, not its tail: the taker's share then spans every position as
            # the giver's does (a share of the last positions would lose most ties for the least link next time).
            picked = {len(kept) * i // count for i in range(count)}
            out = [(pos, s if type(s) is bytes else encode(s)) for i, (pos, s) in enumerate(kept) if i in picked]
            kept = [row for i, row in enumerate(kept) if i not in picked]
            self.conn.send_bytes(pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
        if takes:
            for _ in range(takes):
                kept.extend(self._taken())
            kept.sort(key=lambda row: row[0])
        self.frontier = Share(kept, len(kept) > self.spill, self.codec, self.spill)
        self.own = self.end = len(self.frontier)

    def _taken(self) -> list[tuple[int, Any]]:
        """A batch of states handed over by another worker (EOFError if the coordinator stopped the level instead:
        its stop comes as a pickled tuple, a batch is a list)."""
        batch = pickle.loads(self.conn.recv_bytes())  # noqa: S301 - our own workers' states
        if type(batch) is not list:
            raise EOFError
        return batch

    def _keep_runs(self, winners: np.ndarray, positions: np.ndarray, gives: list[int], takes: int) -> None:
        """`keep` for a level in work on disk: its runs merged once, the winners (judged when written) streamed
        into the next share in position order, those handed over picked evenly from the same stream."""
        disk = self.disk
        assert disk is not None
        self.frontier.close()  # every candidate was judged as it was written: no parent is read any more
        self.frontier = Share((), False, self.codec, self.spill)
        count = len(self.links[0])
        won = np.zeros(count, dtype=bool)
        won[winners] = True
        # The candidates' order is the fingerprints', and so is the level's: the winners' positions ascend.
        at = positions[np.argsort(winners, kind="stable")].tolist()
        # Which winner goes to which taker (-1: kept), spread evenly over the share as `keep` spreads them.
        dest = np.full(len(at), -1, dtype=np.int64)
        rest = np.arange(len(at))
        for g, n in enumerate(gives):
            picked = (rest.size * np.arange(n)) // n
            dest[rest[picked]] = g
            rest = np.delete(rest, picked)
        out: list[list[tuple[int, bytes]]] = [[] for _ in gives]
        state_best: dict[str, tuple[int, int]] = {}
        goal_best: dict[str, tuple[int, int]] = {}
        hits: set[str] = set()
        seen = 0

        def rows() -> Iterator[tuple[int, bytes]]:
            nonlocal seen
            j = 0
            for k, (_, parent, aidx, blob, marks) in enumerate(disk.merged()):
                seen = k + 1
                if not won[k]:
                    continue
                for bad, hit in marks:  # judged with a link that may not be the least: recorded with the least
                    least(state_best, bad, (parent, aidx))
                    if hit:
                        hits.update(hit)
                        least(goal_best, hit, (parent, aidx))
                g = int(dest[j])
                if g >= 0:
                    out[g].append((at[j], blob))
                else:
                    yield at[j], blob
                j += 1

        try:
            share = Share(rows(), len(at) - int(sum(gives)) > self.spill, self.codec, self.spill)
        finally:
            disk.close()
            self.disk = None
        if seen != count:
            raise RuntimeError(f"the level's runs gave {seen} candidates, {count} were reported")
        self.conn.send(("verdicts", state_best, hits, goal_best))
        for batch in out:
            self.conn.send_bytes(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
        out.clear()
        if takes:
            taken: list[tuple[int, Any]] = []
            for _ in range(takes):
                taken.extend(self._taken())
            taken.sort(key=lambda row: row[0])
            # Merged by position into a new share (the old one is read a chunk at a time meanwhile).
            whole = Share(heapq.merge(share.rows(), taken, key=lambda row: row[0]),
                          len(share) + len(taken) > self.spill, self.codec, self.spill)
            share.close()
            share = whole
        self.frontier = share
        self.own = self.end = len(share)


def _die_with(coordinator: int) -> bool:
    """In a worker: have the kernel kill this process when the coordinator dies (Linux; elsewhere the pipe's
    EOF alone ends it); False if the coordinator is gone already."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl to be had: the pipe's EOF still ends the worker
    # (The death signal comes when the thread that forked this process ends: the coordinator's thread that runs
    # the search, which closes the pool before it returns.)
    # The coordinator may have died between the fork and the prctl: then this process was handed to another
    # parent already and no death signal will ever come.
    return os.getppid() == coordinator


def _serve(model: Any, conn: Any, frontier: Share, coverage: bool, spill: int, run_size: int | None,
           coordinator: int, theirs: list[Any]) -> None:
    # Workers ignore SIGINT and SIGTERM (the coordinator's to handle), so they must end by themselves when the
    # coordinator dies by any means, SIGKILL included.
    ignore_signals()
    # The coordinator's ends of the pipes (this worker's and the earlier workers'), inherited through the fork:
    # while this process holds them, its own pipe (and theirs) never reaches EOF when the coordinator dies.
    for end in theirs:
        end.close()
    if not _die_with(coordinator):
        return
    # No cycle collection in a worker at all (it holds immutable states only): turning it back on at the end would
    # make the process's last allocations scan every object it made, which costs seconds at the exit of a big run.
    gc.disable()
    if not coverage:
        _Worker(model, conn, frontier, spill=spill, run_size=run_size).serve()
        return
    from kcm.checkers.explore.tally import Tally

    tally = Tally()
    with tally.probing():
        _Worker(model, conn, frontier, tally, spill, run_size).serve()


class _Pool:
    """The coordinator's ends of the workers' pipes, with a check that every worker is still there."""

    def __init__(self, model: Any, shares: list[Share], coverage: bool = False,
                 spill: int = SPILL, run_size: int | None = None) -> None:
        ctx = multiprocessing.get_context("fork")  # the workers inherit the model and their share as they are
        self.conns, self.procs = [], []
        self.closed = False
        coordinator = os.getpid()
        for share in shares:
            mine, theirs = ctx.Pipe()
            # The worker closes the coordinator's ends it inherits: its own and the earlier workers' (see _serve).
            proc = ctx.Process(target=_serve, args=(model, theirs, share, coverage, spill, run_size, coordinator,
                                                    [mine, *self.conns]), daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)

    def _died(self, w: int) -> RuntimeError:
        """The error that says worker w died (waited for, so that its exit code is known)."""
        proc = self.procs[w]
        proc.join(timeout=5)  # its sentinel fires as it exits, a moment before it can be waited for
        return RuntimeError(f"worker process {proc.pid} died (exit {proc.exitcode})")

    def _ready(self, w: int, stop: StopRequest | MemoryOnly | None = None) -> None:
        """Wait until worker w has written something (RuntimeError if it died first, Stopped if `stop` asks for
        it meanwhile)."""
        conn, proc = self.conns[w], self.procs[w]
        while True:
            # The stop first: a stop asked for is acted on even where the worker's answer is already there.
            if stop is not None and stop.poll():
                raise Stopped
            if conn.poll():
                return
            ready = wait([conn, proc.sentinel], timeout=None if stop is None else WATCH)
            if ready and conn not in ready:
                raise self._died(w)

    def recv(self, w: int, stop: StopRequest | MemoryOnly | None = None) -> Any:
        """Worker w's next message (Stopped if `stop` asks for it before one comes)."""
        self._ready(w, stop)
        try:
            return self.conns[w].recv()
        except (EOFError, OSError):  # the pipe closed, or was reset as the worker went
            raise self._died(w) from None

    def send(self, w: int, msg: Any) -> None:
        """Send worker w a message (RuntimeError if it died)."""
        try:
            self.conns[w].send(msg)
        except OSError:  # a broken or reset pipe: the worker is gone
            raise self._died(w) from None

    def _ready_any(self, stop: StopRequest | None = None) -> list[int]:
        """The workers that have written something (waiting for one; RuntimeError if a worker died instead,
        Stopped if `stop` asks for it meanwhile)."""
        while True:
            if stop is not None and stop.poll():
                raise Stopped
            ready = wait(self.conns + [p.sentinel for p in self.procs], timeout=None if stop is None else WATCH)
            if ready:
                break
        out = [w for w, conn in enumerate(self.conns) if conn in ready]
        if not out:
            raise self._died(next(w for w, p in enumerate(self.procs) if p.sentinel in ready))
        return out

    def expand(self, stop: StopRequest | None = None,
               unseen: Callable[[np.ndarray], np.ndarray] | None = None) -> list[tuple]:
        """One level's expansion: every worker's report, an idle worker taking half of a busy one's states left
        (Stopped if `stop` asks for it before the level is done); `unseen` answers a worker writing a run which
        of its candidates no earlier level visited."""
        count = len(self.conns)
        for w in range(count):
            self.send(w, ("expand",))
        reports: list[tuple] = [()] * count
        pending = count
        busy = set(range(count))  # workers expanding (the others wait for work or for the end of the level)
        idle: list[int] = []
        asked: dict[int, int] = {}  # a busy worker asked for work -> the idle worker that will take it
        dry: set[int] = set()  # workers that had too little left to give: not asked again this level
        while pending:
            for w in self._ready_any(stop):
                msg = self.recv(w)
                if msg[0] == "report":
                    reports[w] = msg
                    pending -= 1
                    continue
                if msg[0] == "unseen":
                    fps = msg[1]
                    self.send(w, ("unseen", unseen(fps) if unseen is not None else np.ones(fps.size, dtype=bool)))
                    continue
                if msg[0] == "idle":
                    busy.discard(w)
                    idle.append(w)
                elif msg[0] == "gift":
                    thief = asked.pop(w)
                    if msg[1]:
                        self.send(thief, ("take", msg[1]))
                        busy.add(thief)
                    else:
                        dry.add(w)
                        idle.append(thief)
                while idle:
                    victims = sorted(b for b in busy if b not in asked and b not in dry)
                    if not victims:
                        break
                    thief = idle.pop()
                    asked[victims[0]] = thief
                    self.send(victims[0], ("give",))
                if not busy and not asked and idle:  # every worker waits: the level is done
                    for v in idle:
                        self.send(v, ("finish",))
                    idle = []
        return reports

    def relay(self, giver: int, taker: int, stop: StopRequest | MemoryOnly | None = None) -> None:
        """Pass one batch of pickled states from one worker to another, as bytes (never unpickled here; Stopped
        if `stop` asks for it before the batch comes)."""
        self._ready(giver, stop)
        try:
            data = self.conns[giver].recv_bytes()
        except (EOFError, OSError):
            raise self._died(giver) from None
        try:
            self.conns[taker].send_bytes(data)
        except OSError:
            raise self._died(taker) from None

    def gather(self, give_up: Callable[[], bool] | None = None) -> dict[str, np.ndarray] | None:
        """The frontier's states, stored as a checkpoint keeps them (`stored_states`), from every worker's share
        of the level: asked for between levels, or in the middle of one for a stop (the workers then give the
        level up). None if the shares are not the frontier's positions once each (nothing is then stored);
        StatesLeftOut when `give_up` says so meanwhile."""
        self.ask_stored()
        return self.collect_stored(give_up)

    def ask_stored(self) -> None:
        """Ask every worker for its share's states (`gather`), to be read by `collect_stored`: a worker in the
        middle of a level gives it up, encodes its share and waits until the pipe takes it."""
        for w in range(len(self.conns)):
            self.send(w, ("store",))

    def collect_stored(self, give_up: Callable[[], bool] | None = None) -> dict[str, np.ndarray] | None:
        """The states `ask_stored` asked for, as `gather` gives them."""
        fits = True

        def stream(w: int) -> Iterator[tuple[int, bytes]]:
            nonlocal fits
            while True:
                msg = self.recv(w)
                if msg[0] != "stored":  # a message of the level given up, sent before the request came
                    continue
                if msg[1] is None:
                    fits = fits and msg[2]  # whether the worker sent its whole share
                    return
                yield from zip(msg[1], msg[2], strict=True)

        def in_order() -> Iterator[bytes]:
            # Every stream is read to its end whatever comes, so that no answer is left in a pipe for the next level.
            nonlocal fits
            for at, (pos, blob) in enumerate(heapq.merge(*(stream(w) for w in range(len(self.conns))),
                                                         key=lambda row: row[0])):
                fits = fits and pos == at
                if fits:
                    yield blob

        chunks = []
        for chunk in stored_states.chunks_of(in_order()):
            unless_left_out(give_up)
            chunks.append(chunk)
        return stored_states.arrays(chunks) if fits else None

    def close(self, grace: float = 10.0) -> None:
        """Tell every worker to stop and wait `grace` seconds for it (killed if it has not ended by then); once."""
        if self.closed:
            return
        self.closed = True
        for conn in self.conns:
            try:
                conn.send(("stop",))
            except OSError:  # that worker is gone already
                pass
        for proc in self.procs:
            proc.join(timeout=grace)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()


def plan_moves(counts: list[int]) -> list[tuple[int, int, int]]:
    """(giver, taker, count) handovers that bring the workers' shares of a level close to an even split."""
    total, n = sum(counts), len(counts)
    target = [total // n + (1 if w < total % n else 0) for w in range(n)]
    slack = max(MIN_MOVE, int(total * SLACK))
    if max(c - t for c, t in zip(counts, target, strict=True)) <= slack:
        return []
    surplus = [[w, c - t] for w, (c, t) in enumerate(zip(counts, target, strict=True)) if c > t]
    deficit = [[w, t - c] for w, (c, t) in enumerate(zip(counts, target, strict=True)) if c < t]
    moves = []
    while surplus and deficit:
        give, take = surplus[-1], deficit[-1]
        count = min(give[1], take[1])
        moves.append((give[0], take[0], count))
        give[1] -= count
        take[1] -= count
        if not give[1]:
            surplus.pop()
        if not take[1]:
            deficit.pop()
    return [m for m in moves if m[2] >= 1]


class SharedLevels:
    """The owner processes' levels: the frontier's states live in the workers, the visited set here."""

    STORES_STATES = True  # a checkpoint can store the frontier's states (gathered from the workers)

    def __init__(self, model: Any, workers: int, coverage: bool = False, spill: int | None = SPILL,
                 run_size: int | None = RUN, keep_at_halt: bool = False) -> None:
        self.model, self.workers, self.coverage = model, workers, coverage
        # A stop asks the workers for the frontier's states (`halt`), and its checkpoint reads them (`stored`).
        self.keep_at_halt = keep_at_halt
        self.asked = False  # the halt asked the workers for the states, and they are not read yet
        self.kept: dict[str, np.ndarray] | None = None
        self.halted = False
        # While the workers take their winners as their next shares, the level's own states are let go of: the
        # memory limit's stop then writes its checkpoint without states (a resume replays them).
        self.handing_over = False
        # Each worker keeps its share encoded past its part of the local engine's threshold (frontier.py), and
        # its level in work past as many candidates on disk, in runs of its part of the local engine's run size.
        self.spill = max(1, spill // workers) if spill is not None else 1 << 62
        self.run = max(1, run_size // workers) if run_size is not None and spill is not None else None
        self.pool: _Pool | None = None

    def begin(self, states: Iterable[Any]) -> Any:
        """Start the workers, each with every `workers`-th state of the first frontier (a list, or a resumed
        level's `Frontier`, read once in order: a big first level is handed over encoded)."""
        n = self.workers
        # The forked workers inherit these shares; an encoded one is all in memory (a temporary file's offset
        # would be shared by the processes), each worker's later levels spill on their own.
        encoded = len(states) > self.spill  # type: ignore[arg-type]
        shares = [Share((), encoded, StateCodec(MEMO), 1 << 62) for _ in range(n)]
        # Handed over a chunk's worth at a time: an encoded share seals its tail after each `extend` and opens it
        # again (decompressed) for the next, so one state per call cost a chunk's compression per state (a resumed
        # level of 150,014 states on `large`: more than 15 minutes before the workers started).
        batches: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
        for p, state in enumerate(states):
            batch = batches[p % n]
            batch.append((p, state))
            if len(batch) >= CHUNK:
                shares[p % n].extend(batch)
                batch.clear()
        for share, batch in zip(shares, batches, strict=True):
            share.extend(batch)
        self.pool = _Pool(self.model, shares, self.coverage, self.spill, self.run)
        return self  # the frontier is in the workers: what the loop holds of it is this, whose `stored` gathers it

    def stored(self, give_up: Callable[[], bool] | None = None) -> dict[str, np.ndarray] | None:
        """The frontier's states as a checkpoint stores them, from the workers (after a halt, those it asked for,
        the workers closed once they are read); None when they no longer hold them all; StatesLeftOut when
        `give_up` says so meanwhile."""
        pool = self.pool
        if self.halted:
            if self.asked and pool is not None:
                self.asked = False
                try:
                    self.kept = pool.collect_stored(give_up)
                except RuntimeError:
                    self.kept = None  # a worker died meanwhile: nothing is stored
                finally:
                    self.close(1.0)
            return self.kept
        return pool.gather(give_up) if pool is not None and self._holding(pool) else None

    def _holding(self, pool: _Pool) -> bool:
        """Whether the workers hold the frontier's states now, for a checkpoint to store."""
        return not pool.closed and not self.handing_over and stored_states.available()

    def halt(self) -> None:
        """Stop the workers at once, their level in work given up; for a checkpoint, ask them for the frontier's
        states first (read by `stored`, which then closes them; nothing is stored if a worker has died)."""
        pool = self.pool
        if self.keep_at_halt and pool is not None and self._holding(pool):
            try:
                pool.ask_stored()
                self.asked = True
            except RuntimeError:
                pass  # a worker died: nothing is stored
        self.halted = True
        if not self.asked:
            self.close(1.0)

    def close(self, grace: float = 10.0) -> None:
        """Stop the workers (if started), waiting `grace` seconds for each."""
        if self.pool is not None:
            self.pool.close(grace)

    def expand(self, frontier: Any, visited: Visited, found: Exploration, tick: Tick) -> Level:
        """One level across the workers: their candidates deduped here, the winners judged there."""
        pool = self.pool
        assert pool is not None
        reports = pool.expand(tick.stop, visited.unseen)  # Stopped: nothing of the level is recorded yet
        best: dict[str, tuple[int, int]] = {}
        goal_best: dict[str, tuple[int, int]] = {}
        for _, _, _, _, step_best, reached, transitions, goals, counted in reports:
            found.transitions += transitions
            found.reached.update(reached)
            for name, key in goals.items():
                least(goal_best, (name,), key)
            if counted is not None:
                found.tally.merge(counted)
            for name, key in step_best.items():
                least(best, (name,), key)
        fps = np.concatenate([r[1] for r in reports])
        parents = np.concatenate([r[2] for r in reports])
        actions = np.concatenate([r[3] for r in reports])
        who = np.concatenate([np.full(r[1].size, w, dtype=np.int64) for w, r in enumerate(reports)])
        index = np.concatenate([np.arange(r[1].size, dtype=np.int64) for r in reports])
        fresh = np.flatnonzero(visited.unseen(fps))
        # Fingerprint order, and within a fingerprint the least (parent, action) first: the canonical link.
        order = fresh[np.lexsort((actions[fresh], parents[fresh], fps[fresh]))]
        first = np.ones(order.size, dtype=bool)
        first[1:] = fps[order[1:]] != fps[order[:-1]]
        won = order[first]
        counts = [int(np.count_nonzero(who[won] == w)) for w in range(self.workers)]
        moves = plan_moves(counts)
        self.handing_over = True
        # The workers now judge their winners and hand states over: about a tenth of the level's time (7-10% on
        # `default`'s big levels). A signal's stop waits for it, so that the level is kept and its checkpoint
        # stores the states; the memory limit's does not (the level is given up, and the checkpoint replayed).
        urgent = MemoryOnly(tick.stop) if tick.stop is not None else None
        for w in range(self.workers):
            mine = np.flatnonzero(who[won] == w)
            pool.send(w, ("winners", index[won][mine], mine, found.reached,
                          [c for g, _, c in moves if g == w], sum(1 for _, t, _ in moves if t == w)))
        for w in range(self.workers):
            _, state_best, reached, goals = pool.recv(w, urgent)  # Stopped: the workers are stopped by `halt`
            found.reached.update(reached)
            for name, key in goals.items():
                least(goal_best, (name,), key)
            for name, key in state_best.items():
                least(best, (name,), key)
        for giver, taker, _ in moves:
            pool.relay(giver, taker, urgent)
        self.handing_over = False
        return Level(fps[won], parents[won], actions[won], self, best, goal_best)


def explore(model: Any, workers: int, max_states: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
            stop_at: Collection[str] | None = None, coverage: bool = False,
            stop: StopRequest | None = None, spill: int | None = SPILL,
            run_size: int | None = RUN) -> Exploration:
    """Explore the boundary with `workers` processes; the same result as `bfs.explore` (see the module), the
    coverage counts (`coverage`) included; `stop` cuts it short as it does `bfs.search`; `spill` as
    `bfs.explore`'s, shared out over the workers (None: every share a list of states); `run_size` as
    `bfs.search`'s, shared out too (None: each worker's level in work stays in memory, encoded)."""
    found = Exploration(f"local, {workers} workers")
    if coverage:
        from kcm.checkers.explore.tally import Tally

        found.tally = Tally()
    levels = SharedLevels(model, workers, coverage, spill, run_size, keep_at_halt=checkpoint is not None)
    grace = 10.0
    try:
        with no_collections():
            run(model, found, levels, max_states, progress, checkpoint, resume, stop_at=stop_at, stop=stop)
    finally:
        if stop is not None and stop.reason is not None:
            grace = 1.0  # the checkpoint has what it needs of the workers: a level in work is not waited for
        levels.close(grace)
    return found
