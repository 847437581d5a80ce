"""The Spark engine: breadth-first search with delayed duplicate detection in Spark SQL.

Nothing of the search lives in a Python process between levels. The visited set is a DataFrame of
`(fp, parent, aidx)` int64/int32 rows held by the JVM, hash-partitioned by fingerprint; the frontier is a
DataFrame `(fp, pkey, aidx, state)` whose states travel as the model's compact bytes. One level:

1. `mapInArrow` expands the frontier in the Python workers: each state's own properties are checked (every
   frontier state is new, so exactly once), then its successors are computed and their step properties checked.
   A batch sends each successor fingerprint once (its least parent), and one summary row of counters and the
   least witness of each property it saw violated. States travel part by part (`spark_worker`).
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
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
import uuid
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from kcm.checkers.checkpoint import Checkpointer, Snapshot
from kcm.checkers.level_loop import (
    Progress,
    ProgressFn,
    checkpoint_meta,
    eta,
    restore_counters,
    should_stop,
    unreached,
)
from kcm.checkers.spark_checkpoint import NO_PARENT, Links, rows_of
from kcm.checkers.spark_expand import NAMES, order_key, to_long
from kcm.checkers.spark_session import DEFAULT_MEMORY, spark_session
from kcm.checkers.spark_worker import CODEC
from kcm.checkers.stopping import StopRequest
from kcm.checkers.verdicts import Exploration
from kcm.checkers.visited import FP, FingerprintSet, replay
from kcm.model.interface import STATE_KINDS, STEP_KINDS
from pyspark.accumulators import AccumulatorParam

__all__ = ["DEFAULT_MEMORY", "explore", "spark_session", "LevelTiming"]

FRONTIER = "fp long, pkey long, aidx int, parent long, state binary"
VISITED = "fp long, parent long, aidx int"
COMPACT_EVERY = 4  # levels whose parent links stay views of the levels' own blocks before being copied slim
# Levels of at most this many states run in the driver: a Spark level costs about 0.3 s of job latency however
# small it is, and the driver expands about 3,000 states per second (see docs/spark-scale-out.md).
HOST_BELOW = 2000
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
    state_props = unreached([p for p in model.properties() if p.expectation in STATE_KINDS], reached)
    step_props = unreached([p for p in model.properties() if p.expectation in STEP_KINDS], reached)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from kcm.checkers import spark_expand  # the process's own (a global would travel with the closure)
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
    """The state of one search on the driver: DataFrames in the JVM, the driver's own rows, counters, witnesses.

    The visited set is the union of the slim pieces and newest levels in the JVM and of `host`, the rows of the
    levels run in the driver since the last hand-over. While levels run in the driver, `seen` holds every visited
    fingerprint (the JVM's collected once when the search came back to the driver).
    """

    def __init__(self, model: Any, spark: Any, parts: int, compact_every: int, coverage: bool = False) -> None:
        self.model = model
        self.coverage = coverage
        self.spark = spark
        self.parts = parts
        self.compact_every = compact_every
        self.found = Exploration(f"spark {spark.sparkContext.master}")
        self.sink = spark.sparkContext.accumulator({}, _Summaries())
        self.host_sink = _HostSink()
        # property -> (depth of the witness state, its fp long, extra action position or -1)
        self.witness: dict[str, tuple[int, int, int]] = {}
        self.paths: dict[str, tuple[int, list[int]]] = {}  # witnesses read from a checkpoint, as paths
        self.goal_witness: dict[str, tuple[int, int, int]] = {}  # goal -> a state or transition reaching it, as above
        self.pieces: list[Any] = []  # slim (fp, parent, aidx) pieces, each hash-partitioned by fp
        self.recent: list[Any] = []  # the newest levels' own blocks (states included) until compacted
        self.host: list[tuple[int, int, int]] = []  # (fp, parent, aidx) rows visited in the driver, not in the JVM
        self.seen: FingerprintSet | None = None  # every visited fp, while levels run in the driver
        self.warming: Any = None  # the warm-up job's thread while it runs
        self.search = uuid.uuid4().hex  # names this search's model in the Python workers (spark_worker.kept_model)

    # -- the JVM's side --------------------------------------------------------------------------------------

    def checkpointed(self, df: Any) -> Any:
        """`df` computed now and kept by the JVM with its lineage cut, so that later levels never recompute it."""
        return df.localCheckpoint(eager=True)

    def release(self, df: Any) -> None:
        """Free the blocks of a DataFrame made by `checkpointed` (Spark frees them late otherwise)."""
        try:
            df._jdf.queryExecution().logical().rdd().unpersist(False)
        except Exception:  # noqa: BLE001 - only a memory hint; Spark's cleaner frees the blocks eventually
            pass

    def expand(self, frontier: Any, level: int, successors: bool = True) -> Any:
        """The level's successors (not yet deduplicated), as a lazy DataFrame."""
        return frontier.mapInArrow(expander(self.model, level, self.sink, successors, self.search,
                                            self.found.reached, self.coverage), FRONTIER)

    def visited(self) -> Any | None:
        """The JVM's part of the visited set as one DataFrame (None while it holds nothing)."""
        return _union(self.pieces + self.recent) if self.pieces or self.recent else None

    def spark_level(self, frontier: Any, level: int, visited: Any | None = None) -> Any:
        """Level `level` expanded on Spark: its new states (deduplicated, not in the visited set), computed."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        # The least (pkey, aidx) per fingerprint, by one sort after the shuffle: an aggregate would also sort every
        # row, state bytes included, before it (its partial step), to drop the few duplicates the batches left.
        least = Window.partitionBy("fp").orderBy("pkey", "aidx")
        best = self.expand(frontier, level).withColumn("rank", F.row_number().over(least)).filter("rank = 1")
        visited = self.visited() if visited is None else visited
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

    def resumed(self, snapshot: Snapshot) -> tuple[list[tuple], int, list[int], float]:
        """The frontier, depth, level sizes and seconds of a checkpoint (any engine's); its rows held in the driver."""
        got = rows_of(self.model, snapshot)
        meta = got.meta
        self.host = list(zip(got.fps, got.parents, got.aidxs, strict=True))
        self.seen = FingerprintSet(_as_fps(got.fps))
        self.paths = restore_counters(self.found, meta, str(snapshot.path))
        frontier = [(fp, order_key(fp if parent == NO_PARENT else parent), aidx, parent, CODEC.encode(state))
                    for fp, parent, aidx, state in got.frontier]
        return frontier, meta["depth"], list(meta["sizes"]), meta["seconds"]

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
        visited = self.visited()
        self.seen = FingerprintSet(() if visited is None else
                                   _as_fps(visited.select("fp").toArrow().column(0).to_numpy()))
        self.host = []

    def _frame(self, columns: list[tuple], schema: str) -> Any:
        """Rows (given column by column) as a DataFrame hash-partitioned by fp, passed to the JVM through Arrow."""
        import pyarrow as pa

        types = {"long": pa.int64(), "int": pa.int32(), "binary": pa.binary()}
        fields = [f.strip().split() for f in schema.split(",")]
        if not columns:
            columns = [() for _ in fields]
        table = pa.table({name: pa.array(col, types[kind]) for (name, kind), col in zip(fields, columns, strict=True)})
        return self.spark.createDataFrame(table).repartition(self.parts, "fp")

    # -- both ------------------------------------------------------------------------------------------------

    def summaries(self, level: int, stop_at: Collection[str] | None = None) -> tuple[int, str | None]:
        """Fold the summaries of `level`'s expansion into the counters and witnesses.

        Returns the number of states expanded and why the search must stop after this level (None: it need
        not): "state" when a state of this level breaks a property of `stop_at` (the local engine, which checks
        a state when it first meets it, would have stopped before expanding this level: only what the states
        themselves showed is kept), "step" when one of this level's transitions does.
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
        known = set(self.witness) | set(self.paths)
        wanted = set(stop_at or ()) - known
        stop = "state" if wanted & set(state_best) else "step" if wanted & set(step_best) else None
        had = set(self.found.reached)
        self.found.reached.update(reached)
        for name, (_, (fp,)) in state_best.items():
            if name not in known:
                self.witness.setdefault(name, (level, fp, -1))
        for name, (_, (fp,)) in state_goal.items():
            if name not in had:
                self.goal_witness.setdefault(name, (level, fp, -1))
        if stop == "state":
            return count, stop
        self.found.transitions += transitions
        if self.found.tally is not None:
            for c in counted:
                self.found.tally.merge(c)
        self.found.reached.update(reached_step)
        for name, (_, (fp, action)) in step_best.items():
            if name not in known:
                self.witness.setdefault(name, (level, fp, action))
        for name, (_, (fp, action)) in step_goal.items():
            if name not in had:
                self.goal_witness.setdefault(name, (level, fp, action))
        return count, stop

    def check_states(self, frontier: Any, depth: int, stop_at: Collection[str] | None) -> bool:
        """Check the frontier's own properties now (before a checkpoint); whether one of `stop_at` is broken.

        The local engine checks a state when it first meets it, so its checkpoints hold the verdicts of the
        frontier's states; this makes the Spark engine's do too. Their expansion checks them again, harmlessly.
        """
        key = -1 - depth  # summaries kept apart from the level's own
        if isinstance(frontier, list):
            self.host_level(frontier, key, successors=False)
        else:
            self.expand(frontier, key, successors=False).count()
        before = set(self.witness)
        self.summaries(key)
        return bool(set(stop_at or ()) & (set(self.witness) - before))

    def write(self, checkpoint: Checkpointer, depth: int, width: int, seconds: float) -> None:
        """Write the search so far in the local engine's checkpoint format (`spark_checkpoint`)."""
        fps, parents, aidxs = [], [], []
        if self.host:
            host = np.array(self.host, dtype=np.int64).reshape(-1, 3)
            fps.append(host[:, 0])
            parents.append(host[:, 1])
            aidxs.append(host[:, 2])
        visited = self.visited()
        if visited is not None:
            table = visited.select("fp", "parent", "aidx").toArrow()
            for out, i in ((fps, 0), (parents, 1), (aidxs, 2)):
                out.append(table.column(i).to_numpy().astype(np.int64))
        links = Links.of(np.concatenate(fps), np.concatenate(parents), np.concatenate(aidxs))
        if links.depth() != depth or links.sizes()[-1] != width:
            raise RuntimeError(f"the visited set has depth {links.depth()}, the search {depth}")
        paths = dict(self.paths)
        for name, (_, fp, extra) in self.witness.items():
            root, steps = links.path(fp)
            paths[name] = (root, steps + ([extra] if extra >= 0 else []))
        sizes = links.sizes()
        meta = checkpoint_meta(self.found, paths, depth, sizes, sum(sizes[:-1]), seconds)
        checkpoint.write(links.visited(), links.fps[links.level == depth].tolist(), meta)

    def traces(self, goals: bool = False) -> dict[str, list[Any]]:
        """Each witness's action trace (of the goals reached, with `goals`): parent links followed back, every
        property at once, one query per step."""
        from pyspark.sql import functions as F

        host = {fp: (parent, aidx) for fp, parent, aidx in self.host}
        visited = self.visited()
        paths = {name: (fp, [] if extra < 0 else [extra])
                 for name, (_, fp, extra) in (self.goal_witness if goals else self.witness).items()}
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
        out = {name: (roots[name], steps) for name, (_, steps) in paths.items()}
        if not goals:
            out.update(self.paths)
        return {name: replay(self.model, root, steps) for name, (root, steps) in sorted(out.items())}


def explore(model: Any, spark: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            partitions: int | None = None, checkpoint: Checkpointer | None = None,
            resume: Snapshot | None = None, timings: list[LevelTiming] | None = None,
            compact_every: int = COMPACT_EVERY, stop_at: Collection[str] | None = None,
            host_below: int = HOST_BELOW, coverage: bool = False, stop: StopRequest | None = None) -> Exploration:
    """Explore every state reachable inside the boundary on Spark, checking every property of the model.

    `stop_at` (property names): end after the level in which one of them is first violated, as the local engine
    does (every violation of that level is still found, so the counterexamples are the canonical ones).
    Levels of at most `host_below` states run in the driver (0: every level on Spark); `resume` is a checkpoint
    of any engine, and `checkpoint` writes the local engine's format. `coverage` counts the transitions taken
    into `found.tally` (`checkers/coverage.py`), task by task. `stop` (a signal, the memory limit) ends the run
    at the next level boundary, a level's Spark job in work cancelled, with the checkpoint of that boundary.
    """
    sc = spark.sparkContext
    parts = partitions or max(1, sc.defaultParallelism)
    _tune(spark, parts)
    run = _Search(model, spark, parts, compact_every, coverage)
    found = run.found
    if coverage:
        from kcm.checkers.tally import Tally

        found.tally = Tally()
    start = time.perf_counter()
    frontier: Any
    if resume is None:
        frontier = run.seed()
        depth, sizes, spent = 0, [len(frontier)], 0.0
    else:
        frontier, depth, sizes, spent = run.resumed(resume)
    if host_below and len(frontier) <= host_below:
        run.warm_up(frontier)
    width = len(frontier)
    states = len(run.host)
    before = states - width  # states in the levels before `depth`
    known = True  # whether `width` (the frontier's size) is known yet: else the next expansion counts it
    levels: list[LevelTiming] = []
    reported: tuple[int, int, int] | None = None  # the last progress report's (level, states, frontier)

    def counted(n: int) -> None:  # the frontier's size is now known
        nonlocal width, known, states, depth
        width, known = n, True
        if n:
            sizes.append(n)
            states = before + n
        else:
            depth -= 1

    ends = None  # why the search ends after this level (`_Search.summaries`)
    # A resumed run that has already found what it stops at ends at once, as the local engine's does.
    halted = should_stop(stop_at, run.paths)
    if halted:
        found.complete = False
        found.stopped = True
    watch = _Watch(sc, stop) if stop is not None else None
    while not halted:
        # Where the level runs: in the driver while levels are small (no job latency), else on Spark; the search
        # comes back to the driver when the levels thin out again after the widest.
        if isinstance(frontier, list):
            if len(frontier) > host_below:
                frontier = run.to_jvm(frontier)
        elif len(sizes) > 1 and sizes[-1] < sizes[-2] and sizes[-1] <= (host_below if known else 4 * host_below):
            # Shrinking levels; when the frontier's own size is not known yet, the level before it tells whether
            # it may be small: at most host_below + 1 rows come over to find out.
            rows = run.pull(frontier, host_below + 1)
            if len(rows) <= host_below:  # the whole frontier
                if not known:
                    counted(len(rows))
                    if not width:
                        break
                run.to_host()
                frontier = rows
        if stop is not None and stop.poll():
            # The checkpoint of this boundary, made as a periodic one is: the frontier counted, its states judged.
            if not known:
                counted(frontier.count())
                if not width:
                    break  # the search was over after all
            if run.check_states(frontier, depth, stop_at):
                found.complete = False
                found.stopped = True
                break
            found.complete = False
            stop.acted = True
            if checkpoint is not None:
                run.write(checkpoint, depth, width, spent + time.perf_counter() - start)
            break
        if checkpoint is not None and checkpoint.due():
            if not known:  # a checkpoint holds whole levels: count the frontier now instead of at its expansion
                counted(frontier.count())
                if not width:
                    break
            if run.check_states(frontier, depth, stop_at):  # the local engine would have stopped already
                found.complete = False
                found.stopped = True
                break
            run.write(checkpoint, depth, width, spent + time.perf_counter() - start)
        began = time.perf_counter()
        level = depth
        on_host = isinstance(frontier, list)
        if on_host:
            fresh = run.host_level(frontier, depth)
        elif watch is None:
            fresh = run.spark_level(frontier, depth)
        else:
            try:
                with watch.level(f"kcm-level-{run.search}-{depth}"):
                    fresh = run.spark_level(frontier, depth)
            except Exception:
                if stop is None or stop.reason is None:
                    raise
                continue  # the level's job was cancelled for `stop`: nothing of it is kept, the loop's top stops
        expanded, ends = run.summaries(depth, stop_at)
        mid = time.perf_counter()
        if ends == "state":  # this level's own states break a property: the search ends before expanding it
            if not on_host:
                run.release(fresh)
            if not known:
                sizes.append(expanded)
            states = before + expanded
            found.complete = False
            found.stopped = True
            break
        if not known:
            if not expanded:  # the last level found nothing new: the search is over
                depth -= 1
                run.release(fresh)
                break
            sizes.append(expanded)
        if on_host:
            run.host_keep(fresh)
        else:
            run.keep(fresh)
        width = expanded
        states = before + width
        frontier = fresh
        prior = before
        before = states
        depth += 1
        known = False
        if on_host:
            counted(len(fresh))
        elif max_states is not None or ends:  # the bound (or the stop) is looked at once each level has joined
            counted(fresh.count())
        done = time.perf_counter()
        levels.append(LevelTiming(level, prior, expanded, done - began, mid - began, done - mid,
                                  "driver" if on_host else "spark"))
        if progress:
            # A level run on Spark leaves its new frontier uncounted (the next expansion counts it): what is known
            # then is the level just expanded, so that is the level reported; a report already made is not repeated.
            seconds = spent + time.perf_counter() - start
            line = (depth if known else depth - 1, states, width)
            if line != reported:
                reported = line
                progress(Progress(*line, seconds, states / seconds if seconds else 0.0,
                                  eta(sizes, width, 0, 0, max(1, before), seconds)))
        if known and not width:
            break
        if ends or max_states is not None and states >= max_states:
            # The last level is counted and its own properties checked, not expanded.
            if isinstance(frontier, list):
                run.host_level(frontier, depth, successors=False)
            else:
                run.expand(frontier, depth, successors=False).count()
            run.summaries(depth)
            found.complete = False
            found.stopped = bool(ends)
            break
    if watch is not None:
        watch.close()
    run.warmed(cancel=True)  # a search that ended in the driver needs no workers
    gc.unfreeze()  # what the driver's expansions froze can be collected again
    found.distinct_states = states
    found.depth = depth
    found.violations = run.traces()
    found.goals = run.traces(goals=True)
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = _bytes_per_state(spark, states) + run.host_bytes() / max(1, states)
    for df in run.pieces + run.recent:
        run.release(df)
    if timings is not None:
        timings.extend(levels)
    return found


class _Watch:
    """A thread that looks at the stop request while the driver waits for Spark, and cancels the job of the level
    in work when it is set (the level's other jobs, and the checkpoint's, are left to finish)."""

    def __init__(self, sc: Any, stop: StopRequest) -> None:
        self.sc, self.stop = sc, stop
        self.group: str | None = None  # the job group that may be cancelled now
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="kcm-stop-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(WATCH):
            if self.stop.poll():
                with self.lock:
                    # Again at every look while the level lasts: its job may not be submitted yet (the plan and
                    # the expander's closure are prepared in the driver first).
                    if self.group is not None:
                        try:
                            self.sc.cancelJobGroup(self.group)
                        except Exception:  # noqa: BLE001 - the JVM is going: the main thread sees that itself
                            pass

    @contextmanager
    def level(self, group: str) -> Iterator[None]:
        """The jobs run in this block form `group`, which a stop request cancels."""
        self.sc.setJobGroup(group, "kcm: a level's expansion", True)
        with self.lock:
            self.group = group
        try:
            yield
        finally:
            with self.lock:
                self.group = None
            # Later jobs in a group of their own: a cancellation posted late cannot reach them.
            self.sc.setJobGroup(f"{group}-kept", "kcm: a level's bookkeeping", False)

    def close(self) -> None:
        """Stop watching."""
        self.done.set()
        self.thread.join()


def _union(pieces: list[Any]) -> Any:
    """The visited set: the union of its pieces' parent links (each piece hash-partitioned by fp)."""
    slim = [df.select("fp", "parent", "aidx") for df in pieces]
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


def _bytes_per_state(spark: Any, states: int) -> float:
    """Bytes of cached blocks the JVM holds per visited state at the end of the search.

    That is the visited set's slim pieces plus the newest levels' own blocks, whose encoded states are freed only
    at the next compaction: on a complete run a few levels' states, on a partial run the frontier's too.
    """
    try:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        held = sum(info.memSize() + info.diskSize() for info in infos)
    except Exception:  # noqa: BLE001 - a figure for the summary only
        return 0.0
    return held / max(1, states)
