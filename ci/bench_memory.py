"""Peak resident memory per state of the local engine, visited set and frontier apart, with and without spilling.

Each run is its own process (a fresh peak): `kcm`'s local engine (`bfs.search` with the local expansion) on
CONFIG up to MAX_STATES (the search stops after the level that reaches it), reading the process's resident set
(VmRSS) at every level boundary and its peak (VmHWM) at the end. Printed per run: distinct states, seconds, the
resident set before the search, the peak, the peak over the baseline per state, the visited set's bytes per state
(its arrays), and the frontier's: as Python objects (every object reachable from the last level's states, each
counted once, since states share their unchanged parts), and encoded (`checkers/explore/frontier.py`, the Spark codec's
bytes). `--spill N` runs the frontier spilled past N states beside the run without, twice: the level in work kept in
memory (each new state encoded alone) and on disk in sorted runs of `--run-size` states (`runs.py`), printing for
the level in work what its peak adds per new state, its runs and their bytes; the same states, transitions and
levels are checked to match, and the two spilled runs' peaks and seconds compared. `--slope M` runs the last one
again up to M states: the peak's growth per state between the two, extrapolated to 10^8 states.

`--workers N` runs `kcm explore --workers N`'s engine (`workers.explore`) three times: each worker's share and
candidates kept as lists of states; its share encoded past the spill threshold and its level in work in memory
(encoded past it); and its level in work on disk in sorted runs (`runs.py`, `checkers/explore/workers.py`). It prints
each run's peak of the resident sets of all its processes summed (sampled every 0.1 s by this process), bytes a
state and seconds, side by side with the ratios.
`--resume FILE` rebuilds a checkpoint's frontier (`level_loop.resume_frontier`) three times, its levels replayed as
lists of states, into Frontiers with each big level buffered whole, and into Frontiers through runs on disk, and
prints each one's peak resident set and the ratios.

    python ci/bench_memory.py [--config large] [--max-states 300000] [--spill 50000] [--slope 150000] [--deep]
    python ci/bench_memory.py --config large --max-states 300000 --workers 2
    python ci/bench_memory.py --config large --resume FILE
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from typing import Any

from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, frontier, runs, workers
from kcm.checkers.explore.collector import no_collections

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


def child(config: str, max_states: int, spill: int | None, deep: bool, run_size: int | None) -> dict[str, Any]:
    """One measured run in this process (`run_size`: the level in work on disk in runs of that many states;
    None: kept in memory)."""
    from kcm.checkers.explore.level_loop import run
    from kcm.checkers.explore.verdicts import Exploration

    model = BoundedSystem(load_config(config))
    inner = bfs.expander(model)
    last: list[Any] = []
    levels: list[list[int]] = []

    def expand_level(frontier: Any) -> Any:
        last[:] = [frontier]
        levels.append([len(frontier), status("VmRSS")])
        return inner(frontier)

    engine = bfs.LocalLevels(model, expand_level, True, spill, run_size)
    gc.collect()
    base = status("VmRSS")
    start = time.perf_counter()
    with no_collections():
        found = run(model, Exploration("local"), engine, max_states)
    seconds = time.perf_counter() - start
    peak = status("VmHWM")
    frontier = last[0] if last else []
    n = found.distinct_states
    sizes = [size for size, _ in levels] + [n - sum(size for size, _ in levels)]  # the last level, not expanded
    out = {"config": config, "spill": spill, "run_size": run_size, "distinct_states": n, "depth": found.depth,
           "transitions": found.transitions, "seconds": round(seconds, 1), "levels": sizes,
           "rss_at_level_start": [rss for _, rss in levels], "baseline_rss": base, "peak_rss": peak,
           "peak_per_state": round((peak - base) / max(1, n), 1),
           "visited_bytes_per_state": round(found.visited.nbytes() / max(1, n), 1),
           "last_frontier": len(frontier), "level_in_work": sizes[-1],
           # What the peak level in work added over the resident set at its start, per state it found.
           "level_in_work_bytes_per_state": round((peak - levels[-1][1]) / max(1, sizes[-1]), 1) if levels else 0}
    if engine.last_runs is not None:
        count, records, size, written = engine.last_runs
        out.update(runs=count, run_records=records, run_disk_bytes_per_state=round(size / max(1, sizes[-1]), 1),
                   run_written_bytes_per_state=round(written / max(1, sizes[-1]), 1))
    encoded = getattr(frontier, "encoded_bytes", None)
    if encoded is not None:
        out["frontier_encoded_bytes_per_state"] = round(encoded / max(1, len(frontier)), 1)
        out["frontier_in_ram_bytes"] = frontier.ram_bytes
    if deep and isinstance(frontier, list) and frontier:
        out["frontier_object_bytes_per_state"] = round(deep_size(frontier) / len(frontier), 1)
    return out


def tree_rss(pid: int) -> int:
    """The resident bytes of a process and all its descendants, summed (0 for those gone meanwhile)."""
    total = 0
    stack = [pid]
    while stack:
        one = stack.pop()
        try:
            with open(f"/proc/{one}/status") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{one}/task"):
                with open(f"/proc/{one}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def sampled(cmd: list[str]) -> tuple[dict[str, Any], int]:
    """Run a measured child; its JSON line and the peak of its process tree's summed resident set."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.1)
    out, err = proc.communicate()
    if proc.returncode:
        sys.exit(f"bench_memory: the run failed: {err.strip()[-500:]}")
    return json.loads(out), peak


