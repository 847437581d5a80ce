"""Benchmark of the reports of `kcm explore`: the plain run against the same run with `--coverage --html`.

The reports are counted during the run itself (`checkers/explore/coverage.py`, `Tally`), so they should cost little: the
target is at most 1.2x the plain run. Each run is its own `kcm explore --quiet --json` process; plain and reporting
runs alternate (`--rounds` of each) so that a changing load on a shared machine falls on both alike. Printed per
config: each run's wall seconds and CPU seconds (user + system of the process, steadier than wall time on a shared
machine), then the best and the median of each kind and their ratios. The reporting run's coverage must count one
operation per transition of its summary plus the set-up's steps, and both runs must agree on the states,
transitions and verdicts (exit 1 if not). With `--engine spark` the CPU seconds are the driver's Python process
alone (Spark's JVM and its Python workers are not counted there): compare the wall seconds.

    python ci/bench_reports.py [CONFIG...] [--rounds N] [--engine local|spark] [--workers N]

Default configs: `controller`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAME = ("distinct_states", "transitions", "depth", "complete", "verdicts")


def run(args: list[str]) -> tuple[float, float, dict[str, Any]]:
    """One `kcm explore` process: (wall seconds, CPU seconds, its JSON summary)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "explore", "--quiet", "--json", *args],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"bench_reports: kcm explore {' '.join(args)} exited {done.returncode}: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, json.loads(done.stdout)


def setup_steps(config: str) -> int:
    """How many scenario steps make the config's initial state (the coverage counts them too)."""
    from kcm.checkers.core.bounded import BoundedSystem, load_config

    return len(BoundedSystem(load_config(config)).scenario([])["steps"])


def bench(config: str, rounds: int, engine: list[str]) -> bool:
    """Alternate plain and reporting runs of one config; print them and the ratios; whether they agree."""
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "reports": []}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        page = str(Path(tmp) / "report.html")
        for r in range(rounds):
            plain = run(["--config", config, *engine])
            reports = run(["--config", config, *engine, "--coverage", "--html", page])
            for kind, (wall, cpu, summary) in (("plain", plain), ("reports", reports)):
                times[kind].append((wall, cpu))
                print(f"  {config:12} round {r + 1} {kind:8} wall {wall:7.2f} s  cpu {cpu:7.2f} s  "
                      f"({summary['distinct_states']:,} states, {summary['transitions']:,} transitions)", flush=True)
            a, b = plain[2], reports[2]
            if any(a[k] != b[k] for k in SAME):
                print(f"  {config}: the runs disagree on {[k for k in SAME if a[k] != b[k]]}")
                ok = False
            counted = sum(b["coverage"]["operations"].values())
            if counted != b["transitions"] + setup_steps(config):
                print(f"  {config}: the coverage counts {counted} operations for {b['transitions']} transitions")
                ok = False
            size = os.path.getsize(page)
    for what, i in (("wall", 0), ("cpu", 1)):
        p = [t[i] for t in times["plain"]]
        q = [t[i] for t in times["reports"]]
        print(f"{config:12} {what:4}  plain best {min(p):7.2f} s median {statistics.median(p):7.2f} s | "
              f"--coverage --html best {min(q):7.2f} s median {statistics.median(q):7.2f} s | "
              f"ratio best {min(q) / min(p):.3f} median {statistics.median(q) / statistics.median(p):.3f}")
    print(f"{config:12} HTML report {size:,} bytes")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if a reporting run disagrees with the plain one or miscounts its coverage."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("configs", nargs="*", default=["controller"])
    p.add_argument("--rounds", type=int, default=3, help="runs of each kind per config (default 3)")
    p.add_argument("--engine", choices=("local", "spark"), default="local")
    p.add_argument("--workers", type=int, default=1, help="local engine: worker processes (default 1)")
    args = p.parse_args(argv)
    engine = ["--engine", args.engine] + (["--workers", str(args.workers)] if args.workers > 1 else [])
    if args.engine == "spark":
        engine += ["--master", "local[2]"]
    ok = all([bench(config, max(1, args.rounds), engine) for config in args.configs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
