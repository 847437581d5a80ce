"""Peak resident memory per state of the local engine, visited set and frontier apart, with and without spilling.

Each run is its own process (a fresh peak): `kcm`'s local engine (`bfs.search` with the local expansion) on
CONFIG up to MAX_STATES (the search stops after the level that reaches it), reading the process's resident set
(VmRSS) at every level boundary and its peak (VmHWM) at the end. Printed per run: distinct states, seconds, the
resident set before the search, the peak, the peak over the baseline per state, the visited set's bytes per state
(its arrays), and the frontier's: as Python objects (every object reachable from the last level's states, each
counted once, since states share their unchanged parts), and encoded (`checkers/frontier.py`, the Spark codec's
bytes). `--spill N` runs the frontier spilled past N states beside the run without (the same states and levels are
checked to match).

    python ci/bench_memory.py [--config large] [--max-states 600000] [--spill 50000] [--deep]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from typing import Any

from kcm.checkers import bfs
from kcm.checkers.bounded import BoundedSystem, load_config
from kcm.checkers.collector import no_collections

SKIP = (type, type(sys), type(len), type(lambda: 0))  # shared by every state: not the frontier's own memory


def status(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS: resident now, VmHWM: the peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def deep_size(states: Any) -> int:
    """Bytes of every object reachable from `states`, each counted once (the frontier's own objects)."""
    seen: set[int] = set()
    stack = list(states)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, SKIP):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def child(config: str, max_states: int, spill: int | None, deep: bool) -> dict[str, Any]:
    """One measured run in this process."""
    model = BoundedSystem(load_config(config))
    inner = bfs.expander(model)
    last: list[Any] = []
    levels: list[list[int]] = []

    def expand_level(frontier: Any) -> Any:
        last[:] = [frontier]
        levels.append([len(frontier), status("VmRSS")])
        return inner(frontier)

    gc.collect()
    base = status("VmRSS")
    start = time.perf_counter()
    with no_collections():
        found = bfs.search(model, "local", expand_level, max_states, spill=spill)
    seconds = time.perf_counter() - start
    peak = status("VmHWM")
    frontier = last[0] if last else []
    n = found.distinct_states
    out = {"config": config, "spill": spill, "distinct_states": n, "depth": found.depth, "seconds": round(seconds, 1),
           "levels": [size for size, _ in levels], "rss_at_level_start": [rss for _, rss in levels],
           "baseline_rss": base, "peak_rss": peak, "peak_per_state": round((peak - base) / max(1, n), 1),
           "visited_bytes_per_state": round(found.visited.nbytes() / max(1, n), 1),
           "last_frontier": len(frontier)}
    encoded = getattr(frontier, "encoded_bytes", None)
    if encoded is not None:
        out["frontier_encoded_bytes_per_state"] = round(encoded / max(1, len(frontier)), 1)
        out["frontier_in_ram_bytes"] = frontier.ram_bytes
    if deep and isinstance(frontier, list) and frontier:
        out["frontier_object_bytes_per_state"] = round(deep_size(frontier) / len(frontier), 1)
    return out


def main() -> int:
    """Run the measured processes and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="large")
    ap.add_argument("--max-states", type=int, default=600_000)
    ap.add_argument("--spill", type=int, help="also run with the frontier spilled past this many states")
    ap.add_argument("--deep", action="store_true", help="count the last frontier's Python objects (slow)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.config, args.max_states, args.spill, args.deep)))
        return 0
    runs = []
    for spill in [None] + ([args.spill] if args.spill is not None else []):
        cmd = [sys.executable, __file__, "--child", "--config", args.config, "--max-states", str(args.max_states)]
        cmd += (["--spill", str(spill)] if spill is not None else []) + (["--deep"] if args.deep else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"bench_memory: the run failed: {done.stderr.strip()[-500:]}")
        run = json.loads(done.stdout)
        runs.append(run)
        mib = 1 << 20
        print(f"{args.config} up to {args.max_states:,} states, frontier "
              f"{'in RAM' if spill is None else f'spilled past {spill:,} states'}: {run['distinct_states']:,} states, "
              f"depth {run['depth']}, {run['seconds']} s; resident {run['baseline_rss'] / mib:,.0f} MiB before, "
              f"peak {run['peak_rss'] / mib:,.0f} MiB: {run['peak_per_state']:,} bytes/state over the baseline; "
              f"visited set {run['visited_bytes_per_state']} bytes/state; last frontier {run['last_frontier']:,}"
              + (f", {run['frontier_object_bytes_per_state']:,} bytes/state as objects"
                 if "frontier_object_bytes_per_state" in run else "")
              + (f", {run['frontier_encoded_bytes_per_state']:,} bytes/state encoded, "
                 f"{run['frontier_in_ram_bytes'] / mib:,.1f} MiB of it in RAM"
                 if "frontier_encoded_bytes_per_state" in run else ""), flush=True)
        print(f"  levels {run['levels']}; resident at each level's start (MiB) "
              f"{[round(r / mib) for r in run['rss_at_level_start']]}", flush=True)
    if len(runs) == 2:
        same = all(runs[0][k] == runs[1][k] for k in ("distinct_states", "depth", "levels"))
        print(f"same states, depth and levels with and without spilling: {same}; peak "
              f"{runs[1]['peak_rss'] / max(1, runs[0]['peak_rss']):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
