"""Benchmark of `kcm suite`: generate the suite of each config named and print its size against the graph.

For each config: the scenarios and their explored steps, the distinct states, transitions and maximal paths (of the
whole graph when acyclic, else of the BFS DAG), the ratio of maximal paths to scenarios, the coverage of every kind,
the wall and CPU time and the growth of the peak memory, against the targets of `controller` (100% of reachable
edges, operations and selectors, >= 10x fewer scenarios than maximal paths, under a minute).

    .venv/bin/python ci/bench_suite.py [CONFIG ...]        # default: tiny controller
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from kcm.checkers.conformance.suite import SuiteError, generate_suite

TARGET_SECONDS = 60.0
TARGET_RATIO = 10.0


def main(argv: list[str]) -> int:
    """Generate each config's suite in a scratch folder and print its figures; 1 when `controller` misses a target."""
    missed = False
    for name in argv or ["tiny", "controller"]:
        with tempfile.TemporaryDirectory() as out:
            wall, cpu = time.perf_counter(), time.process_time()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
            try:
                report = generate_suite(name, Path(out))
            except SuiteError as err:
                print(f"{name}: {err}", file=sys.stderr)
                return 2
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            # the growth of the process's peak: the graph's memory when this config is the first (or the largest)
            grown = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) * 1024
        paths = (f"{report.maximal_paths:,} maximal paths" if report.maximal_paths is not None else
                 f"cycles; {report.dag_maximal_paths:,} maximal paths of the BFS DAG")
        cov = report.coverage()
        full = all(c["covered"] == c["reachable"] for c in cov.values())
        print(f"{name}: {len(report.scenarios)} scenarios ({sum(report.steps)} explored steps); "
              f"{report.distinct_states:,} states, {report.transitions:,} transitions, {paths}; "
              f"ratio {report.ratio():,.1f}x; wall {wall:.1f} s, CPU {cpu:.1f} s "
              f"({report.transitions / max(cpu, 1e-9):,.0f} transitions per CPU second)")
        print(f"  peak RSS growth {grown / 2**20:.1f} MiB ({grown / report.distinct_states:,.0f} bytes a state; "
              "meaningful for the first config run or the largest)")
        print("  coverage: " + ", ".join(f"{k} {c['covered']}/{c['reachable']}" for k, c in cov.items()))
        if name == "controller":
            ok = full and report.ratio() >= TARGET_RATIO and wall < TARGET_SECONDS
            print(f"  targets (100% coverage, >= {TARGET_RATIO:g}x, < {TARGET_SECONDS:g} s): "
                  f"{'met' if ok else 'MISSED'}")
            missed = missed or not ok
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