def workers_child(config: str, max_states: int, count: int, spill: bool, run_size: int | None) -> dict[str, Any]:
    """One run of the owner processes in this process and its workers (`run_size`: each worker's level in work
    on disk in runs of its part of that many states; None: in memory)."""
    model = BoundedSystem(load_config(config))
    start = time.perf_counter()
    found = workers.explore(model, count, max_states, spill=frontier.SPILL if spill else None, run_size=run_size)
    return {"distinct_states": found.distinct_states, "depth": found.depth, "transitions": found.transitions,
            "levels": [n for n, _ in found.levels], "seconds": round(time.perf_counter() - start, 1)}


def resume_child(config: str, path: str, spill: bool, buffered: bool) -> dict[str, Any]:
    """One rebuild of a checkpoint's frontier in this process; its peak resident set over the baseline
    (`buffered`: each big level waits whole, encoded, before it is compressed, as before the runs)."""
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.explore.level_loop import resume_frontier

    model = BoundedSystem(load_config(config))
    snapshot = checkpoint.load(path, checkpoint.config_identity(model.cfg))
    if not spill:
        frontier.SPILL = 1 << 62  # every level replayed as a list of states
    if buffered:
        runs.RUN = 1 << 62  # one run a level: the whole level buffered before it is written
    gc.collect()
    base = status("VmRSS")
    start = time.perf_counter()
    with no_collections():
        visited, fps, states = resume_frontier(model, snapshot)
    return {"visited": len(visited), "frontier": len(fps), "kind": type(states).__name__, "baseline_rss": base,
            "peak_rss": status("VmHWM"), "seconds": round(time.perf_counter() - start, 1)}


