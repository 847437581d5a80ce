"""The Spark engine: states partitioned by fingerprint, each partition closing locally over several levels per round.

Partition i owns the states whose fingerprint is i modulo P. It keeps, as one Python object in a cached RDD
(never shuffled), what it visited: fingerprint -> (distance, parent fingerprint, action position), the states it
still has to expand, its verdicts and a cache of what it already sent. One Spark round = one job: each partition
takes the candidates sent to it, then expands its own states level after level (up to `local_levels` levels, and
only while its local frontier stays under `budget`) and ships the successors it does not own; only those are
shuffled, through a partitioner shared with the stores, so the stores stay in place. The driver collects a few
counters per partition and round; it never sees a state.

Expanding several levels locally breaks the breadth-first order, so distances are label-corrected: a state
reached again by a shorter path takes the shorter distance and parent and is expanded again (its transitions and
verdicts are counted once, on the first expansion). When no partition has work left, every distance is the
shortest, so the depth, counts and shortest-counterexample lengths equal the local engine's. With a state bound
(`max_states`) the rounds go one level at a time (`local_levels=1`), so a partial run stops at the same level.
Counterexamples are rebuilt by following parent links partition by partition (one small job per step).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kcm.checkers.bfs import Progress, ProgressFn, _eta
from kcm.checkers.checkpoint import BadCheckpoint, Checkpointer
from kcm.checkers.collector import rare_collections
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.visited import replay
from kcm.model.fingerprint import decode, encode

NO_PARENT = -1
# A candidate shipped to its owner: (distance, parent fingerprint or NO_PARENT, action position or initial-state
# position, encoded state).
Candidate = tuple[int, int, int, bytes]


DEFAULT_MEMORY = "4g"


def spark_session(master: str = "local[*]", memory: str = DEFAULT_MEMORY) -> Any:
    """A quiet Spark session whose Python workers run this interpreter, with `memory` of JVM heap for the driver.

    In local mode the executors live in the driver's JVM, so the driver's heap holds every cached partition
    store and each round's shuffle: Spark's default 1g runs out on large spaces (about 650,000 states).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tmp = os.environ.setdefault("SPARK_LOCAL_DIRS", tempfile.mkdtemp(prefix="kcm-spark-"))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("kcm-explore")
             .config("spark.driver.memory", memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp}")
             .config("spark.executor.extraJavaOptions", f"-Djava.io.tmpdir={tmp}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class PartitionStore:
    """What one partition visited and still has to do (see the module docstring)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.info: dict[int, tuple[int, int, int]] = {}  # fp -> (distance, parent fp, action or root position)
        self.expanded_at: dict[int, int] = {}  # fp -> distance at which it was last expanded
        self.queue: dict[int, dict[int, bytes]] = {}  # distance -> fp -> encoded state, still to expand
        self.sent: dict[int, int] = {}  # foreign fp -> shortest distance already sent
        self.transitions = 0
        self.shipped = 0  # candidates sent to other partitions in the last round
        self.reached: set[str] = set()
        self.state_bad: dict[int, tuple[str, ...]] = {}  # fp -> always-properties it violates
        self.step_bad: dict[int, list[tuple[int, tuple[str, ...]]]] = {}  # parent fp -> (action pos, step props)

    def pending(self) -> int:
        """States waiting to be expanded."""
        return sum(len(q) for q in self.queue.values())

    def depth(self) -> int:
        """The largest distance of an owned state."""
        return max((d for d, _, _ in self.info.values()), default=0)

    def offer(self, fp: int, dist: int, parent: int, pos: int, blob: bytes, model: Any, props: list) -> None:
        """A path of length `dist` to state `fp`: keep it (and queue the state) if it is new or shorter."""
        old = self.info.get(fp)
        if old is not None and old[0] <= dist:
            return
        self.info[fp] = (dist, parent, pos)
        if old is not None:
            self.queue.get(old[0], {}).pop(fp, None)
        self.queue.setdefault(dist, {})[fp] = blob
        if old is None:  # the state's own properties are checked once, when first seen
            bad, reached = state_checks(model, decode(blob), props)
            self.reached.update(reached)
            if bad:
                self.state_bad[fp] = tuple(bad)

    def violations(self) -> dict[str, tuple[int, int, int, int]]:
        """Per violated property its shortest witness: (length, fingerprint to trace from, extra action or -1, fp)."""
        best: dict[str, tuple[int, int, int, int]] = {}
        for fp, names in self.state_bad.items():
            dist = self.info[fp][0]
            for name in names:
                best[name] = min(best.get(name, (dist, fp, -1, fp)), (dist, fp, -1, fp))
        for parent, steps in self.step_bad.items():
            dist = self.info[parent][0] + 1
            for pos, names in steps:
                for name in names:
                    best[name] = min(best.get(name, (dist, parent, pos, parent)), (dist, parent, pos, parent))
        return best

    def stats(self) -> dict[str, Any]:
        """The counters the driver collects after each round."""
        return {"states": len(self.info), "pending": self.pending(), "shipped": self.shipped,
                "transitions": self.transitions,
                "depth": self.depth(), "reached": sorted(self.reached), "violations": self.violations()}


def run_round(store: PartitionStore, incoming: Iterable[tuple[int, Candidate]], model: Any, parts: int,
              local_levels: int, budget: int) -> list[tuple[int, Candidate]]:
    """One round of one partition: take the candidates, expand local levels, return what goes to other owners.

    With `local_levels` 0 the round only takes the candidates in; with 1 it expands one level and ships every
    successor, its own included, so that a state joins a store only through a round's intake (level by level).
    """
    props = model.properties()
    fingerprint = model.fingerprint
    for fp, (dist, parent, pos, blob) in incoming:
        store.offer(fp, dist, parent, pos, blob, model, props)
    out: dict[int, Candidate] = {}
    levels = 0
    while store.queue and levels < local_levels:
        dist = min(store.queue)
        if levels and len(store.queue[dist]) > budget:
            break  # a big local frontier: better shared out now than expanded alone
        level = store.queue.pop(dist)
        levels += 1
        for fp, blob in sorted(level.items()):
            if store.info[fp][0] != dist:
                continue
            first = fp not in store.expanded_at
            store.expanded_at[fp] = dist
            state = decode(blob)
            for aidx, action, nxt, effects in indexed_successors(model, state):
                if first:
                    store.transitions += 1
                    bad_step, reached = step_checks(model, state, action, nxt, effects, props)
                    store.reached.update(reached)
                    if bad_step:
                        store.step_bad.setdefault(fp, []).append((aidx, tuple(bad_step)))
                nfp = fingerprint(nxt)
                if local_levels > 1 and nfp % parts == store.index:
                    store.offer(nfp, dist + 1, fp, aidx, encode(nxt), model, props)
                elif store.sent.get(nfp, dist + 2) > dist + 1 and out.get(nfp, (dist + 2,))[0] > dist + 1:
                    out[nfp] = (dist + 1, fp, aidx, encode(nxt))
    if local_levels > 1:  # level by level the owner's store already dedupes; the cache would only cost memory
        for nfp, cand in out.items():
            store.sent[nfp] = cand[0]
    store.shipped = len(out)
    return sorted(out.items())


def explore(model: Any, spark: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            local_levels: int = 4, budget: int = 20000, partitions: int | None = None,
            checkpoint: Checkpointer | None = None, resume: dict[str, Any] | None = None) -> Exploration:
    """Explore every state reachable inside the boundary on Spark, checking every property of the model."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    parts = partitions or max(1, sc.defaultParallelism)
    # With a state bound: one job takes a level in, the next expands it, so that the bound stops where the local
    # engine's does (the level taken in is counted, not yet expanded).
    modes = [0, 1] if max_states is not None else [max(1, local_levels)]
    found = Exploration(f"spark {sc.master}")
    start = time.perf_counter()

    def owner(key: int) -> int:
        return key % parts

    def round_fn(levels: int) -> Callable[[int, Iterator[tuple[int, Any]]], Iterator[tuple[int, Any]]]:
        def run(index: int, rows: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
            store = None
            incoming = []
            for key, value in rows:
                if isinstance(value, PartitionStore):
                    store = value
                else:
                    incoming.append((key, value))
            store = store or PartitionStore(index)
            with rare_collections():  # in the worker, for this round's expansion
                out = run_round(store, incoming, model, parts, levels, budget)
            yield index, store
            yield from out
        return run

    rounds, old, spent = 0, None, 0.0
    history: list[int] = []  # work left after each round, for the estimate of the time left
    if resume is None:
        seeds = [(model.fingerprint(s), (0, NO_PARENT, i, encode(s))) for i, s in enumerate(model.init_states())]
        stores = sc.parallelize([(i, PartitionStore(i)) for i in range(parts)], parts).partitionBy(parts, owner)
        cands = sc.parallelize(seeds, 1).partitionBy(parts, owner)
    else:
        if resume.get("engine") != "spark":
            raise BadCheckpoint("a checkpoint of the local engine: resume it with --engine local")
        if resume["partitions"] != parts or resume["max_states"] != max_states:
            raise BadCheckpoint(f"made with {resume['partitions']} partitions and --max-states {resume['max_states']}"
                                f"; resume with the same (a master with {resume['partitions']} cores)")
        stores = sc.parallelize([(st.index, st) for st in resume["stores"]], parts).partitionBy(parts, owner)
        cands = sc.parallelize(resume["cands"], parts).partitionBy(parts, owner)
        rounds, spent = resume["rounds"], resume["seconds"]
    while True:
        if checkpoint is not None and checkpoint.due():
            # The one place where the driver gathers the partitions' stores: only when a checkpoint is due.
            checkpoint.write({"engine": "spark", "partitions": parts, "max_states": max_states, "rounds": rounds,
                              "stores": [kv[1] for kv in stores.collect()], "cands": cands.collect(),
                              "seconds": spent + time.perf_counter() - start})
        levels = modes[rounds % len(modes)]
        rounds += 1
        joined = stores.union(cands)
        if joined.getNumPartitions() != parts:
            raise RuntimeError("Spark did not co-partition the stores and the candidates")
        out = joined.mapPartitionsWithIndex(round_fn(levels), preservesPartitioning=True)
        # Cached, so that the two filters below read it instead of pipelining its work twice; locally
        # checkpointed, so that the lineage stops here instead of reaching back through every round.
        out.persist(StorageLevel.MEMORY_AND_DISK)
        out.localCheckpoint()
        stores = out.filter(lambda kv: isinstance(kv[1], PartitionStore))
        stats = stores.map(lambda kv: kv[1].stats()).collect()
        # `out` claims the stores' partitioner, which would make partitionBy a no-op: flatMap drops the claim.
        cands = out.flatMap(lambda kv: () if isinstance(kv[1], PartitionStore) else (kv,)).partitionBy(parts, owner)
        if old is not None:
            old.unpersist()
        old = out
        states = sum(s["states"] for s in stats)
        pending = sum(s["pending"] + s["shipped"] for s in stats)
        depth = max(s["depth"] for s in stats)
        if progress:
            seconds = spent + time.perf_counter() - start
            history.append(pending)
            progress(Progress(depth, states, pending, seconds, states / seconds if seconds else 0.0,
                              _eta(history, pending, 0, 0, max(1, states - pending), seconds)))
        if not pending:
            break
        if max_states is not None and levels == 0 and states >= max_states:
            found.complete = False
            break
    found.distinct_states = states
    found.transitions = sum(s["transitions"] for s in stats)
    found.depth = depth
    for s in stats:
        found.reached.update(s["reached"])
    best: dict[str, tuple[int, int, int, int]] = {}
    for s in stats:
        for name, witness in s["violations"].items():
            best[name] = min(best.get(name, witness), witness)
    found.violations = _traces(model, stores, owner, best)
    found.seconds = spent + time.perf_counter() - start
    found.bytes_per_state = _bytes_per_state(stores, states)
    old.unpersist()
    return found


def _traces(model: Any, stores: Any, owner: Callable[[int], int],
            best: dict[str, tuple[int, int, int, int]]) -> dict[str, list[Any]]:
    """Each witness's action trace: parent links followed back, all properties at once, one job per step."""
    sc = stores.context
    paths = {name: ([] if extra < 0 else [extra], fp) for name, (_, fp, extra, _) in best.items()}
    roots: dict[str, int] = {}
    while len(roots) < len(paths):
        wanted = {fp for name, (_, fp) in paths.items() if name not in roots}
        by_part = sorted({owner(fp) for fp in wanted})

        def lookup(rows: Iterator[tuple[int, Any]], wanted: set[int] = wanted) -> Iterator[tuple[int, Any]]:
            for _, store in rows:
                for fp in wanted:
                    if fp in store.info:
                        yield fp, store.info[fp]

        links = dict(sc.runJob(stores, lookup, by_part))
        for name, (steps, fp) in list(paths.items()):
            if name in roots:
                continue
            _, parent, pos = links[fp]
            if parent == NO_PARENT:
                roots[name] = pos
            else:
                paths[name] = ([pos] + steps, parent)
    return {name: replay(model, roots[name], steps) for name, (steps, _) in sorted(paths.items())}


def _bytes_per_state(stores: Any, states: int) -> float:
    """Pickled size of the partitions' visited maps per state (what a cached partition holds per state)."""
    import pickle

    sizes = stores.map(lambda kv: len(pickle.dumps((kv[1].info, kv[1].expanded_at), 5))).collect()
    return sum(sizes) / max(1, states)
