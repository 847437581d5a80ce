"""The size estimate (`kcm explore --estimate`) against the real count, config by config.

For every shipped config that closes (specs/configs/*.json but `large`, or the configs named), runs
`kcm explore --config NAME --estimate [SECONDS] --json` and the whole search `kcm explore --config NAME --json
--quiet --continue`, each its own process on this machine, and prints: the estimate and its range, the real count,
their ratio, the depths, the seconds of the estimate against the seconds of the whole search, and the time the
estimate predicted for the local engine. `--fraction F` adds a second estimate capped at F of the real count
(`--max-states`), so that the extrapolation is measured on spaces the budget would close. `large` is checked
from its known level sizes (the reduced space `kcm explore` now explores, and the full ones of this and earlier
models), by a real estimate of it as shipped (against the reduced space's count; the whole search's seconds are
those of one `--workers 2` run), and with `--large CONFIG` by a real estimate of that config as it was (its file
from commit 801f570: 9,082,524 states before the data plane joined it).

    python ci/bench_estimate.py [CONFIG...] [--seconds 60] [--fraction 0.1] [--large CONFIG] [--save F | --known F]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kcm.checkers.explore import estimate

CONFIGS = Path(__file__).resolve().parent.parent / "specs" / "configs"
# `large` as `kcm explore` explores it by default, with the dead-broker reduction (2,296,237 states, depth 22; one
# `--workers 2` run).
LARGE_REDUCED = [1, 17, 173, 1274, 6866, 26454, 71616, 141298, 222549, 293690, 334255, 335458, 298480, 234810,
                 161447, 94996, 46338, 18285, 5969, 1752, 410, 83, 16]
LARGE_REDUCED_SECONDS = 682.0  # that run's seconds of search
# `large`'s level sizes from its whole run (level 0: the initial state; 16,995,524 states, depth 24), for the
# check that needs no run; LARGE_NOOP_DROPPED, the same before a reassignment to the current replicas completed as in
# Kafka 3.8 (15,290,235 states, depth 24); LARGE_THEN, before the data plane joined it (9,082,524 states, depth 17).
LARGE = [1, 17, 182, 1479, 9256, 43593, 150056, 381716, 760347, 1264424, 1814153, 2281596, 2526681, 2451069,
         2068112, 1496447, 926660, 484388, 214066, 82440, 27903, 8468, 2101, 343, 26]
LARGE_NOOP_DROPPED = [1, 17, 182, 1479, 9256, 43591, 150014, 381239, 756763, 1246018, 1750510, 2131174, 2271690,
                      2122963, 1740515, 1240870, 765653, 401492, 176982, 67762, 22802, 7029, 1874, 333, 26]
LARGE_THEN = [1, 13, 132, 1119, 7687, 39968, 154378, 438922, 915705, 1452372, 1799198, 1737021, 1319467, 763653,
              331813, 99592, 19522, 1961]


def kcm(*args: str) -> tuple[dict[str, Any], float]:
    """Run `kcm explore ARGS --json` in its own process: its summary and its wall seconds."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "explore", *args, "--json"], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1, 3):
        sys.exit(f"bench_estimate: kcm explore {' '.join(args)} failed: {done.stderr.strip()[:300]}")
    return json.loads(done.stdout), seconds


def row(name: str, est: dict[str, Any], real: int, depth: int, est_s: float, full_s: float | None) -> str:
    """One line of the table."""
    local = next((e["seconds"] for e in est["engines"] if e["engine"] == "local"), 0.0)
    ratio = est["distinct_states"] / real
    inside = "yes" if est["distinct_states_low"] <= real <= est["distinct_states_high"] else "NO"
    full = f"{full_s:8.1f}" if full_s is not None else "       -"
    return (f"{name:28} {est['distinct_states']:>11,} {est['distinct_states_low']:>11,}-"
            f"{est['distinct_states_high']:<11,} {real:>10,} {ratio:6.2f} {inside:>5} {est['depth']:>3}/{depth:<3} "
            f"{est_s:7.1f} {full} {local:9.1f}  {'exact' if est['closed'] else len(est['exact_levels'])}")


