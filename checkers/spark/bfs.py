"""The Spark engine: breadth-first search with delayed duplicate detection in Spark SQL.

Nothing of the search lives in a Python process between levels. The visited set is a DataFrame of
`(fp, parent, aidx)` int64/int32 rows held by the JVM, hash-partitioned by fingerprint; the frontier is a
DataFrame `(fp, pkey, aidx, state)` whose states travel as the model's compact bytes. One level:

1. `mapInArrow` expands the frontier in the Python workers: each state's own properties are checked (every
   frontier state is new, so exactly once), then its successors are computed and their step properties checked.
   A batch sends each successor fingerprint once (its least parent), and one summary row of counters and the
   least witness of each property it saw violated. States travel part by part (`explore/codec.py`).
2. In the JVM the successors are shuffled, sorted and reduced to one row per fingerprint (the least
   `(pkey, aidx)`: the parent first in fingerprint order, then the first action, which is the local engine's
   first discovery), and a `left_anti` join against the visited set drops the ones seen before. What is left
   is the next frontier; its parent links join the visited set.

Fingerprints are unsigned 64-bit numbers; Spark's long is signed, so a fingerprint `u` is stored as the long
with the same bits, and ordered by `pkey = u - 2^63` (signed order of that key is the unsigned order of `u`).
So every choice the local engine makes by position in a fingerprint-sorted level is made here by `pkey`, and the
counts, depth, verdicts and counterexamples (the first found in that order, at the least depth) are the local
engine's. Counterexamples are rebuilt by following parent links in the visited DataFrame, one small query per
step back.

Small levels run in the driver (`host_below`): the same expander, called on one Arrow batch, and the same
reduction to the least link per fingerprint, against the visited fingerprints (a sorted array). The first levels
are expanded there while the Python workers start in the background; the search moves to Spark when a level
outgrows the bound, and back to the driver (bringing the visited fingerprints over once) when the levels thin
out after the widest. A level costs the same wherever it runs, in counts and in choices, so the results are
those of an all-Spark run. Checkpoints are the local engine's files (`spark_checkpoint`), so each engine resumes
the other's.

The level loop (bounds, stop requests, checkpoints, witnesses, progress) is `level_loop.run`'s: `_Search` is its
engine and its visited set. A level's new frontier on Spark is counted by its own expansion (its summaries),
unless a checkpoint, a bound or the end needs the number earlier.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from kcm.checkers.explore import stored_states
from kcm.checkers.explore.batches import batched
from kcm.checkers.explore.checkpoint import Checkpointer, Snapshot
from kcm.checkers.explore.codec import CODEC
from kcm.checkers.explore.level_loop import (
    Level,
    ProgressFn,
    Start,
    Stopped,
    Tick,
    Witness,
    restore_counters,
    run,
    unreached,
)
from kcm.checkers.explore.stopping import StatesLeftOut, StopRequest
from kcm.checkers.explore.verdicts import Exploration
from kcm.checkers.explore.visited import FP, LEVEL, MAX_LEVEL, FingerprintSet
from kcm.checkers.spark.checkpoint import NO_PARENT, Links, rows_of
from kcm.checkers.spark.expand import NAMES, order_key, to_long
from kcm.checkers.spark.session import DEFAULT_MEMORY, spark_session
from kcm.model.interface import STATE_KINDS, STEP_KINDS
from pyspark.accumulators import AccumulatorParam

__all__ = ["DEFAULT_MEMORY", "explore", "spark_session", "LevelTiming"]

FRONTIER = "fp long, pkey long, aidx int, parent long, state binary"
VISITED = "fp long, parent long, aidx int"
COMPACT_EVERY = 4  # levels whose parent links stay views of the levels' own blocks before being copied slim
# Levels of at most this many states run in the driver: a Spark level costs about 0.3 s of job latency however
# small it is, and the driver expands about 3,000 states per second (see docs/spark-scale-out.md).
HOST_BELOW = 2000
RESUME_PIECE = 65_536  # rows of a big resumed frontier handed to the JVM at a time (about 80 MB on `large`)
WATCH = 0.25  # seconds between two looks at a stop request while a level runs on Spark
WARM_UP = "kcm-warm-up"  # the job group of the job that starts the Python workers early
WARM_LEVEL = -(1 << 40)  # the level number of its summaries, which nothing reads


@dataclass
class LevelTiming:
    """One level's figures, for the benchmark: states visited before it, its frontier, its seconds."""

    level: int
    visited: int
    frontier: int
    seconds: float
    expand_seconds: float  # the job that ran the Python expansion
    dedupe_seconds: float  # the jobs in the JVM: reduce, anti-join, visited update, counts
    where: str = "spark"  # "driver" for a level expanded in the driver


class _Summaries(AccumulatorParam):
    """Expansion summaries gathered by a Spark accumulator, keyed by (level, partition).

    A task run again (a retry, or a stage recomputed) sends the same summary under the same key, so the driver
    counts each partition's expansion once whatever Spark re-runs.
    """

    def zero(self, value: dict) -> dict:
        """An empty map."""
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - Spark's name
        """Merge two maps of summaries."""
        a.update(b)
        return a


