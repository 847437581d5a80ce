"""Reduced against full searches, side by side in one run: states, depth, seconds, peak memory and verdicts.

    python ci/bench_reductions.py [CONFIG ...] [--max-states N]

Each config is explored twice by `kcm explore --continue --json` in its own process, once with every sound
reduction (`--reductions auto`) and once with none, and the figures are printed with their ratios, and level by
level (the states new at each level both runs reach, full over reduced); the verdicts (without
the state counts they quote) and the counterexamples' lengths must be the same (the script exits 1 otherwise).
With `--max-states N` each run stops after the level that reaches N, so a space too big to close is compared on
its first levels (`large --max-states 1500000`: the full run's levels 0-9). The peak memory is the process's own
maximum resident set (wait4's rusage), so runs do not blur each other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT = ["two-partitions", "controller", "tla-high-watermark"]


def run(config: str, reductions: str, max_states: int | None) -> dict:
    """One exploration in a child process: its summary, wall seconds and peak resident MiB (its own rusage)."""
    cmd = [sys.executable, "-m", "kcm.cli", "explore", "--config", config, "--continue", "--json", "--quiet",
           "--reductions", reductions]
    if max_states:
        cmd += ["--max-states", str(max_states)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest child's so far
        seconds = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode not in (0, 1, 3):
            sys.exit(f"bench_reductions: {config} --reductions {reductions} failed ({child.returncode}): "
                     f"{err.read().strip()}")
        summary = json.loads(out.read())
    return {"summary": summary, "seconds": seconds, "peak_mib": usage.ru_maxrss / 1024}


def kinds(verdicts: dict[str, str]) -> dict[str, str]:
    """Verdicts without the state counts a bounded run quotes ("not violated within N states")."""
    return {name: text.split(" within ")[0] for name, text in verdicts.items()}


def lengths(summary: dict) -> dict[str, int]:
    """Each counterexample's number of steps."""
    return {name: len(trace) for name, trace in summary["counterexamples"].items()}


def by_level(full: list, reduced: list) -> str:
    """States new at each level both runs reach (`levels`: [states, seconds] of each level made, level 1 first):
    full over reduced, level 1 first, and where the gap is widest."""
    pairs = [(i, f[0], r[0]) for i, (f, r) in enumerate(zip(full, reduced, strict=False), start=1) if f[0] and r[0]]
    if not pairs:
        return "none in common"
    widest = max(pairs, key=lambda p: p[1] / p[2])
    return (f"full/reduced from level 1: {' '.join(f'{f / r:.2f}' for _, f, r in pairs)}; widest at level {widest[0]} "
            f"({widest[1]:,} against {widest[2]:,})")


def main() -> int:
    """Print the side-by-side table; exit 1 if a reduced run's verdicts differ from the full run's."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="*", default=DEFAULT)
    parser.add_argument("--max-states", type=int)
    args = parser.parse_args()
    print(f"{'config':16} {'run':8} {'reductions':24} {'states':>10} {'depth':>5} {'seconds':>8} {'peak MiB':>8}")
    bad = 0
    for config in args.configs:
        full = run(config, "none", args.max_states)
        reduced = run(config, "auto", args.max_states)
        for label, r in (("full", full), ("reduced", reduced)):
            s = r["summary"]
            applied = "+".join(s["reductions"]["applied"]) or "none"
            print(f"{config:16} {label:8} {applied:24} {s['distinct_states']:>10,} {s['depth']:>5} "
                  f"{r['seconds']:>8.1f} {r['peak_mib']:>8.0f}")
        f, r = full["summary"], reduced["summary"]
        same = kinds(f["verdicts"]) == kinds(r["verdicts"]) and lengths(f) == lengths(r)
        bad += not same
        print(f"{config:16} ratio    states {f['distinct_states'] / max(1, r['distinct_states']):.3f}x fewer, "
              f"time {full['seconds'] / max(1e-9, reduced['seconds']):.2f}x, verdicts {'same' if same else 'DIFFER'}")
        print(f"{'':16} levels   {by_level(f['levels'], r['levels'])}")
        for name, why in r["reductions"]["refused"].items():
            print(f"{'':16} not applied: {name}: {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
