"""The Spark engine: breadth-first search with delayed duplicate detection in Spark SQL.

Nothing of the search lives in a Python process between levels. The visited set is a DataFrame of
`(fp, parent, aidx)` int64/int32 rows held by the JVM, hash-partitioned by fingerprint; the frontier is a
DataFrame `(fp, pkey, aidx, state)` whose states travel as the model's compact bytes. One level:

1. `mapInArrow` expands the frontier in the Python workers: each state's own properties are checked (every
   frontier state is new, so exactly once), then its successors are computed and their step properties checked.
   A batch sends each successor fingerprint once (its least parent), and one summary row of counters and the
   least witness of each property it saw violated.
2. In the JVM the successors are reduced to one row per fingerprint (the least `(pkey, aidx)`: the parent first
   in fingerprint order, then the first action, which is the local engine's first discovery), and a `left_anti`
   join against the visited set drops the ones seen before. What is left is the next frontier; its parent links
   join the visited set.

Fingerprints are unsigned 64-bit numbers; Spark's long is signed, so a fingerprint `u` is stored as the long
with the same bits, and ordered by `pkey = u - 2^63` (signed order of that key is the unsigned order of `u`).
So every choice the local engine makes by position in a fingerprint-sorted level is made here by `pkey`, and the
counts, depth, verdicts and counterexamples (the first found in that order, at the least depth) are the local
engine's. Counterexamples are rebuilt by following parent links in the visited DataFrame, one small query per
step back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from kcm.checkers.bfs import Progress, ProgressFn, _eta
from kcm.checkers.checkpoint import BadCheckpoint, Checkpointer
from kcm.checkers.collector import rare_collections
from kcm.checkers.spark_session import DEFAULT_MEMORY, spark_session
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.visited import replay
from kcm.model.fingerprint import decode, encode
from kcm.model.interface import STATE_KINDS, STEP_KINDS
from pyspark.accumulators import AccumulatorParam

__all__ = ["DEFAULT_MEMORY", "explore", "spark_session", "LevelTiming"]

NO_PARENT = -1  # a root's parent in the visited set (its aidx is then its position in model.init_states())
TWO63 = 1 << 63
TWO64 = 1 << 64
FRONTIER = "fp long, pkey long, aidx int, parent long, state binary"
NAMES = ["fp", "pkey", "aidx", "parent", "state"]
VISITED = "fp long, parent long, aidx int"
COMPACT_EVERY = 4  # levels whose parent links stay views of the levels' own blocks before being copied slim


def to_long(fp: int) -> int:
    """The signed 64-bit value with the bits of the unsigned fingerprint `fp` (how Spark stores it)."""
    return fp - TWO64 if fp >= TWO63 else fp


def to_fp(value: int) -> int:
    """The unsigned fingerprint stored as the long `value`."""
    return value + TWO64 if value < 0 else value


def order_key(value: int) -> int:
    """A long whose signed order is the unsigned order of the fingerprint stored as `value`."""
    return value - TWO63 if value >= 0 else value + TWO63


@dataclass
class LevelTiming:
    """One level's figures, for the benchmark: states visited before it, its frontier, its seconds."""

    level: int
    visited: int
    frontier: int
    seconds: float
    expand_seconds: float  # the job that ran the Python expansion
    dedupe_seconds: float  # the jobs in the JVM: reduce, anti-join, visited update, counts


@dataclass
class _Witnesses:
    """The least witness per property seen so far in one expansion: key -> (order tuple, payload)."""

    best: dict[str, tuple[tuple[int, int], list[int]]] = field(default_factory=dict)

    def offer(self, name: str, order: tuple[int, int], payload: list[int]) -> None:
        """Keep this witness of `name` if it comes before the one kept."""
        old = self.best.get(name)
        if old is None or order < old[0]:
            self.best[name] = (order, payload)


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


