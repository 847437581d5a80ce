"""Benchmark of `kcm bugs`: every catalogued variant, bug in and fixed, timed whole on one and on two processes.

Runs `kcm bugs --json` with `--jobs 1` and `--jobs 2` side by side in fresh processes and prints each run's wall
and CPU time, the load average around it, the variants that cost most, the speed-up of two jobs over one, and the
targets (the whole of `kcm bugs` within 60 s on 2 cores, every variant rediscovered and every fixed twin clean).
Whether the compiled build is in use is printed too (an edited module runs from source: `kcm/compiled.py`).

    .venv/bin/python ci/bench_bugs.py [--jobs 1,2] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

TARGET_SECONDS = 60.0


def run(jobs: int, names: list[str]) -> dict:
    """Run `kcm bugs --json` in a fresh process with this many jobs; its rows, wall and CPU seconds and load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    wall = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "bugs", "--json", "--jobs", str(jobs), *names],
                          capture_output=True, text=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"kcm bugs --jobs {jobs} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    rows = json.loads(done.stdout)["variants"]
    return {"jobs": jobs, "rows": rows, "wall": wall, "load": (load + os.getloadavg()[0]) / 2,
            "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}


def main(argv: list[str]) -> int:
    """Time `kcm bugs` whole on each number of jobs and print the figures; 1 when a target is missed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="1,2", help="comma-separated numbers of jobs to time (default 1,2)")
    ap.add_argument("names", nargs="*", help="variants (default: all)")
    args = ap.parse_args(argv)
    import kcm.checkers.gate.bugs  # noqa: F401  (what `kcm bugs` loads, to say where each module came from)

    from kcm import compiled
    back = compiled.fallen_back()
    print(f"compiled build: {len(compiled.compiled_modules())} modules compiled"
          + (f", {len(back)} from source (edited since the build: {', '.join(back)})" if back else ""))
    runs = [run(int(j), args.names) for j in args.jobs.split(",")]
    for r in runs:
        rows = r["rows"]
        found = sum(x["rediscovered"] for x in rows)
        clean = sum(x["fixed_clean"] for x in rows)
        print(f"--jobs {r['jobs']}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, load average about {r['load']:.1f}; "
              f"{found} of {len(rows)} rediscovered, {clean} of {len(rows)} fixed twins clean")
        costly = sorted(rows, key=lambda x: -(x["seconds"] + x["fixed_seconds"]))[:4]
        print("  costliest: " + ", ".join(f"{x['name']} {x['seconds']:.1f} + {x['fixed_seconds']:.1f} s "
                                         f"({x['states']:,} + {x['fixed_states']:,} states)" for x in costly))
    if len(runs) >= 2:
        print(f"speed-up of --jobs {runs[-1]['jobs']} over --jobs {runs[0]['jobs']}: "
              f"{runs[0]['wall'] / runs[-1]['wall']:.2f}x")
    best = min(r["wall"] for r in runs)
    ok = best <= TARGET_SECONDS and all(x["rediscovered"] and x["fixed_clean"] for r in runs for x in r["rows"])
    print(f"target (all of kcm bugs within {TARGET_SECONDS:g} s, every variant found, every twin clean): "
          f"{'met' if ok else 'MISSED'} ({best:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
