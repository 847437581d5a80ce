"""Benchmark of the Spark engine: local engine, Spark local[1] and Spark local[2] side by side on one config.

Each run is its own process (one JVM each, started before the clock starts), so the figures are exploration
seconds without Spark's start-up. Printed: states, transitions, depth, seconds and states/s of every engine, the
ratios local[2]/local[1] (gain from the second core) and local engine/local[2], the per-level fixed cost (the
median time of the levels with at most `--small` states, where the work is nil and only the jobs' latency is
left), the CPU seconds of the driver, the JVM and the Python workers, and for each level its time in every
Spark run against the visited set's size before it, with where it
ran: each master runs once per `--driver-below N` (levels of at most N states expanded in the driver; 0: every
level on Spark). Exits 1 if the engines disagree on counts, depth, verdicts or counterexamples.

    python ci/bench_spark.py [CONFIG] [--max-states N] [--small 100] [--masters local[1] local[2]]
                             [--driver-below 0 2000]
    python ci/bench_spark.py --join-scaling [--master local[2]]   # the JVM's part of a level against |visited|

`--join-scaling` times, in one session, the JVM's part of a level (a level's successors reduced per fingerprint,
anti-joined against the visited set, the visited set extended) on synthetic fingerprints: a fixed level of
20,000 successors against visited sets of 10^4 to 4x10^6 rows, so that the per-visited-row cost of the join and
the fixed cost of a level's job can be read off.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

HOST_BELOW = 2000  # the engine's default (kcm.checkers.spark.bfs.HOST_BELOW)

CHILD = r'''
import json, os, sys, time
from kcm.checkers.explore import bfs
from kcm.checkers.spark import bfs as spark_bfs
from kcm.checkers.core.bounded import BoundedSystem, load_config
config, master, bound = sys.argv[1], sys.argv[2], (int(sys.argv[3]) if sys.argv[3] != "-" else None)
below = int(sys.argv[4])

def cpu():
    """CPU seconds of this process (the driver), of its JVM and of the JVM's Python workers (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(pid)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)
    jvm = {p for p, (parent, _) in procs.items() if parent == os.getpid()}
    workers, grown = set(), True
    while grown:
        new = {p for p, (parent, _) in procs.items() if (parent in jvm or parent in workers) and p not in workers}
        grown = bool(new)
        workers |= new
    return {"driver": time.process_time(), "jvm": sum(procs[p][1] for p in jvm),
            "python workers": sum(procs[p][1] for p in workers)}

model = BoundedSystem(load_config(config))
if master == "local-engine":
    before = cpu()
    found, levels = bfs.explore(model, bound), []
else:
    spark = spark_bfs.spark_session(master)
    spark.range(1).count()  # the JVM warmed up before the clock starts
    levels = []
    before = cpu()
    found = spark_bfs.explore(model, spark, bound, timings=levels, host_below=below)
after = cpu()
if master != "local-engine":
    spark.stop()