def expander(model: Any, level: int, sink: Any, successors: bool = True, search: str = "",
             reached: Collection[str] = (), coverage: bool = False) -> Any:
    """The function mapInArrow runs on the frontier: `spark_expand.expansion` of the task's batches.

    It checks and (unless `successors` is off) expands each state, sends its successors and adds the partition's
    summary to the accumulator `sink`; `search` names the search whose kept model the workers expand with. Goals
    already `reached` are not judged again (as in the local engine: judging them changes nothing). `coverage`:
    each task's summary also holds its coverage counts.
    """
    state_props, step_props = _properties(model, STATE_KINDS, reached), _properties(model, STEP_KINDS, reached)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from kcm.checkers.spark import (
            expand as spark_expand,  # the process's own (a global would travel with the closure)
        )
        from pyspark import TaskContext

        task = TaskContext.get()  # None in the driver, which expands the small levels itself
        part = task.partitionId() if task is not None else 0
        yield from spark_expand.expansion(model, level, part, sink, successors, search, state_props, step_props,
                                          batches, coverage)

    return run


class _HostSink:
    """The accumulator's stand-in for levels expanded in the driver: the same summaries, kept in a dict."""

    def __init__(self) -> None:
        self.value: dict = {}

    def add(self, item: dict) -> None:
        """Merge a map of summaries (what the expander sends)."""
        self.value.update(item)


def _as_fps(longs: Any) -> np.ndarray:
    """Fingerprints stored as Spark longs, as the unsigned fingerprints with the same bits (see `to_long`)."""
    return np.asarray(longs, dtype=np.int64).view(FP)


