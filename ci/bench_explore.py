"""Benchmark of `kcm explore`: the local engine, Spark local[1] and Spark local[2] on one config, with ratios.

Each engine runs in its own `kcm explore --json` process (one Spark session per process); the figures printed are
distinct states, transitions, depth, exploration seconds, wall seconds (Spark's start-up included), distinct
states per second of exploration and bytes per visited state, then the ratios between the engines. It also
checks that every engine reports the same counts, depth and verdicts, and exits 1 if not.

    python ci/bench_explore.py [CONFIG] [--max-states N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

RUNS = (("local", ["--engine", "local"]), ("spark local[1]", ["--engine", "spark", "--master", "local[1]"]),
        ("spark local[2]", ["--engine", "spark", "--master", "local[2]"]))
SAME = ("distinct_states", "transitions", "depth", "complete", "verdicts")


def run(config: str, extra: list[str], max_states: int | None) -> tuple[dict, float]:
    """One `kcm explore` process: its JSON summary and its wall time."""
    cmd = [sys.executable, "-c", "import sys; from kcm.cli import main; sys.exit(main(sys.argv[1:]))",
           "explore", "--config", config, "--quiet", "--json", *extra]
    if max_states is not None:
        cmd += ["--max-states", str(max_states)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"bench_explore: {' '.join(extra)} failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout), wall


def main(argv: list[str] | None = None) -> int:
    """Run the three engines on one config and print the figures and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", nargs="?", default="default", help="config name or path (default: default)")
    p.add_argument("--max-states", type=int, help="bound every run (the runs are then partial)")
    args = p.parse_args(argv)
    results = {}
    print(f"config {args.config}" + (f", --max-states {args.max_states}" if args.max_states else ""))
    print(f"{'engine':16} {'states':>9} {'transitions':>11} {'depth':>5} {'explore s':>9} {'wall s':>7} "
          f"{'states/s':>9} {'B/state':>7}")
    for name, extra in RUNS:
        summary, wall = run(args.config, extra, args.max_states)
        results[name] = (summary, wall)
        print(f"{name:16} {summary['distinct_states']:>9,} {summary['transitions']:>11,} {summary['depth']:>5} "
              f"{summary['seconds']:>9.1f} {wall:>7.1f} {summary['states_per_second'] or 0:>9,} "
              f"{summary['bytes_per_state']:>7}", flush=True)
    local, one, two = (results[n][0] for n, _ in RUNS)
    print(f"ratios (exploration seconds): spark local[2] / local = {two['seconds'] / local['seconds']:.2f}x; "
          f"spark local[1] / spark local[2] = {one['seconds'] / two['seconds']:.2f}x (speed-up from the 2nd core)")
    print(f"ratios (wall seconds): spark local[2] / local = {results['spark local[2]'][1] / results['local'][1]:.2f}x; "
          f"spark local[1] / spark local[2] = {results['spark local[1]'][1] / results['spark local[2]'][1]:.2f}x")
    same = all({k: s[k] for k in SAME} == {k: local[k] for k in SAME} for s in (one, two))
    print("same counts, depth and verdicts on every engine:", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