def main() -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="config names (default: every shipped one but large)")
    ap.add_argument("--seconds", default="60", help="the estimate's budget (kcm explore --estimate SECONDS)")
    ap.add_argument("--fraction", type=float, default=0.1, help="also estimate capped at this share of the real "
                    "count (0: not)")
    ap.add_argument("--large", metavar="CONFIG", help="also estimate this config of large against large's known count "
                    "(the config as it was then: git show 801f570:specs/configs/large.json)")
    ap.add_argument("--save", metavar="FILE", help="write the whole searches' summaries (states, depth, seconds) here")
    ap.add_argument("--known", metavar="FILE", help="take the whole searches' figures from a file --save wrote "
                    "instead of running them again")
    args = ap.parse_args()
    known: dict[str, Any] = json.loads(Path(args.known).read_text()) if args.known else {}
    saved: dict[str, Any] = {}
    names = args.configs or sorted(p.stem for p in CONFIGS.glob("*.json") if p.stem != "large")
    print(f"{'config':28} {'estimate':>11} {'range':^23} {'real':>10} {'ratio':>6} {'in':>5} {'depth':>7} "
          f"{'est s':>7} {'full s':>8} {'pred. s':>9}  levels")
    worst = 1.0
    for name in names:
        if name in known:
            real, full_s = known[name]
        else:
            real, full_s = kcm("--config", name, "--quiet", "--continue")
        saved[name] = [{"distinct_states": real["distinct_states"], "depth": real["depth"]}, full_s]
        if args.save:
            Path(args.save).write_text(json.dumps(saved, indent=1) + "\n")
        est, est_s = kcm("--config", name, "--estimate", args.seconds)
        print(row(name, est, real["distinct_states"], real["depth"], est_s, full_s), flush=True)
        worst = max(worst, est["distinct_states"] / real["distinct_states"],
                    real["distinct_states"] / est["distinct_states"])
        if args.fraction > 0:
            cap = max(10, int(real["distinct_states"] * args.fraction))
            capped, capped_s = kcm("--config", name, "--estimate", args.seconds, "--max-states", str(cap))
            print(row(f"  capped at {cap:,}", capped, real["distinct_states"], real["depth"], capped_s, None),
                  flush=True)
    for label, levels in (("large reduced", LARGE_REDUCED), ("large", LARGE),
                          ("large, no-op dropped", LARGE_NOOP_DROPPED), ("large then", LARGE_THEN)):
        total = sum(levels)
        for known in range(6, 13):
            p = estimate.project(levels[:known])
            print(f"{label + ', levels 0-' + str(known - 1) + ' known':28} {p.states:>11,} {p.low:>11,}-"
                  f"{p.high:<11,} {total:>10,} {p.states / total:6.2f} "
                  f"{'yes' if p.low <= total <= p.high else 'NO':>5} {p.depth:>3}/{len(levels) - 1:<3}")
    # `large` as shipped: its estimate at this budget against the real count of the space `kcm explore` explores.
    est, est_s = kcm("--config", "large", "--estimate", args.seconds)
    print(row("large (estimated)", est, sum(LARGE_REDUCED), len(LARGE_REDUCED) - 1, est_s,
              LARGE_REDUCED_SECONDS), flush=True)
    worst = max(worst, est["distinct_states"] / sum(LARGE_REDUCED), sum(LARGE_REDUCED) / est["distinct_states"])
    total = sum(LARGE_THEN)
    if args.large:
        est, est_s = kcm("--config", args.large, "--estimate", args.seconds)
        print(row("large", est, total, len(LARGE_THEN) - 1, est_s, None), flush=True)
    print(f"worst ratio over the configs run whole and `large` (either way): {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
