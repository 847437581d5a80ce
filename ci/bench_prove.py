"""Benchmark of `kcm prove`: solver time of each induction proof per rule set and cluster size, and BMC per depth.

With --configs, `kcm prove` itself on every shipped config instead (the induction with each config's brokers and
rules, BMC of `tiny` to depth 5, the two seeded bugs on 3 brokers), each case its own process, wall seconds and
the summed solver seconds; with --baseline REV as well, each case runs alternately with `checkers/prove/` as it
was at git revision REV (loaded in its place) and as it is, and the ratio new / baseline is printed per case and
in total (alternating evens out the load of a shared machine).

Prints figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcm.checkers.prove.encoding import Encoding
from kcm.checkers.prove.invariants import INVARIANTS, invariant
from kcm.checkers.prove.proofs import bmc, prove
from kcm.model.tables import rule_set

ROOT = Path(__file__).resolve().parent.parent
# Runs `kcm` with the package kcm.checkers.prove loaded from the folder in KCM_BENCH_PROVE, when set.
_DRIVER = """
import importlib.util, os, sys
folder = os.environ.get("KCM_BENCH_PROVE")
if folder:
    class _Baseline:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "kcm.checkers.prove":
                return None
            return importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                          submodule_search_locations=[folder])
    sys.meta_path.insert(0, _Baseline)
from kcm.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def _cases() -> list[tuple[str, list[str]]]:
    names = sorted(p.stem for p in (ROOT / "specs" / "configs").glob("*.json"))
    return [*[(n, ["--config", n]) for n in names], ("bmc5-tiny", ["--bmc", "5", "--config", "tiny"]),
            ("bug-no-leader-epoch-bump", ["--brokers", "3", "--bug", "no-leader-epoch-bump"]),
            ("bug-no-controller-epoch-check", ["--brokers", "3", "--bug", "no-controller-epoch-check"])]


def _run(args: list[str], baseline: str | None) -> tuple[float, float]:
    """Wall seconds of one `kcm prove ... --json` process and the solver seconds it reports."""
    env = dict(os.environ, KCM_BENCH_PROVE=baseline or "")
    start = time.perf_counter()
    # From the repository root, so that a config NAME cannot be taken for a file of the same name elsewhere.
    done = subprocess.run([sys.executable, "-c", _DRIVER, "prove", *args, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"kcm prove {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-300:]}") from None
    results = data["results"] if isinstance(data, dict) else data
    return wall, sum(r["solver_seconds"] for r in results)


def configs(rev: str | None) -> None:
    """`kcm prove` on every shipped config, alone or alternately with checkers/prove/ at revision rev."""
    with tempfile.TemporaryDirectory() as tmp:
        baseline = None
        if rev:
            baseline = os.path.join(tmp, "prove")
            os.mkdir(baseline)
            listing = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{rev}:checkers/prove"],
                                     capture_output=True, text=True, check=True).stdout.split()
            for name in listing:
                if name.endswith(".py"):
                    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:checkers/prove/{name}"],
                                          capture_output=True, text=True, check=True).stdout
                    Path(baseline, name).write_text(text, encoding="utf-8")
        totals = [0.0, 0.0]
        for label, args in _cases():
            new = _run(args, None)
            line = f"{label:<30} wall {new[0]:7.2f} s  solver {new[1]:7.2f} s"
            totals[0] += new[0]
            if baseline:
                old = _run(args, baseline)
                totals[1] += old[0]
                line += f"  | baseline wall {old[0]:7.2f} s  solver {old[1]:7.2f} s  ratio {new[0] / old[0]:.3f}"
            print(line, flush=True)
        summary = f"total wall {totals[0]:.1f} s"
        if baseline:
            summary += f", baseline {rev} {totals[1]:.1f} s, ratio {totals[0] / totals[1]:.3f}"
        print(summary)


def main() -> int:
    """Time every proof for 3 and 5 brokers under both rule sets, then BMC of one invariant per depth."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--brokers", type=int, nargs="+", default=[3, 5])
    p.add_argument("--bmc-depth", type=int, default=6)
    p.add_argument("--bmc-brokers", type=int, default=2)
    p.add_argument("--configs", action="store_true", help="time `kcm prove` on every shipped config instead")
    p.add_argument("--baseline", metavar="REV", help="with --configs: also run checkers/prove/ as at git REV")
    args = p.parse_args()
    if args.configs:
        configs(args.baseline)
        return 0
    for rules in ("seeds", "kafka"):
        for n in args.brokers:
            enc = Encoding(rule_set(rules), n)
            start = time.perf_counter()
            times = {inv.name: prove(enc, inv).seconds for inv in INVARIANTS}
            total = time.perf_counter() - start
            cells = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in times.items())
            print(f"induction rules={rules} brokers={n}: total {total:.2f} s; {cells}")
    enc = Encoding(rule_set("seeds"), args.bmc_brokers)
    for depth in range(1, args.bmc_depth + 1):
        r = bmc(enc, invariant("OneLiveLeaderPerEpoch"), depth)
        print(f"bmc OneLiveLeaderPerEpoch brokers={args.bmc_brokers} depth={depth}: {r.verdict}, {r.seconds:.2f} s")
    for bug, switch in (
        ("no-leader-epoch-bump", "bump_epoch_on_election"),
        ("no-controller-epoch-check", "brokers_check_controller_epoch"),
    ):
        name = "OneLiveLeaderPerEpoch" if switch == "bump_epoch_on_election" else "ControllerEpochMonotone"
        enc = Encoding(rule_set("seeds"), 3, **{switch: False})
        r = prove(enc, invariant(name), trace_depth=7)
        steps = len(r.counterexample.actions) if r.counterexample and r.counterexample.actions else 0
        print(f"bug {bug}: {name} {r.verdict} (trace of {steps} steps) in {r.seconds:.2f} s, brokers=3")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