class _Search:
    """One search on Spark: the level loop's engine (`level_loop.Lazy`) and its visited set (`level_loop.Books`).

    The visited set is the union of the slim pieces and newest levels in the JVM and of `host`, the rows of the
    levels run in the driver since the last hand-over. While levels run in the driver, `seen` holds every visited
    fingerprint (the JVM's collected once when the search came back to the driver). A level's new frontier on
    Spark is left uncounted: its expansion counts it (see `summaries`), unless the loop needs the number first.
    """

    LAZY = True  # the visited set and the frontier's size are this engine's (see `level_loop.run`)
    STORES_STATES = True  # a checkpoint can store the frontier's states (`write`)
    visited = None  # no visited set in this process for the loop to hand back

    def __init__(self, model: Any, spark: Any, found: Exploration, parts: int, compact_every: int,
                 coverage: bool = False, stop_at: Collection[str] | None = None, host_below: int = HOST_BELOW,
                 stop: StopRequest | None = None) -> None:
        self.model = model
        self.coverage = coverage
        self.spark = spark
        self.parts = parts
        self.compact_every = compact_every
        self.found = found
        self.stop_at = set(stop_at or ())
        self.host_below = host_below
        self.stop = stop
        self.watch: _Watch | None = None  # cancels a Spark level's job for a stop request
        self.sink = spark.sparkContext.accumulator({}, _Summaries())
        self.host_sink = _HostSink()
        self.known: set[str] = set()  # the properties with a witness: they no longer end the search
        self.depth = 0  # the level of the frontier
        self.sizes: list[int] = []  # the size of each level counted so far (where the next level runs)
        self.counted = True  # whether the frontier's size is in `sizes`
        self.timings: list[LevelTiming] = []
        self.pieces: list[Any] = []  # slim (fp, parent, aidx) pieces, each hash-partitioned by fp
        self.recent: list[Any] = []  # the newest levels' own blocks (states included) until compacted
        self.host: list[tuple[int, int, int]] = []  # (fp, parent, aidx) rows visited in the driver, not in the JVM
        self.seen: FingerprintSet | None = None  # every visited fp, while levels run in the driver
        self.warming: Any = None  # the warm-up job's thread while it runs
        self.search = uuid.uuid4().hex  # names this search's model in the Python workers (explore/codec.kept_model)
        # A frontier judged on the pass that stored its states for the checkpoint that follows, and those states.
        self.encoded: tuple[Any, dict[str, np.ndarray]] | None = None
        self.written: Links | None = None  # the parent links the last checkpoint read, until a level joins

    # -- the JVM's side --------------------------------------------------------------------------------------

    def checkpointed(self, df: Any) -> Any:
        """`df` computed now and kept by the JVM with its lineage cut, so that later levels never recompute it."""
        return df.localCheckpoint(eager=True)

    def release(self, df: Any, wait: bool = False) -> None:
        """Free the blocks of a DataFrame made by `checkpointed` (Spark frees them late otherwise); `wait`: until
        they are gone."""
        try:
            df._jdf.queryExecution().logical().rdd().unpersist(wait)
        except Exception:  # noqa: BLE001 - only a memory hint; Spark's cleaner frees the blocks eventually
            pass

    def mapped(self, frontier: Any, level: int, successors: bool = True) -> Any:
        """The level's successors (not yet deduplicated), as a lazy DataFrame."""
        return frontier.mapInArrow(expander(self.model, level, self.sink, successors, self.search,
                                            self.found.reached, self.coverage), FRONTIER)

    def jvm_visited(self) -> Any | None:
        """The JVM's part of the visited set as one DataFrame (None while it holds nothing)."""
        return _union(self.pieces + self.recent) if self.pieces or self.recent else None

    def spark_level(self, frontier: Any, level: int, visited: Any | None = None) -> Any:
        """Level `level` expanded on Spark: its new states (deduplicated, not in the visited set), computed."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        # The least (pkey, aidx) per fingerprint, by one sort after the shuffle: an aggregate would also sort every
        # row, state bytes included, before it (its partial step), to drop the few duplicates the batches left.
        least = Window.partitionBy("fp").orderBy("pkey", "aidx")
        best = self.mapped(frontier, level).withColumn("rank", F.row_number().over(least)).filter("rank = 1")
        visited = self.jvm_visited() if visited is None else visited
        if visited is not None:
            best = best.join(visited, "fp", "left_anti")
        return self.checkpointed(best.select(*NAMES))

    def keep(self, fresh: Any) -> None:
        """A Spark level's new states join the visited set; every few levels the newest are copied slim."""
        self.recent.append(fresh)
        if len(self.recent) > self.compact_every:
            newest = self.recent.pop()
            self.pieces.append(self.checkpointed(_union(self.recent)))
            for df in self.recent:
                self.release(df)
            self.recent = [newest]

    def warm_up(self, frontier: list[tuple]) -> None:
        """Start the Python workers and compile a level's plans in the background while the driver runs levels.

        A first Spark level otherwise pays some seconds for both; here they overlap the driver's own levels. The
        job expands the first initial state under a level number no summary is read for, and is cancelled if
        the search ends before it does.
        """
        from pyspark import InheritableThread

        sc = self.spark.sparkContext

        def job() -> None:
            try:
                sc.setJobGroup(WARM_UP, "kcm: Python workers started ahead of the first Spark level", True)
                one = list(zip(*frontier[:1], strict=True))
                tiny = self._frame(one, FRONTIER)
                self.release(self.spark_level(tiny, WARM_LEVEL, tiny.select("fp", "parent", "aidx")))
            except Exception:  # noqa: BLE001 - cancelled, or the first real level will report what failed
                pass

        self.warming = InheritableThread(target=job, daemon=True)
        self.warming.start()

    def warmed(self, cancel: bool = False) -> None:
        """Wait for the warm-up job to end (cancelling it first if `cancel`)."""
        if self.warming is None:
            return
        if cancel:  # its Python workers may still be starting: the job ends in the background, unwaited for
            self.spark.sparkContext.cancelJobGroup(WARM_UP)
        else:
            self.warming.join()
        self.warming = None

    # -- the driver's side -----------------------------------------------------------------------------------

    def seed(self) -> list[tuple]:
        """The initial states as the first level, held in the driver."""
        roots: dict[int, int] = {}
        blobs: dict[int, bytes] = {}
        for i, s in enumerate(self.model.init_states()):
            fp = to_long(self.model.fingerprint(s))
            if fp not in roots:
                roots[fp], blobs[fp] = i, CODEC.encode(s)
        self.host = [(fp, NO_PARENT, i) for fp, i in roots.items()]
        self.seen = FingerprintSet(_as_fps(list(roots)))
        return [(fp, order_key(fp), i, NO_PARENT, blobs[fp]) for fp, i in roots.items()]

    def resumed(self, snapshot: Snapshot) -> tuple[Any, Start]:
        """The frontier of a checkpoint (any engine's) and where the search starts: its rows held in the driver
        when the next level runs there, else a DataFrame (the visited rows in the JVM too)."""
        got = rows_of(self.model, snapshot)
        meta = got.meta
        paths = restore_counters(self.found, meta, str(snapshot.path))
        start = Start(None, [], [], paths, meta["depth"], list(meta["sizes"]), meta["expanded"], meta["seconds"])
        rows = ((fp, order_key(fp if parent == NO_PARENT else parent), aidx, parent, CODEC.encode(state))
                for fp, parent, aidx, state in got.frontier)
        if meta["sizes"][-1] <= self.host_below:
            self.host = list(zip(got.fps.tolist(), got.parents.tolist(), got.aidxs.tolist(), strict=True))
            self.seen = FingerprintSet(_as_fps(got.fps))
            return list(rows), start
        # A frontier too big for the driver's levels goes to the JVM as it is decoded, a piece at a time: held
        # whole in the driver (its rows as Python objects, then their Arrow copy) a resume of `large`'s level 8
        # took 11.1 GB there.
        self.pieces.append(self.checkpointed(self._frame([got.fps, got.parents, got.aidxs], VISITED)))
        del got
        pieces = [self.checkpointed(self.spark.createDataFrame(_table(list(zip(*batch, strict=True)), FRONTIER)))
                  for batch in batched(rows, RESUME_PIECE)]
        frontier = self.checkpointed(_union(pieces, tuple(NAMES)).repartition(self.parts, "fp"))
        for piece in pieces:
            self.release(piece)
        return frontier, start

    def host_level(self, frontier: list[tuple], level: int, successors: bool = True) -> list[tuple]:
        """Level `level` expanded in the driver by the workers' own expander: its new states, least link each."""
        import pyarrow as pa

        cols = list(zip(*frontier, strict=True))
        batch = pa.RecordBatch.from_arrays([
            pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.int64()), pa.array(cols[2], pa.int32()),
            pa.array(cols[3], pa.int64()), pa.array(cols[4], pa.binary())], names=NAMES)
        best: dict[int, tuple] = {}
        for out in expander(self.model, level, self.host_sink, successors, reached=self.found.reached,
                            coverage=self.coverage)(iter([batch])):
            for row in zip(*(c.to_pylist() for c in out.columns), strict=True):
                old = best.get(row[0])
                if old is None or (row[1], row[2]) < (old[1], old[2]):
                    best[row[0]] = row
        if best and self.seen is not None:
            fps = np.fromiter(best, dtype=np.int64, count=len(best))
            for fp in fps[~self.seen.unseen(fps.view(FP))].tolist():
                del best[fp]
        return sorted(best.values(), key=lambda r: r[1:3])

    def host_keep(self, fresh: list[tuple]) -> None:
        """A driver level's new states join the visited set."""
        assert self.seen is not None
        self.host.extend((fp, parent, aidx) for fp, _, aidx, parent, _ in fresh)
        self.seen.add(_as_fps([r[0] for r in fresh]))

    def host_bytes(self) -> int:
        """Bytes of the visited rows the driver holds (Python tuples of three ints) and of its fingerprint set."""
        rows = sum(sys.getsizeof(r) + sum(sys.getsizeof(x) for x in r) for r in self.host)
        return rows + (self.seen.nbytes() if self.seen is not None else 0)

    def to_jvm(self, frontier: list[tuple]) -> Any:
        """Hand the driver's rows and its frontier to the JVM: the levels from here on run on Spark."""
        self.warmed()
        if self.host:
            self.pieces.append(self.checkpointed(self._frame(list(zip(*self.host, strict=True)), VISITED)))
        self.host, self.seen = [], None
        return self.checkpointed(self._frame(list(zip(*frontier, strict=True)), FRONTIER))

    def pull(self, frontier: Any, limit: int) -> list[tuple]:
        """The rows of a frontier held in the JVM brought to the driver, at most `limit` of them."""
        table = frontier.select(*NAMES).limit(limit).toArrow()
        return list(zip(*(table.column(i).to_pylist() for i in range(len(NAMES))), strict=True))

    def to_host(self) -> None:
        """The levels from here on run in the driver: every visited fingerprint is brought over for the dedupe."""
        visited = self.jvm_visited()
        self.seen = FingerprintSet(() if visited is None else
                                   _as_fps(visited.select("fp").toArrow().column(0).to_numpy()))
        self.host = []

    def _frame(self, columns: list[Any], schema: str) -> Any:
        """Rows (given column by column) as a DataFrame hash-partitioned by fp, passed to the JVM through Arrow."""
        return self.spark.createDataFrame(_table(columns, schema)).repartition(self.parts, "fp")

    # -- both ------------------------------------------------------------------------------------------------

    def summaries(self, level: int, ending: bool = False) -> tuple[int, dict[str, _Mark], dict[str, _Mark], bool]:
        """Fold the summaries of `level`'s expansion into the counters: the number of states expanded, the least
        link of each property first broken and each goal first reached there, and whether the search ends.

        It ends (with `ending`) when a state of this level breaks a property of `stop_at`: the local engine, which
        checks a state when it first meets it, would have stopped before expanding this level, so only what the
        states themselves showed is kept. A property's witness among the states comes before one among the steps.
        """
        got = dict(self.sink.value)
        got.update(self.host_sink.value)
        mine = sorted(k for k in got if k[0] == level)
        step_best: dict[str, tuple[list[int], list[int]]] = {}
        state_best: dict[str, tuple[list[int], list[int]]] = {}
        state_goal: dict[str, tuple[list[int], list[int]]] = {}
        step_goal: dict[str, tuple[list[int], list[int]]] = {}
        count = transitions = 0
        reached: set[str] = set()
        reached_step: set[str] = set()
        counted: list[dict] = []
        for key in mine:
            s = json.loads(got[key])
            count += s["expanded"]
            transitions += s["transitions"]
            reached.update(s["reached"])
            reached_step.update(s["reached_step"])
            if "coverage" in s:
                counted.append(s["coverage"])
            for best, seen in ((state_best, s["state_bad"]), (step_best, s["step_bad"]),
                               (state_goal, s["state_goal"]), (step_goal, s["step_goal"])):
                for name, (order, payload) in seen.items():
                    if name not in best or order < best[name][0]:
                        best[name] = (order, payload)
        ended = ending and bool((self.stop_at - self.known) & set(state_best))
        had = set(self.found.reached)
        self.found.reached.update(reached)
        bad = {name: _Mark(fp, -1) for name, (_, (fp,)) in state_best.items() if name not in self.known}
        goals = {name: _Mark(fp, -1) for name, (_, (fp,)) in state_goal.items() if name not in had}
        if not ended:
            self.found.transitions += transitions
            if self.found.tally is not None:
                for c in counted:
                    self.found.tally.merge(c)
            self.found.reached.update(reached_step)
            for name, (_, (fp, action)) in step_best.items():
                if name not in self.known:
                    bad.setdefault(name, _Mark(fp, action))
            for name, (_, (fp, action)) in step_goal.items():
                if name not in had:
                    goals.setdefault(name, _Mark(fp, action))
        self.known.update(bad)
        return count, bad, goals, ended

    # -- the level loop's engine (`level_loop.Lazy`) -------------------------------------------------------------

    def opening(self, found: Exploration, resume: Snapshot | None) -> tuple[_Search, list[tuple], Start]:
        """The first frontier, held in the driver (the initial states, or a checkpoint's), and where it starts."""
        if resume is None:
            frontier = self.seed()
            start = Start(None, [], [], {}, 0, [len(frontier)], 0, 0.0)
        else:
            frontier, start = self.resumed(resume)
        self.depth, self.sizes, self.known = start.depth, list(start.sizes), set(start.witnesses)
        if isinstance(frontier, list) and self.host_below and len(frontier) <= self.host_below:
            self.warm_up(frontier)
        return self, frontier, start

    def _counted(self, n: int) -> None:
        """The frontier's size is known now."""
        self.counted = True
        if n:
            self.sizes.append(n)

    def count(self, frontier: Any) -> int:
        """The frontier's size, counted now (a checkpoint, a bound or the end needs it)."""
        n = len(frontier) if isinstance(frontier, list) else frontier.count()
        self._counted(n)
        return n

    def judge(self, frontier: Any, storing: bool = False) -> tuple[dict[str, _Mark], dict[str, _Mark]]:
        """Check the frontier's own properties now (before a checkpoint, or at an early end): what they break and
        reach. The local engine checks a state when it first meets it, so its checkpoints hold the verdicts of the
        frontier's states; this makes the Spark engine's do too. Their expansion checks them again, harmlessly.
        `storing` (a checkpoint storing the states follows): a frontier on Spark is judged on the pass that
        encodes its states for the checkpoint (`stored`), each state decoded once for both."""
        key = -1 - self.depth  # summaries kept apart from the level's own
        self.encoded = None
        if isinstance(frontier, list):
            self.host_level(frontier, key, successors=False)
        elif storing and stored_states.available() and self.depth <= MAX_LEVEL:
            self.encoded = (frontier, self.encode(frontier, key))
        else:
            self.mapped(frontier, key, successors=False).count()
        _, bad, goals, _ = self.summaries(key)
        return bad, goals

    def place(self, frontier: Any) -> Any:
        """Where the next level runs: in the driver while levels are small (no job latency), else on Spark; the
        search comes back to the driver when the levels thin out after the widest. None: the frontier is empty."""
        if isinstance(frontier, list):
            return self.to_jvm(frontier) if len(frontier) > self.host_below else frontier
        sizes, bound = self.sizes, self.host_below
        # When the frontier's own size is not known yet, the level before it tells whether it may be small: at
        # most host_below + 1 rows come over to find out.
        if len(sizes) > 1 and sizes[-1] < sizes[-2] and sizes[-1] <= (bound if self.counted else 4 * bound):
            rows = self.pull(frontier, bound + 1)
            if len(rows) <= bound:  # the whole frontier
                if not self.counted:
                    self._counted(len(rows))
                    if not rows:
                        return None
                self.to_host()
                return rows
        return frontier

    def expand(self, frontier: Any, visited: Any, found: Exploration, tick: Tick) -> Level:
        """Expand the frontier (its states checked on the way) in the driver or on Spark: the new frontier, left
        uncounted on Spark, and what the level broke and reached; Stopped if a stop request cancelled its job."""
        began = time.perf_counter()
        level = self.depth
        frontier = self.place(frontier)
        if frontier is None:
            return Level(_NONE, _NONE, _NONE, [], size=0, expanded=0)
        on_host = isinstance(frontier, list)
        if on_host:
            fresh = self.host_level(frontier, level)
        elif self.watch is None:
            fresh = self.spark_level(frontier, level)
        else:
            try:
                with self.watch.level(f"kcm-level-{self.search}-{level}"):
                    fresh = self.spark_level(frontier, level)
            except Exception:
                if self.stop is None or self.stop.reason is None:
                    raise
                raise Stopped from None  # the level's job was cancelled: nothing of it is kept
        count, bad, goals, ended = self.summaries(level, ending=True)
        mid = time.perf_counter()
        if not self.counted:
            self._counted(count)
        if ended or not count:  # the search ends before expanding this level, or the frontier was empty
            if not on_host:
                self.release(fresh)
            return Level(_NONE, _NONE, _NONE, frontier, bad, goals, size=0, expanded=count, ended=ended)
        prior = sum(self.sizes[:level])
        self.depth += 1
        self.counted = False
        size = None
        if on_host:
            size = len(fresh)
            self._counted(size)
        done = time.perf_counter()
        self.timings.append(LevelTiming(level, prior, count, done - began, mid - began, done - mid,
                                        "driver" if on_host else "spark"))
        return Level(_NONE, _NONE, _NONE, fresh, bad, goals, size=size, expanded=count)

    def halt(self) -> None:
        """A stop request: the level's job is already cancelled, and the warm-up is let go at the end."""

    # -- the level loop's visited set (`level_loop.Books`) -----------------------------------------------------

    def add(self, level: Level) -> None:
        """A level's new states join the visited set: the driver's rows, or the JVM's pieces."""
        self.written = None  # the links read for the last checkpoint are out of date, and need not be held
        if isinstance(level.frontier, list):
            self.host_keep(level.frontier)
        else:
            self.keep(level.frontier)

    def mark(self, depth: int, link: _Mark) -> _Mark:
        """A witness stays a state's fingerprint (and the action from it) until its path is needed."""
        return link

    def _links(self) -> Links:
        """Every visited row in the driver, as parent links."""
        fps, parents, aidxs = [], [], []
        if self.host:
            host = np.array(self.host, dtype=np.int64).reshape(-1, 3)
            fps.append(host[:, 0])
            parents.append(host[:, 1])
            aidxs.append(host[:, 2])
        visited = self.jvm_visited()
        if visited is not None:
            table = visited.select("fp", "parent", "aidx").toArrow()
            for out, i in ((fps, 0), (parents, 1), (aidxs, 2)):
                out.append(table.column(i).to_numpy().astype(np.int64))
        return Links.of(np.concatenate(fps), np.concatenate(parents), np.concatenate(aidxs))

    def write(self, checkpoint: Checkpointer, depth: int, width: int, witnesses: dict[str, Any],
              meta: Callable[[dict[str, Witness]], dict[str, Any]], states: Any = None,
              give_up: Callable[[], bool] | None = None) -> None:
        """Write the search so far in the local engine's checkpoint format (`spark_checkpoint`); with `states`
        (the frontier, rows in the driver or a DataFrame) its states and each visited state's level stored too,
        so a resume on any engine need not replay, unless `give_up` says so meanwhile (StatesLeftOut)."""
        if self.written is None:
            self.written = self._links()  # a stop writes a level twice: its links are read once
        links = self.written
        if links.depth() != depth or links.sizes()[-1] != width:
            raise RuntimeError(f"the visited set has depth {links.depth()}, the search {depth}")
        paths = {}
        for name, w in witnesses.items():
            if isinstance(w, _Mark):
                root, steps = links.path(w.fp)
                w = (root, steps + ([w.extra] if w.extra >= 0 else []))
            paths[name] = w
        wanted = states is not None and depth <= MAX_LEVEL
        checkpoint.write(links.visited(), links.fps[links.level == depth].tolist(), meta(paths),
                         (lambda: {**self.stored(states, give_up), "levels": links.level.astype(LEVEL)})
                         if wanted else None, give_up)

    def stored(self, frontier: Any, give_up: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
        """The frontier's states as a checkpoint stores them (`stored_states.pack`), in fingerprint order: encoded
        in the driver when it holds them, else by the Spark workers a range of fingerprints each (on the pass that
        judged them, when `judge` was told a checkpoint would store them); StatesLeftOut when `give_up` says so
        meanwhile (the Spark job is cancelled)."""
        if isinstance(frontier, list):
            rows = sorted(frontier, key=lambda r: order_key(r[0]))
            return stored_states.pack((CODEC.decode(r[4]) for r in rows), give_up)
        done, self.encoded = self.encoded, None
        if done is not None and done[0] is frontier:
            return done[1]
        if give_up is None or self.watch is None:
            return self.encode(frontier, None)
        try:
            with self.watch.level(f"kcm-store-{self.search}-{self.depth}", give_up):
                return self.encode(frontier, None)
        except Exception:
            if give_up():
                raise StatesLeftOut from None
            raise

    def encode(self, frontier: Any, key: int | None) -> dict[str, np.ndarray]:
        """A frontier on Spark as stored states, each Spark worker encoding a range of fingerprints; with `key`,
        each state is judged on the way, the summaries under that key (as `judge` reads them)."""
        from pyspark.sql import functions as F

        # XOR with the sign bit: the signed order of the result is the fingerprints' unsigned order.
        ukey = F.col("fp").bitwiseXOR(F.lit(-(1 << 63)))
        ranged = (frontier.select(*NAMES).withColumn("ukey", ukey)
                  .repartitionByRange(self.parts, "ukey").sortWithinPartitions("ukey").select(*NAMES))
        got = ranged.mapInArrow(storer(self.model, key, self.sink, self.search, self.found.reached),
                                "part int, seq int, chunk binary").toArrow()
        order = sorted(zip(got.column("part").to_pylist(), got.column("seq").to_pylist(),
                           got.column("chunk").to_pylist(), strict=True))
        return stored_states.arrays([c for _, _, c in order])

    def paths(self, witnesses: dict[str, Any]) -> dict[str, Witness]:
        """Each witness's path: parent links followed back, every witness at once, one query per step."""
        from pyspark.sql import functions as F

        host = {fp: (parent, aidx) for fp, parent, aidx in self.host}
        visited = self.jvm_visited()
        out = {name: w for name, w in witnesses.items() if not isinstance(w, _Mark)}
        paths = {name: (w.fp, [] if w.extra < 0 else [w.extra])
                 for name, w in witnesses.items() if isinstance(w, _Mark)}
        roots: dict[str, int] = {}
        while len(roots) < len(paths):
            wanted = sorted({fp for name, (fp, _) in paths.items() if name not in roots})
            links = {fp: host[fp] for fp in wanted if fp in host}
            rest = [fp for fp in wanted if fp not in links]
            if rest and visited is not None:
                links.update({r[0]: (r[1], r[2]) for r in visited.filter(F.col("fp").isin(rest)).collect()})
            for name, (fp, steps) in list(paths.items()):
                if name in roots:
                    continue
                parent, aidx = links[fp]
                if parent == NO_PARENT:
                    roots[name] = aidx
                else:
                    paths[name] = (parent, [aidx] + steps)
        out.update({name: (roots[name], steps) for name, (_, steps) in paths.items()})
        return out

    def nbytes(self) -> int:
        """Bytes of the blocks the JVM holds and of the driver's rows."""
        return _held_bytes(self.spark) + self.host_bytes()


class _Mark(NamedTuple):
    """A witness as the Spark engine keeps it: the state's fingerprint (a long), the action from it or -1."""

    fp: int
    extra: int


_NONE = np.empty(0, dtype=FP)  # the fingerprints a Spark level hands the loop: none, the visited set is the JVM's


def explore(model: Any, spark: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            partitions: int | None = None, checkpoint: Checkpointer | None = None,
            resume: Snapshot | None = None, timings: list[LevelTiming] | None = None,
            compact_every: int = COMPACT_EVERY, stop_at: Collection[str] | None = None,
            host_below: int = HOST_BELOW, coverage: bool = False, stop: StopRequest | None = None) -> Exploration:
    """Explore every state reachable inside the boundary on Spark, checking every property of the model.

    The level loop is `level_loop.run`'s, so `stop_at`, `max_states`, `checkpoint` (the local engine's format),
    `resume` (a checkpoint of any engine) and `stop` (a signal, the memory limit: the level's Spark job in work is
    cancelled) mean what they mean there. Levels of at most `host_below` states run in the driver (0: every level
    on Spark). `coverage` counts the transitions taken into `found.tally` (`explore/coverage.py`), task by task;
    `timings` receives each level's figures.
    """
    sc = spark.sparkContext
    parts = partitions or max(1, sc.defaultParallelism)
    _tune(spark, parts)
    found = Exploration(f"spark {sc.master}")
    if coverage:
        from kcm.checkers.explore.tally import Tally

        found.tally = Tally()
    search = _Search(model, spark, found, parts, compact_every, coverage, stop_at, host_below, stop)
    if stop is not None:
        search.watch = _Watch(sc, stop)
    run(model, found, search, max_states, progress, checkpoint, resume, stop_at=stop_at, stop=stop)
    if search.watch is not None:
        search.watch.close()
    search.warmed(cancel=True)  # a search that ended in the driver needs no workers
    gc.unfreeze()  # what the driver's expansions froze can be collected again
    # The last frees wait: a session stopped while a removal is still under way has Spark print a
    # RejectedExecutionException's stack for each (seen when a stopped run of `large` ended).
    for df in search.pieces + search.recent:
        search.release(df, wait=True)
    if timings is not None:
        timings.extend(search.timings)
    return found


class _Watch:
    """A thread that looks at the stop request while the driver waits for Spark, and cancels the job of the level
    in work when it is set (the level's other jobs, and the checkpoint's, are left to finish)."""

    def __init__(self, sc: Any, stop: StopRequest) -> None:
        self.sc, self.stop = sc, stop
        self.group: str | None = None  # the job group that may be cancelled now
        self.cancel: Callable[[], bool] | None = None  # when to cancel it (None: on the stop request)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="kcm-stop-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(WATCH):
            stopping = self.stop.poll()
            with self.lock:
                if self.group is not None and (stopping if self.cancel is None else self.cancel()):
                    # Again at every look while the level lasts: its job may not be submitted yet (the plan and
                    # the expander's closure are prepared in the driver first).
                    try:
                        self.sc.cancelJobGroup(self.group)
                    except Exception:  # noqa: BLE001 - the JVM is going: the main thread sees that itself
                        pass

    @contextmanager
    def level(self, group: str, cancel: Callable[[], bool] | None = None) -> Iterator[None]:
        """The jobs run in this block form `group`, which a stop request cancels (or `cancel`, when given: a
        stop's storing of the frontier's states, which a second signal cancels)."""
        self.sc.setJobGroup(group, "kcm: a level's expansion", True)
        with self.lock:
            self.group, self.cancel = group, cancel
        try:
            yield
        finally:
            with self.lock:
                self.group, self.cancel = None, None
            # Later jobs in a group of their own: a cancellation posted late cannot reach them.
            self.sc.setJobGroup(f"{group}-kept", "kcm: a level's bookkeeping", False)

    def close(self) -> None:
        """Stop watching."""
        self.done.set()
        self.thread.join()


def _properties(model: Any, kinds: Collection[str], reached: Collection[str]) -> list[Any]:
    """The model's properties of these kinds that a task judges: goals already `reached` are left out."""
    return unreached([p for p in model.properties() if p.expectation in kinds], reached)


def storer(model: Any, key: int | None, sink: Any, search: str, reached: Collection[str]) -> Any:
    """The function mapInArrow runs on a range of the frontier's rows (in fingerprint order): its states as
    `stored_states` chunks (part, seq, bytes); with `key`, each state judged on the way as the expansion judges it
    (`spark_expand.judged_states`), the task's summary to `sink` under (key, part)."""
    state_props = _properties(model, STATE_KINDS, reached)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from kcm.checkers.explore import codec as codecs
        from kcm.checkers.explore import stored_states as stored
        from kcm.checkers.explore.collector import no_collections
        from kcm.checkers.spark import expand as spark_expand
        from pyspark import TaskContext

        task = TaskContext.get()
        part = task.partitionId() if task is not None else 0
        if key is None:
            decode = codecs.CODEC.decode
            states = (decode(blob) for batch in batches for blob in batch.column(4).to_pylist())
        else:
            states = spark_expand.judged_states(model, key, part, sink, search, state_props, batches)
        # As the expansion runs: the decoded states and their encodings are acyclic, and with the collector on,
        # its scans revisited every state a chunk holds (measured on `large`'s states: 195 us a state, 68 off).
        with no_collections():
            for seq, chunk in enumerate(stored.encode_chunks(states)):
                yield pa.RecordBatch.from_arrays([pa.array([part], pa.int32()), pa.array([seq], pa.int32()),
                                                  pa.array([chunk], pa.binary())], names=["part", "seq", "chunk"])

    return run


def _table(columns: list[Any], schema: str) -> Any:
    """Columns (sequences or NumPy arrays) as an Arrow table of `schema` (Spark's "name type, ..." string)."""
    import pyarrow as pa

    types = {"long": pa.int64(), "int": pa.int32(), "binary": pa.binary()}
    fields = [f.strip().split() for f in schema.split(",")]
    if not columns:
        columns = [() for _ in fields]
    return pa.table({name: pa.array(col, types[kind]) for (name, kind), col in zip(fields, columns, strict=True)})


def _union(pieces: list[Any], columns: tuple[str, ...] = ("fp", "parent", "aidx")) -> Any:
    """The visited set: the union of its pieces' parent links (each piece hash-partitioned by fp); or of other
    `columns`."""
    slim = [df.select(*columns) for df in pieces]
    out = slim[0]
    for df in slim[1:]:
        out = out.union(df)
    return out


def _tune(spark: Any, parts: int) -> None:
    """Settings for many small jobs: as many shuffle partitions as cores, no adaptive re-planning, no broadcasts."""
    conf = spark.conf
    conf.set("spark.sql.shuffle.partitions", str(parts))
    conf.set("spark.sql.adaptive.enabled", "false")
    conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    # No partial top-1 per fingerprint before the shuffle (it would sort every row there): see `spark_level`.
    conf.set("spark.sql.optimizer.windowGroupLimitThreshold", "-1")
    conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4000")


def _held_bytes(spark: Any) -> int:
    """Bytes of cached blocks the JVM holds at the end of the search.

    That is the visited set's slim pieces plus the newest levels' own blocks, whose encoded states are freed only
    at the next compaction: on a complete run a few levels' states, on a partial run the frontier's too.
    """
    try:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        return sum(info.memSize() + info.diskSize() for info in infos)
    except Exception:  # noqa: BLE001 - a figure for the summary only
        return 0
