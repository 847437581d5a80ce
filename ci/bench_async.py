"""Benchmark of the KIP-320 async configs: time to the stale-follower violation, and time to close the fixed space.

Runs, each as its own `kcm explore --json` process, side by side in one run:
- `bugs/KIP-320` on the local engine (one process, stopping at the first violation): states, depth and seconds to
  the violation (target: under 30 s);
- `async-kip320` (the fixed twin) explored whole with `--workers 2` and with one process (target: closes, its
  count printed, in under 15 minutes);
- with --unreduced, the same two configs without the `ignored_requests` reduction, for the ratio: the bug run in
  full, the fixed one bounded by --max-states (default 300,000; it does not close in minutes).

Printed per run: distinct states, transitions, depth, complete, the violated properties, exploration seconds, CPU
seconds of the process (user + system) and states/s, then the ratios. Exit 1 if a run's verdict is not the expected
one (the bug found, the fixed space closed clean).

    python ci/bench_async.py [--unreduced] [--max-states N] [--skip-single]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KCM = [sys.executable, "-m", "kcm"]


def config_without_reduction(name: str, folder: Path) -> str:
    """A copy of the shipped config with no `reductions`, written into folder; its path."""
    cfg = json.loads((ROOT / "specs" / "configs" / f"{name}.json").read_text())
    cfg.pop("reductions", None)
    cfg["name"] = f"{cfg['name']} (unreduced)"
    path = folder / (name.replace("/", "-") + "-unreduced.json")
    path.write_text(json.dumps(cfg))
    return str(path)


def explore(label: str, config: str, *flags: str) -> dict[str, Any]:
    """One `kcm explore --json` process: its summary, wall seconds and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*KCM, "explore", "--config", config, "--json", "--quiet", *flags],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"{label}: kcm explore exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    summary = json.loads(proc.stdout)
    summary["label"] = label
    summary["wall"] = wall
    summary["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary["violated"] = sorted(n for n, v in summary["verdicts"].items() if v == "violated")
    return summary


def row(s: dict[str, Any]) -> str:
    """One line of the table."""
    rate = s["distinct_states"] / s["seconds"] if s["seconds"] else 0.0
    return (f"{s['label']:42} {s['distinct_states']:>10,} {s['transitions']:>11,} {s['depth']:>5} "
            f"{'yes' if s['complete'] else 'no':>8} {s['seconds']:>9.1f} {s['cpu']:>8.1f} {rate:>9,.0f}  "
            f"{', '.join(s['violated']) or '-'}")


def main() -> int:
    """Run the configs, print the table and the ratios; exit 1 if a verdict is not the expected one."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--unreduced", action="store_true", help="also run both configs without the reduction")
    p.add_argument("--max-states", type=int, default=300_000, help="bound of the unreduced fixed run")
    p.add_argument("--skip-single", action="store_true", help="close the fixed config with --workers 2 only")
    args = p.parse_args()
    runs = [explore("bugs/KIP-320, local, to the violation", "bugs/KIP-320"),
            explore("async-kip320, --workers 2, closed", "async-kip320", "--workers", "2", "--continue")]
    if not args.skip_single:
        runs.append(explore("async-kip320, local, closed", "async-kip320", "--continue"))
    if args.unreduced:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            runs.append(explore("bugs/KIP-320 unreduced, local", config_without_reduction("bugs/KIP-320", folder)))
            runs.append(explore(f"async-kip320 unreduced, local, <= {args.max_states:,}",
                                config_without_reduction("async-kip320", folder), "--continue",
                                "--max-states", str(args.max_states)))
    print(f"{'run':42} {'states':>10} {'transitions':>11} {'depth':>5} {'complete':>8} {'seconds':>9} {'cpu s':>8} "
          f"{'states/s':>9}  violated")
    for s in runs:
        print(row(s))
    bug, fixed = runs[0], runs[1]
    print(f"time to the KIP-320 violation: {bug['seconds']:.1f} s (target < 30 s)")
    print(f"fixed async config closed with --workers 2: {fixed['distinct_states']:,} states in "
          f"{fixed['seconds']:.1f} s (target < 900 s)")
    if not args.skip_single:
        print(f"--workers 2 against one process: {runs[2]['seconds'] / fixed['seconds']:.2f}x")
    if args.unreduced:
        plain_bug, plain_fixed = runs[-2], runs[-1]
        print(f"reduction, bug run: {plain_bug['distinct_states'] / bug['distinct_states']:.1f}x fewer states, "
              f"{plain_bug['seconds'] / bug['seconds']:.1f}x faster; fixed run: the unreduced space had "
              f"{plain_fixed['distinct_states']:,} states at depth {plain_fixed['depth']} "
              f"({'closed' if plain_fixed['complete'] else 'not closed'}) after {plain_fixed['seconds']:.1f} s")
    ok = "LogsAgreeBelowHw" in bug["violated"] and fixed["complete"] and not fixed["violated"]
    ok = ok and all(s["complete"] and not s["violated"] for s in runs[2:3] if not args.skip_single)
    if not ok:
        print("UNEXPECTED: the bug was not found, or the fixed space did not close clean")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