def expander(model: Any, level: int, sink: Any, successors: bool = True) -> Any:
    """The function mapInArrow runs on the frontier: checks and (unless `successors` is off) expands each state.

    It sends each distinct successor of a batch once, with its least (parent order key, action position), and
    adds the partition's summary (counters, properties reached, least witnesses) to the accumulator `sink`.
    """
    state_props = [p for p in model.properties() if p.expectation in STATE_KINDS]
    step_props = [p for p in model.properties() if p.expectation in STEP_KINDS]

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        fingerprint = model.fingerprint
        transitions = expanded = 0
        reached: set[str] = set()  # by the states themselves
        reached_step: set[str] = set()  # by their transitions
        state_bad, step_bad = _Witnesses(), _Witnesses()
        with rare_collections():
            for batch in batches:
                fps = batch.column(0).to_pylist()
                pkeys = batch.column(1).to_pylist()
                aidxs = batch.column(2).to_pylist()
                blobs = batch.column(4).to_pylist()
                out: dict[int, tuple[int, int, int, Any]] = {}  # successor long -> (pkey, aidx, parent, state)
                for fp, pkey, aidx, blob in zip(fps, pkeys, aidxs, blobs, strict=True):
                    expanded += 1
                    state = decode(blob)
                    bad, hit = state_checks(model, state, state_props)
                    reached.update(hit)
                    for name in bad:
                        state_bad.offer(name, (pkey, aidx), [fp])
                    if not successors:
                        continue
                    key = order_key(fp)
                    for i, action, nxt, effects in indexed_successors(model, state):
                        transitions += 1
                        bad, hit = step_checks(model, state, action, nxt, effects, step_props)
                        reached_step.update(hit)
                        for name in bad:
                            step_bad.offer(name, (key, i), [fp, i])
                        nfp = to_long(fingerprint(nxt))
                        old = out.get(nfp)
                        if old is None or (key, i) < (old[0], old[1]):
                            out[nfp] = (key, i, fp, nxt)
                if out:
                    rows = list(out.values())
                    yield pa.RecordBatch.from_arrays([
                        pa.array(list(out), pa.int64()), pa.array([r[0] for r in rows], pa.int64()),
                        pa.array([r[1] for r in rows], pa.int32()), pa.array([r[2] for r in rows], pa.int64()),
                        pa.array([encode(r[3]) for r in rows], pa.binary())], names=NAMES)
        summary = {"transitions": transitions, "expanded": expanded, "reached": sorted(reached),
                   "reached_step": sorted(reached_step),
                   "state_bad": {n: [list(o), p] for n, (o, p) in state_bad.best.items()},
                   "step_bad": {n: [list(o), p] for n, (o, p) in step_bad.best.items()}}
        sink.add({(level, TaskContext.get().partitionId()): json.dumps(summary)})

    return run


class _Search:
    """The state of one search on the driver: DataFrames in the JVM, counters and witnesses here."""

    def __init__(self, model: Any, spark: Any, parts: int) -> None:
        self.model = model
        self.spark = spark
        self.parts = parts
        self.found = Exploration(f"spark {spark.sparkContext.master}")
        self.sink = spark.sparkContext.accumulator({}, _Summaries())
        # property -> (depth of the witness state, its fp long, extra action position or -1)
        self.witness: dict[str, tuple[int, int, int]] = {}

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
        return frontier.mapInArrow(expander(self.model, level, self.sink, successors), FRONTIER)

    def summaries(self, level: int, stop_at: Collection[str] | None = None) -> tuple[int, str | None]:
        """Fold the summaries of `level`'s expansion into the counters and witnesses.

        Returns the number of states expanded and why the search must stop after this level (None: it need
        not): "state" when a state of this level breaks a property of `stop_at` (the local engine, which checks
        a state when it first meets it, would have stopped before expanding this level: only what the states
        themselves showed is kept), "step" when one of this level's transitions does.
        """
        got = self.sink.value
        mine = sorted(k for k in got if k[0] == level)
        step_best: dict[str, tuple[list[int], list[int]]] = {}
        state_best: dict[str, tuple[list[int], list[int]]] = {}
        count = transitions = 0
        reached: set[str] = set()
        reached_step: set[str] = set()
        for key in mine:
            s = json.loads(got[key])
            count += s["expanded"]
            transitions += s["transitions"]
            reached.update(s["reached"])
            reached_step.update(s["reached_step"])
            for best, seen in ((state_best, s["state_bad"]), (step_best, s["step_bad"])):
                for name, (order, payload) in seen.items():
                    if name not in best or order < best[name][0]:
                        best[name] = (order, payload)
        wanted = set(stop_at or ()) - set(self.witness)
        stop = "state" if wanted & set(state_best) else "step" if wanted & set(step_best) else None
        self.found.reached.update(reached)
        for name, (_, (fp,)) in state_best.items():
            self.witness.setdefault(name, (level, fp, -1))
        if stop == "state":
            return count, stop
        self.found.transitions += transitions
        self.found.reached.update(reached_step)
        for name, (_, (fp, action)) in step_best.items():
            self.witness.setdefault(name, (level, fp, action))
        return count, stop


