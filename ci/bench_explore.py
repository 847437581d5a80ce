"""Benchmark of `kcm explore`: the local engine, Spark local[1] and Spark local[2] on one config, with ratios.

Each engine runs in its own `kcm explore --json` process (one Spark session per process); the figures printed are
distinct states, transitions, depth, exploration seconds, wall seconds (Spark's start-up included), distinct
states per second of exploration and bytes per visited state, then the ratios between the engines. It also
checks that every engine reports the same counts, depth and verdicts, and exits 1 if not.

    python ci/bench_explore.py [CONFIG] [--max-states N]
    python ci/bench_explore.py --all [--max-states N]   # every shipped config: local against spark local[2]

`--all` runs the local engine and Spark local[2] on every config in specs/configs/ (bugs/ included) and prints
one row each, with whether the two agree; `large` is always bounded (default 100,000 states), as it does not
finish on one machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

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
    try:
        summary = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except json.JSONDecodeError:
        summary = None  # exit 1 without a summary: the run itself failed, not a property
    if summary is None:
        sys.exit(f"bench_explore: {' '.join(extra)} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return summary, wall


CONFIGS = Path(__file__).resolve().parents[1] / "specs" / "configs"
LARGE_BOUND = 100_000


def every_config(max_states: int | None) -> int:
    """Local and Spark local[2] on every shipped config: one row each; 1 if any pair disagrees."""
    names = sorted(str(p.relative_to(CONFIGS).with_suffix("")) for p in CONFIGS.rglob("*.json"))
    print(f"{'config':24} {'states':>9} {'transitions':>11} {'depth':>5} {'local s':>8} {'spark s':>8} agree")
    status = 0
    for name in names:
        bound = max_states if max_states is not None else (LARGE_BOUND if name == "large" else None)
        (local, _), (spark, _) = (run(name, extra, bound) for _, extra in (RUNS[0], RUNS[2]))
        same = {k: spark[k] for k in SAME} == {k: local[k] for k in SAME}
        status |= 0 if same else 1
        partial = "" if local["complete"] else " (partial)"
        print(f"{name:24} {local['distinct_states']:>9,} {local['transitions']:>11,} {local['depth']:>5} "
              f"{local['seconds']:>8.1f} {spark['seconds']:>8.1f} {'yes' if same else 'NO'}{partial}", flush=True)
    print("every config: the same counts, depth and verdicts on both engines" if status == 0 else
          "some config differs between the engines")
    return status


def main(argv: list[str] | None = None) -> int:
    """Run the three engines on one config and print the figures and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", nargs="?", default="default", help="config name or path (default: default)")
    p.add_argument("--max-states", type=int, help="bound every run (the runs are then partial)")
    p.add_argument("--all", action="store_true", help="every shipped config, local against spark local[2]")
    args = p.parse_args(argv)
    if args.all:
        return every_config(args.max_states)
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