out = found.to_json(model)
out["cpu"] = {k: round(after[k] - before[k], 1) for k in after}
out["levels"] = [[t.level, t.visited, t.frontier, t.seconds, t.expand_seconds, t.where] for t in levels]
out["traces"] = {k: [repr(a) for a in v] for k, v in sorted(found.violations.items())}
print(json.dumps(out))
'''
SAME = ("distinct_states", "transitions", "depth", "complete", "verdicts", "traces")


def run(config: str, master: str, bound: int | None, below: int = 0) -> dict:
    """One engine in its own process: its summary, per-level timings and traces."""
    done = subprocess.run([sys.executable, "-c", CHILD, config, master, str(bound) if bound else "-", str(below)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_spark: {master} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


JOIN = r'''
import sys, time
from pyspark.sql import functions as F
from kcm.checkers.spark import bfs as spark_bfs
master = sys.argv[1]
spark = spark_bfs.spark_session(master)
parts = spark.sparkContext.defaultParallelism
spark_bfs._tune(spark, parts)
for visited_rows in (10_000, 100_000, 1_000_000, 4_000_000):
    visited = (spark.range(0, visited_rows * 7919, 7919, parts).selectExpr("id as fp", "id as parent", "0 as aidx")
               .repartition(parts, "fp").localCheckpoint(eager=True))
    times = []
    for rep in range(4):
        level = spark.range(0, 20_000, 1, parts).selectExpr(
            f"(id * 104729 + {rep}) as fp", "id as pkey", "0 as aidx", "id as parent", "unhex('00ff00ff') as state")
        start = time.perf_counter()
        best = level.groupBy("fp").agg(F.min(F.struct("pkey", "aidx", "parent", "state")).alias("m"))
        fresh = best.join(visited.select("fp"), "fp", "left_anti").select("fp", "m.*").localCheckpoint(eager=True)
        times.append(time.perf_counter() - start)
    times.sort()
    print(visited_rows, times[len(times) // 2], flush=True)
spark.stop()
'''


def join_scaling(master: str) -> int:
    """Print the JVM's time for one level of 20,000 successors against visited sets of growing size."""
    done = subprocess.run([sys.executable, "-c", JOIN, master], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_spark: the join benchmark failed:\n{done.stderr[-3000:]}")
    print(f"JVM part of one level ({master}): 20,000 successors reduced and anti-joined; median of 4")
    print(f"{'visited rows':>12} {'seconds':>8} {'us per visited row':>18}")
    rows = [line.split() for line in done.stdout.strip().splitlines()]
    base = float(rows[0][1])
    for visited, seconds in rows:
        extra = (float(seconds) - base) / max(1, int(visited) - int(rows[0][0])) * 1e6 if visited != rows[0][0] else 0
        print(f"{int(visited):>12,} {float(seconds):>8.3f} {extra:>18.3f}")
    return 0


def estimate(levels: list[list[float]], cores: int, small: int = 100, row_ns: float = 0.0) -> None:
    """Split the level times into a latency per level and a cost per state, and scale them out.

    The latency L is the median time of the levels (after level 0) with at most `small` states, where the work
    is nil; the cost per state is what the other levels took beyond L, per state expanded, on `cores` cores.
    `row_ns` adds the join's core-nanoseconds per visited row per level (from --join-scaling). Scaled to C cores
    (an estimate): the same L per level, the per-state and per-row work divided by C.
    """
    # Level 0 also starts the Python workers and warms the JVM up: a one-time cost, left out.
    rows = [lv[:5] for lv in levels if lv[2] > 0 and lv[0] > 0 and lv[5:] != ["driver"]]
    # The small levels after the largest one: the JVM has compiled its plans by then (the first levels also pay
    # its warm-up); the small levels of the start only if there are none after the peak.
    peak = max(range(len(rows)), key=lambda i: rows[i][2]) if rows else 0
    tiny = sorted(lv[3] for lv in rows[peak:] if lv[2] <= small) or sorted(lv[3] for lv in rows if lv[2] <= small)
    big = [lv for lv in rows if lv[2] > small]
    if not tiny or not big:
        return
    lat = tiny[len(tiny) // 2]
    per_state = max(0.0, sum(lv[3] - lat for lv in big) / sum(lv[2] for lv in big))  # seconds on `cores` cores
    states = sum(lv[2] for lv in rows)
    visited_sum = sum(lv[1] for lv in rows)
    print(f"level 0 (Python workers started, JVM warmed up): {levels[0][3]:.1f} s, once")
    print(f"latency per level {lat:.3f} s (median of {len(tiny)} late levels of <= {small} states); "
          f"{per_state * cores * 1e3:.3f} core-ms per state beyond it")
    for c in (cores, 16, 64):
        work = states * per_state * cores / c + visited_sum * row_ns * 1e-9 / c
        t = len(rows) * lat + work
        print(f"  estimate on {c:3} cores: {t:8.1f} s ({len(rows) * lat / t:.0%} of it latency per level)")
    # 1e8 states: the same level shape stretched (1.5x the levels, every level scaled up), costs unchanged.
    scale = 1e8 / states
    depth = int(len(rows) * 1.5)
    for c in (16, 64):
        t = depth * lat + (1e8 * per_state * cores + visited_sum * scale * 1.5 * row_ns * 1e-9) / c
        print(f"  1e8 states, {depth} levels, {c} cores: {t / 3600:.1f} h")


def main(argv: list[str] | None = None) -> int:
    """Run the engines on one config and print the figures, the ratios and the level times."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", nargs="?", default="default")
    p.add_argument("--max-states", type=int)
    p.add_argument("--small", type=int, default=100, help="levels of at most this many states give the fixed cost")
    p.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    p.add_argument("--driver-below", nargs="+", type=int, default=[0, HOST_BELOW], metavar="N",
                   help="run each master with levels of at most N states in the driver (0: every level on Spark)")
    p.add_argument("--join-scaling", action="store_true", help="time the JVM's part of a level against |visited|")
    p.add_argument("--master", default="local[2]", help="the master of --join-scaling")
    args = p.parse_args(argv)
    if args.join_scaling:
        return join_scaling(args.master)
    results = {"local engine": run(args.config, "local-engine", args.max_states)}
    for master in args.masters:
        for below in args.driver_below:
            results[f"spark {master} <={below}"] = run(args.config, master, args.max_states, below)
    print(f"config {args.config}" + (f", --max-states {args.max_states}" if args.max_states else ""))
    print("spark MASTER <=N: levels of at most N states expanded in the driver (0: every level on Spark)")
    print(f"{'engine':22} {'states':>9} {'transitions':>11} {'depth':>5} {'seconds':>8} {'states/s':>9} "
          f"{'fixed s/level':>13}")
    for name, r in results.items():
        small = [lv[3] for lv in r["levels"] if lv[2] <= args.small and lv[5] == "spark"]
        fixed = f"{statistics.median(small):.3f}" if small else "-"
        print(f"{name:22} {r['distinct_states']:>9,} {r['transitions']:>11,} {r['depth']:>5} {r['seconds']:>8.1f} "
              f"{r['distinct_states'] / r['seconds']:>9,.0f} {fixed:>13}")
    print("CPU seconds of the exploration: the driver (the local engine's one process), the JVM, the Python workers")
    for name, r in results.items():
        print(f"  {name:22} " + ", ".join(f"{k} {v:.1f}" for k, v in r.get("cpu", {}).items()))
    local = results["local engine"]
    spark = [n for n in results if n != "local engine"]
    for a, b in zip(spark, spark[1:], strict=False):
        print(f"ratio {a} / {b} seconds = {results[a]['seconds'] / results[b]['seconds']:.2f}x")
    for name in spark:
        print(f"ratio local engine / {name} seconds = {local['seconds'] / results[name]['seconds']:.2f}x")
    print("levels, side by side: level, visited before it, its states, then for each Spark run its seconds and "
          "where the level ran (d: driver, s: Spark)")
    print(f"  {'':3} {'':>10} {'':>9} " + " ".join(f"{name[6:]:>18}" for name in spark))
    table = {name: {lv[0]: lv for lv in results[name]["levels"]} for name in spark}
    for level, visited, width, *_ in results[spark[0]]["levels"]:
        cells = [table[name].get(level) for name in spark]
        print(f"  {level:3} {visited:>10,} {width:>9,} " + " ".join(
            f"{c[3]:>16.3f} {c[5][0]}" if c else f"{'-':>18}" for c in cells))
    pure = [name for name in spark if name.endswith(" <=0")] or spark
    last = results[pure[-1]]
    print(f"estimate from {pure[-1]} (every level on Spark):")
    master = pure[-1].split()[1]
    estimate(last["levels"], int(master.split("[")[1].rstrip("]")) if "[" in master else 2, args.small)
    same = all({k: results[n][k] for k in SAME} == {k: local[k] for k in SAME} for n in spark)
    print("same counts, depth, verdicts and counterexamples on every engine:", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
