"""Random walks on Spark: the walks of a run split across partitions, each partition a batch, merged on the driver.

Walk i is the same walk on every engine (its generator is seeded from (seed, i), see `checkers.walk`), and merging
keeps for each property the shortest violating walk, ties to the lowest walk index, so a Spark run reports what the
local run reports: the same distinct states, transitions, longest walk, verdicts and shrunk counterexamples.
Shrinking runs on the driver, on the one walk kept per property.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from kcm.checkers.explore.walk import WalkBatch, WalkExploration, WalkProgress, check_walk_numbers, report, run_walks


def walk(model: Any, spark: Any, walks: int, depth: int, seed: int, shrink: bool = True,
         progress: WalkProgress | None = None) -> WalkExploration:
    """Run `walks` seeded random walks of at most `depth` steps on Spark and report as the local walk run does."""
    check_walk_numbers(walks, depth)
    start = time.perf_counter()
    sc = spark.sparkContext
    # A few slices per core, so that a partition of long walks does not hold the whole run back.
    slices = max(1, min(walks, 4 * sc.defaultParallelism))

    def batch_of(indices: Iterator[int]) -> Iterator[WalkBatch]:
        yield run_walks(model, indices, depth, seed)

    merged = WalkBatch()
    for batch in sc.parallelize(range(walks), slices).mapPartitions(batch_of).collect():
        merged.merge(batch)
    seconds = time.perf_counter() - start
    if progress is not None:
        progress(walks, len(merged.seen), seconds)
    return report(model, merged, walks, depth, seed, seconds, engine="spark-walk", shrink=shrink)