def explore(model: Any, spark: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            partitions: int | None = None, checkpoint: Checkpointer | None = None,
            resume: dict[str, Any] | None = None, timings: list[LevelTiming] | None = None,
            compact_every: int = COMPACT_EVERY, stop_at: Collection[str] | None = None) -> Exploration:
    """Explore every state reachable inside the boundary on Spark, checking every property of the model.

    `stop_at` (property names): end after the level in which one of them is first violated, as the local engine
    does (every violation of that level is still found, so the counterexamples are the canonical ones).
    """
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    parts = partitions or max(1, sc.defaultParallelism)
    _tune(spark, parts)
    run = _Search(model, spark, parts)
    found = run.found
    start = time.perf_counter()
    spent = 0.0
    sizes: list[int] = []
    if resume is None:
        roots: dict[int, int] = {}
        blobs: dict[int, bytes] = {}
        for i, s in enumerate(model.init_states()):
            fp = to_long(model.fingerprint(s))
            if fp not in roots:
                roots[fp], blobs[fp] = i, encode(s)
        frontier_rows = [(fp, order_key(fp), i, NO_PARENT, blobs[fp]) for fp, i in roots.items()]
        visited_rows = [(fp, NO_PARENT, i) for fp, i in roots.items()]
        depth = 0
    else:
        if resume.get("engine") != "spark":
            raise BadCheckpoint("a checkpoint of the local engine: resume it with --engine local")
        if resume.get("max_states") != max_states:
            raise BadCheckpoint(f"made with --max-states {resume.get('max_states')}; resume with the same")
        frontier_rows = list(zip(resume["frontier_fps"], resume["frontier_pkeys"], resume["frontier_aidxs"],
                                 resume["frontier_parents"], resume["frontier_states"], strict=True))
        visited_rows = list(zip(resume["visited_fps"], resume["visited_parents"], resume["visited_aidxs"],
                                strict=True))
        found.transitions, found.reached = resume["transitions"], set(resume["reached"])
        run.witness = {k: tuple(v) for k, v in resume["witness"].items()}
        depth, sizes, spent = resume["depth"], list(resume["sizes"]), resume["seconds"]
    frontier = run.checkpointed(spark.createDataFrame(frontier_rows, FRONTIER).repartition(parts, "fp"))
    # The visited set: slim pieces (fp, parent, aidx), each hash-partitioned by fp like every level's output, so
    # that their union is too and the anti-join reads it in place. The newest levels are views of the levels'
    # own blocks until `compact_every` of them are copied, slim, into one piece.
    pieces = [run.checkpointed(spark.createDataFrame(visited_rows, VISITED).repartition(parts, "fp"))]
    recent: list[Any] = []
    states = len(visited_rows)
    width = len(frontier_rows)
    if not sizes:
        sizes = [width]
    levels: list[LevelTiming] = []
    before = states - width  # states in the levels before `depth`
    known = True  # whether `width` (the frontier's size) is known yet: else the next expansion counts it
    while True:
        if checkpoint is not None and checkpoint.due():
            if not known:  # a checkpoint holds whole levels: count the frontier now instead of at its expansion
                width, known = frontier.count(), True
                if not width:
                    depth -= 1
                    break
                sizes.append(width)
                states = before + width
            checkpoint.write(_snapshot(run, _union(pieces + recent), frontier, max_states, depth, sizes,
                                       spent + time.perf_counter() - start))
        began = time.perf_counter()
        best = (run.expand(frontier, depth)
                .groupBy("fp").agg(F.min(F.struct("pkey", "aidx", "parent", "state")).alias("m")))
        fresh = run.checkpointed(best.join(_union(pieces + recent), "fp", "left_anti")
                                 .select("fp", "m.pkey", "m.aidx", "m.parent", "m.state"))
        expanded, stop = run.summaries(depth, stop_at)
        mid = time.perf_counter()
        if stop == "state":  # this level's own states break a property: the search ends before expanding it
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
        width = expanded
        states = before + width
        # The frontier's blocks stay while they are the visited set's newest piece; every few levels the newest
        # pieces are copied, slim, into one and their blocks (states included) are freed.
        recent.append(fresh)
        if len(recent) > compact_every:
            keep = recent.pop()
            pieces.append(run.checkpointed(_union(recent)))
            for df in recent:
                run.release(df)
            recent = [keep]
        frontier = fresh
        before = states
        depth += 1
        known = False
        if max_states is not None or stop:  # the bound (or the stop) is looked at once each level has joined
            width = fresh.count()
            known = True
            if not width:
                depth -= 1
            else:
                sizes.append(width)
                states += width
        done = time.perf_counter()
        levels.append(LevelTiming(depth - 1, before - expanded, expanded, done - began, mid - began, done - mid))
        if progress:
            seconds = spent + time.perf_counter() - start
            progress(Progress(depth, states, width, seconds, states / seconds if seconds else 0.0,
                              _eta(sizes, width, 0, 0, max(1, before), seconds)))
        if known and not width:
            break
        if stop or max_states is not None and states >= max_states:
            # The last level is counted and its own properties checked, not expanded.
            run.expand(frontier, depth, successors=False).count()
            run.summaries(depth)
            found.complete = False
            found.stopped = bool(stop)
            break
    visited = _union(pieces + recent)
    found.distinct_states = states
    found.depth = depth
    found.violations = _traces(model, visited, run.witness)
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = _bytes_per_state(spark, states)
    for df in pieces + recent:
        run.release(df)
    if timings is not None:
        timings.extend(levels)
    return found


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
    conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4000")


