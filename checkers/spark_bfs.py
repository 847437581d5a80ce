"""The Spark engine: level-synchronous BFS whose expansion runs on Spark workers; same verdicts as the local engine.

Each level's frontier is shipped as canonical encodings (model.fingerprint.encode) in as many slices as Spark has
cores; workers expand states, check every property and return (fingerprint, encoding, parent, action, verdicts).
The driver keeps the visited set (fingerprint -> parent link, for shortest counterexamples) and dedupes. Spark
pays a fixed cost per level (a few hundred ms here), so on two cores this engine is slower than the local one;
it exists for runs whose per-state work is heavy or that need a cluster (`--master spark://...`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from kcm.checkers.bfs import ProgressFn, Row, search
from kcm.checkers.checkpoint import Checkpointer
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.model.fingerprint import decode, encode


def spark_session(master: str = "local[*]") -> Any:
    """A quiet Spark session whose Python workers run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tmp = os.environ.setdefault("SPARK_LOCAL_DIRS", tempfile.mkdtemp(prefix="kcm-spark-"))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("kcm-explore")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp}")
             .config("spark.executor.extraJavaOptions", f"-Djava.io.tmpdir={tmp}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _expand(model: Any) -> Callable[[Any], Any]:
    def expand(rows: Any) -> Any:
        props = model.properties()
        fingerprint = model.fingerprint
        for pos, blob in rows:
            state = decode(blob)
            for aidx, action, nxt, effects in indexed_successors(model, state):
                bad_step, reached_step = step_checks(model, state, action, nxt, effects, props)
                bad, reached = state_checks(model, nxt, props)
                yield (fingerprint(nxt), encode(nxt), pos, aidx, action, bad_step, bad, reached_step + reached)
    return expand


def explore(model: Any, spark: Any, max_states: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Checkpointer | None = None, resume: dict[str, Any] | None = None) -> Exploration:
    """Explore every state reachable inside the boundary on Spark, checking every property of the model."""
    sc = spark.sparkContext
    slices = max(1, sc.defaultParallelism)
    expand = _expand(model)

    def expand_level(frontier: list[tuple[int, bytes]]) -> list[Row]:
        items = [(pos, blob) for pos, (_, blob) in enumerate(frontier)]
        rows = sc.parallelize(items, min(slices, len(items))).mapPartitions(expand).collect()
        # Same order as the local engine: by parent's position in the frontier, then the model's action order.
        rows.sort(key=lambda r: r[2])
        return rows

    return search(model, f"spark {sc.master}", encode, expand_level, decode, max_states, progress, checkpoint, resume)
