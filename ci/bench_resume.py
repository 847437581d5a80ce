"""A resume with the frontier's states stored in the checkpoint against the same resume by replay, side by side.

Explores CONFIG on the local engine until the search passes MAX_STATES, writing a checkpoint at every level
boundary with the frontier's states stored (`checkers/explore/stored_states.py`; the bound that limits a periodic
checkpoint to small frontiers is lifted here, as a stop's checkpoint lifts it). Then rebuilds that checkpoint's
frontier twice in this process (`level_loop.resume_frontier`): from the stored states, and from the same file
without them (every level replayed). Prints the visited states, the frontier, the stored bytes a state, the seconds
of each rebuild and their ratio, and checks the two give equal states.

`--checkpoint FILE` times a checkpoint you have instead (for instance a stopped `kcm explore`'s); a file of the
Spark engine that keeps each visited state's level is also timed through the Spark engine's loader
(`spark_checkpoint.rows_of`), which rebuilds every visited row too.

    python ci/bench_resume.py [--config default] [--max-states 300000]
    python ci/bench_resume.py --config large --checkpoint FILE
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, checkpoint, level_loop

STORED = ("states.data", "states.ends")


def _timed(label: str, rebuild, snap: checkpoint.Snapshot) -> tuple[float, object]:
    """Seconds of `rebuild(snap)` and its result."""
    start = time.perf_counter()
    got = rebuild(snap)
    seconds = time.perf_counter() - start
    print(f"  {label}: {seconds:.1f} s", flush=True)
    return seconds, got


def main() -> int:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="default")
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--checkpoint", help="time this checkpoint instead of making one")
    args = ap.parse_args()
    cfg = load_config(args.config)
    model = BoundedSystem(cfg)
    identity = checkpoint.config_identity(cfg)
    with tempfile.TemporaryDirectory(prefix="kcm-bench-resume-") as folder:
        path = Path(args.checkpoint) if args.checkpoint else Path(folder, "bench.ckpt")
        if not args.checkpoint:
            level_loop.STORE_BELOW = 1 << 62  # store at every level boundary, as a stop's checkpoint does
            start = time.perf_counter()
            bfs.explore(model, max_states=args.max_states, checkpoint=checkpoint.Checkpointer(path, 0, identity))
            print(f"explored {args.config} to {args.max_states:,} states in {time.perf_counter() - start:.1f} s")
        snap = checkpoint.load(path, identity)
        if "states.ends" not in snap.arrays:
            print(f"{path}: stores no frontier states", file=sys.stderr)
            return 2
        visited, width = snap.arrays["seen"].size, snap.arrays["frontier"].size
        stored = snap.arrays["states.data"].size
        print(f"checkpoint: {snap.engine} engine, depth {snap.meta['depth']}, {visited:,} visited, frontier "
              f"{width:,}, stored states {stored:,} bytes ({stored / max(1, width):.0f} a state)")
        print("local engine's loader (resume_frontier):")
        fast, (_, _, a) = _timed("stored states", lambda s: level_loop.resume_frontier(model, s), snap)
        spark_rows = "levels" in snap.arrays
        if spark_rows:
            from kcm.checkers.spark.checkpoint import rows_of

            print("Spark engine's loader (rows_of):")
            sfast, ra = _timed("stored states and levels", lambda s: rows_of(model, s), snap)
            ra_front = list(ra.frontier)
        kept = {k: snap.arrays.pop(k) for k in (*STORED, "levels") if k in snap.arrays}
        slow, (_, _, b) = _timed("replayed", lambda s: level_loop.resume_frontier(model, s), snap)
        same = len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))
        print(f"  replay / stored: {slow / fast:.1f}x; the same states: {same}")
        if spark_rows:
            sslow, rb = _timed("replayed (Spark's loader)", lambda s: rows_of(model, s), snap)
            rsame = all(np.array_equal(x, y) for x, y in zip((ra.fps, ra.parents, ra.aidxs),
                                                             (rb.fps, rb.parents, rb.aidxs), strict=True)) \
                and ra_front == list(rb.frontier)
            print(f"  replay / stored: {sslow / sfast:.1f}x; the same rows: {rsame}")
            same = same and rsame
        snap.arrays.update(kept)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