def compare(args: argparse.Namespace) -> int:
    """The --workers and --resume measurements: each run with and without the compact levels, and the ratio."""
    mib = 1 << 20
    done_runs = []
    # (spilled, buffered): for --workers, buffered is the level in work kept in memory (no runs)
    modes = [(False, False), (True, True), (True, False)]
    for spill, buffered in modes:
        if args.resume:
            cmd = [sys.executable, __file__, "--child", "--config", args.config, "--resume", args.resume]
        else:
            cmd = [sys.executable, __file__, "--child", "--config", args.config, "--max-states",
                   str(args.max_states), "--workers", str(args.workers)]
        cmd += ["--spill", "1"] if spill else []
        run, peak = sampled(cmd + ["--run-size", "0" if buffered else str(args.run_size)])
        done_runs.append((run, peak))
        how = ("into Frontiers, each level buffered whole" if buffered else "into Frontiers through runs on disk"
               ) if spill else "as lists of states"
        if args.resume:
            grown = (run["peak_rss"] - run["baseline_rss"]) / max(1, run["frontier"])
            print(f"resume of {args.resume} ({run['visited']:,} visited, frontier {run['frontier']:,}), levels "
                  f"replayed {how}: {run['seconds']} s; resident {run['baseline_rss'] / mib:,.0f} MiB before, peak "
                  f"{run['peak_rss'] / mib:,.0f} MiB ({grown:,.0f} bytes a frontier state over the baseline)",
                  flush=True)
        else:
            kept = "as lists" if not spill else (
                f"encoded past {frontier.SPILL // args.workers:,} states a worker, level in work in memory" if buffered
                else f"encoded past {frontier.SPILL // args.workers:,} states a worker, level in work on disk "
                     f"(runs of {args.run_size // args.workers:,})")
            print(f"{args.config} up to {args.max_states:,} states, --workers {args.workers}, shares {kept}: "
                  f"{run['distinct_states']:,} states, depth {run['depth']}, {run['seconds']} s; peak of all "
                  f"processes' resident sets summed {peak / mib:,.0f} MiB "
                  f"({peak / max(1, run['distinct_states']):,.0f} bytes a state)", flush=True)
    (before, peak0), (after, peak1) = done_runs[0], done_runs[-1]
    if args.resume:
        grown = [r["peak_rss"] - r["baseline_rss"] for r, _ in done_runs]
        print(f"same frontier: {all(r['frontier'] == before['frontier'] for r, _ in done_runs)}; peak through runs "
              f"against lists {after['peak_rss'] / before['peak_rss']:.2f}x, against whole levels buffered "
              f"{after['peak_rss'] / done_runs[1][0]['peak_rss']:.2f}x; growth over the baseline "
              f"{grown[-1] / max(1, grown[0]):.2f}x and {grown[-1] / max(1, grown[1]):.2f}x")
    else:
        same = all(r[k] == before[k] for r, _ in done_runs for k in ("distinct_states", "depth", "transitions",
                                                                       "levels"))
        (middle, peak_m) = done_runs[1]
        print(f"same states, transitions, depth and levels in every run: {same}")
        print(f"{'':28}{'lists':>14}{'in memory':>14}{'on disk':>14}")
        print(f"{'summed peak (MiB)':28}" + "".join(f"{p / mib:>14,.0f}" for _, p in done_runs))
        print(f"{'bytes a state':28}" + "".join(f"{p / max(1, r['distinct_states']):>14,.0f}" for r, p in done_runs))
        print(f"{'seconds':28}" + "".join(f"{r['seconds']:>14}" for r, _ in done_runs))
        print(f"level in work on disk against in memory: summed peak {peak1 / max(1, peak_m):.2f}x, time "
              f"{after['seconds'] / max(0.1, middle['seconds']):.2f}x; against lists: summed peak "
              f"{peak1 / max(1, peak0):.2f}x, time {after['seconds'] / max(0.1, before['seconds']):.2f}x")
    return 0


def projection(run: dict[str, Any], smaller: dict[str, Any] | None) -> None:
    """What 10^8 states would take at this run's measured figures: the parts that grow with the states, and the
    peak extrapolated from two runs' peaks (`smaller`: the same engine on fewer states)."""
    target = 10 ** 8
    gib = 1 << 30
    level = 0.4 * target  # the largest level taken as 40% of the states (a closing search's levels shrink at its end)
    visited = run["visited_bytes_per_state"] * target
    # The parts that grow with the states, besides the visited set: each frontier state's end offset in its chunk
    # (4 bytes), the written fingerprints of the level in work (8), and its fingerprints and links once merged
    # (8 + 4 + 2), beside a level's join to the sorted fingerprints (a copy: 2 x 8 bytes a state).
    parts = visited + (4 + 8 + 14) * level + 16 * target
    print(f"projection for {target:,} states (largest level {level:,.0f}): visited set {visited / gib:.1f} GiB, "
          f"frontier offsets, level in work and a level's join {(parts - visited) / gib:.1f} GiB; with this run's "
          f"whole peak ({run['peak_rss'] / gib:.2f} GiB) on top: {(parts + run['peak_rss']) / gib:.1f} GiB", flush=True)
    if smaller is not None and run["distinct_states"] > smaller["distinct_states"]:
        slope = (run["peak_rss"] - smaller["peak_rss"]) / (run["distinct_states"] - smaller["distinct_states"])
        total = run["peak_rss"] + slope * (target - run["distinct_states"])
        print(f"measured growth of the peak between {smaller['distinct_states']:,} and {run['distinct_states']:,} "
              f"states: {slope:,.0f} bytes/state; extrapolated to {target:,} states: {total / gib:.1f} GiB, "
              f"{'under' if total < 24 * gib else 'over'} 24 GiB", flush=True)