def _snapshot(run: _Search, visited: Any, frontier: Any, max_states: int | None, depth: int, sizes: list[int],
              seconds: float) -> dict[str, Any]:
    """Everything a resumed run needs, gathered on the driver (only when a checkpoint is due)."""
    v = visited.collect()
    f = frontier.collect()
    return {"engine": "spark", "max_states": max_states, "depth": depth, "sizes": sizes, "seconds": seconds,
            "visited_fps": [r[0] for r in v], "visited_parents": [r[1] for r in v],
            "visited_aidxs": [r[2] for r in v], "frontier_fps": [r[0] for r in f],
            "frontier_pkeys": [r[1] for r in f], "frontier_aidxs": [r[2] for r in f],
            "frontier_parents": [r[3] for r in f], "frontier_states": [bytes(r[4]) for r in f],
            "transitions": run.found.transitions, "reached": sorted(run.found.reached),
            "witness": {k: list(w) for k, w in run.witness.items()}}


def _traces(model: Any, visited: Any, witness: dict[str, tuple[int, int, int]]) -> dict[str, list[Any]]:
    """Each witness's action trace: parent links followed back, every property at once, one query per step."""
    from pyspark.sql import functions as F

    paths = {name: (fp, [] if extra < 0 else [extra]) for name, (_, fp, extra) in witness.items()}
    roots: dict[str, int] = {}
    while len(roots) < len(paths):
        wanted = sorted({fp for name, (fp, _) in paths.items() if name not in roots})
        links = {r[0]: (r[1], r[2]) for r in visited.filter(F.col("fp").isin(wanted)).collect()}
        for name, (fp, steps) in list(paths.items()):
            if name in roots:
                continue
            parent, aidx = links[fp]
            if parent == NO_PARENT:
                roots[name] = aidx
            else:
                paths[name] = (parent, [aidx] + steps)
    return {name: replay(model, roots[name], steps) for name, (_, steps) in sorted(paths.items())}


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