def main() -> int:
    """Run the measured processes and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="large")
    ap.add_argument("--max-states", type=int, default=600_000)
    ap.add_argument("--spill", type=int, help="also run with the frontier spilled past this many states")
    ap.add_argument("--deep", action="store_true", help="count the last frontier's Python objects (slow)")
    ap.add_argument("--workers", type=int, help="measure the owner processes (all processes summed) instead")
    ap.add_argument("--resume", metavar="FILE", help="measure the rebuild of this checkpoint's frontier instead")
    ap.add_argument("--run-size", type=int, default=runs.RUN,
                    help="with --spill, the level in work on disk in runs of this many states (0: in memory)")
    ap.add_argument("--slope", type=int, metavar="STATES",
                    help="run the last engine again up to this many states: the peak's growth per state")
    ap.add_argument("--skip-objects", action="store_true", help="leave out the run with the frontier as objects")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.resume:
            print(json.dumps(resume_child(args.config, args.resume, args.spill is not None, args.run_size == 0)))
        elif args.workers:
            print(json.dumps(workers_child(args.config, args.max_states, args.workers, args.spill is not None,
                                           args.run_size or None)))
        else:
            print(json.dumps(child(args.config, args.max_states, args.spill, args.deep, args.run_size or None)))
        return 0
    if args.workers or args.resume:
        return compare(args)
    mib = 1 << 20
    plans: list[tuple[str, int | None, int | None]] = [] if args.skip_objects else [("frontier in RAM", None, None)]
    if args.spill is not None:
        plans += [(f"frontier spilled past {args.spill:,}, level in work in memory", args.spill, None),
                   (f"frontier spilled past {args.spill:,}, level in work on disk (runs of {args.run_size:,})",
                    args.spill, args.run_size)]
    done_runs = []
    for how, spill, run_size in plans:
        cmd = [sys.executable, __file__, "--child", "--config", args.config, "--max-states", str(args.max_states)]
        cmd += (["--spill", str(spill)] if spill is not None else []) + (["--deep"] if args.deep else [])
        cmd += ["--run-size", str(run_size if run_size is not None else 0)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"bench_memory: the run failed: {done.stderr.strip()[-500:]}")
        run = json.loads(done.stdout)
        done_runs.append(run)
        print(f"{args.config} up to {args.max_states:,} states, {how}: {run['distinct_states']:,} states, "
              f"depth {run['depth']}, {run['seconds']} s; resident {run['baseline_rss'] / mib:,.0f} MiB before, "
              f"peak {run['peak_rss'] / mib:,.0f} MiB: {run['peak_per_state']:,} bytes/state over the baseline",
              flush=True)
        print(f"  visited set {run['visited_bytes_per_state']} bytes/state; last frontier {run['last_frontier']:,}"
              + (f", {run['frontier_object_bytes_per_state']:,} bytes/state as objects"
                 if "frontier_object_bytes_per_state" in run else "")
              + (f", {run['frontier_encoded_bytes_per_state']:,} bytes/state encoded, "
                 f"{run['frontier_in_ram_bytes'] / mib:,.1f} MiB of it in RAM"
                 if "frontier_encoded_bytes_per_state" in run else ""), flush=True)
        print(f"  level in work {run['level_in_work']:,} states: the peak is "
              f"{run['level_in_work_bytes_per_state']:,} bytes/state of it over the resident set at its start"
              + (f"; {run['runs']:,} runs on disk, {run['run_disk_bytes_per_state']} bytes/state there, "
                 f"{run['run_written_bytes_per_state']} bytes/state of fingerprints in RAM" if "runs" in run else ""),
              flush=True)
        print(f"  levels {run['levels']}; resident at each level's start (MiB) "
              f"{[round(r / mib) for r in run['rss_at_level_start']]}", flush=True)
    keys = ("distinct_states", "depth", "transitions", "levels")
    same = all(r[k] == done_runs[0][k] for r in done_runs for k in keys)
    print(f"same states, transitions, depth and levels in every run: {same}")
    if len(done_runs) >= 2:
        before, after = done_runs[-2], done_runs[-1]
        print(f"level in work on disk against in memory: peak {after['peak_rss'] / max(1, before['peak_rss']):.2f}x "
              f"({before['peak_rss'] / mib:,.0f} -> {after['peak_rss'] / mib:,.0f} MiB), time "
              f"{after['seconds'] / max(0.1, before['seconds']):.2f}x ({before['seconds']} -> {after['seconds']} s)")
        smaller = None
        if args.slope:
            cmd = [sys.executable, __file__, "--child", "--config", args.config, "--max-states", str(args.slope),
                   "--spill", str(after["spill"]), "--run-size", str(after["run_size"] or 0)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"bench_memory: the run failed: {done.stderr.strip()[-500:]}")
            smaller = json.loads(done.stdout)
            print(f"the last run again up to {args.slope:,} states: {smaller['distinct_states']:,} states, peak "
                  f"{smaller['peak_rss'] / mib:,.0f} MiB", flush=True)
        projection(after, smaller)
    return 0


if __name__ == "__main__":
    sys.exit(main())
