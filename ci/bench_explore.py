"""Benchmark of `kcm explore`: every engine on the same configs in one run, side by side, with ratios.

Each run is its own `kcm explore --json --continue` process. Printed per config and engine: distinct states,
transitions, exploration seconds, CPU seconds of the process (user + system; steadier than wall time on a shared
machine) and of the command alone (`cmd cpu`: without the interpreter's start and the first imports), states per
second of each, bytes per visited state, the ratios against the pure-Python local engine of the same run and
against `base` of the same run (by the command's CPU seconds), against the recorded baseline (the local engine
before this benchmark's changes, from the issue that asked for them), and, with --levels, the time of every
level. Every engine of this tree must report the same counts and verdicts (exit 1 if not); `base`, another
release, may differ (the line says whether it does).

Engines: `local` (pure Python, KCM_PURE=1), `compiled` (the same source compiled, when `ci/build_compiled.py`
has built it), `workers2` / `workers2c` (`--workers 2`, pure / compiled), `spark1` / `spark2` (Spark local[1] /
local[2]), and `base` (any other kcm tree, given with --base FOLDER: a folder holding a `kcm` package, e.g. an
older release, run side by side for a fair ratio). "vs local" compares CPU seconds for one-process engines and
exploration seconds (wall) for the others.

    python ci/bench_explore.py [CONFIG...] [--engines local,compiled] [--base FOLDER] [--levels]

An engine may be listed more than once (`base,compiled,base,compiled`): alternating runs even out the load of a
shared machine, and `vs base` compares with the mean of the base runs made so far.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The local engine's figures before this benchmark's changes (2 shared cores, one run each; the table).
BASELINE = {"controller": (34805, 12.8), "bugs/KIP-101": (121654, 59.9), "default": (511944, 172.6)}
SAME = ("distinct_states", "transitions", "depth", "complete", "verdicts")
ENGINES = {"local": ["--engine", "local"], "compiled": ["--engine", "local"], "base": ["--engine", "local"],
           "workers2": ["--engine", "local", "--workers", "2"],
           "workers2c": ["--engine", "local", "--workers", "2"],
           "spark1": ["--engine", "spark", "--master", "local[1]"],
           "spark2": ["--engine", "spark", "--master", "local[2]"]}


# The child process: the command's own CPU seconds (after the interpreter's start and kcm's imports) on stderr.
# kcm before numpy, as the `kcm` command imports them.
# With the compiled build, also the built modules that were imported from their source (edited since the build):
# such a run is slower without saying why.
CHILD = ("import sys, time; import kcm, numpy; from kcm.cli import main; start = time.process_time(); "
         "code = main(sys.argv[1:]); print(f'\\nbench-cpu {time.process_time() - start}', file=sys.stderr); "
         "from kcm import compiled; fb = getattr(compiled, 'fallen_back', list)(); "
         "print(f'bench-fallback {\",\".join(fb)}', file=sys.stderr) if fb else None; "
         "sys.exit(code)")
# Every engine imports byte-compiled Python, written once before the runs (compileall): a tree without bytecode,
# in an environment that forbids writing it (PYTHONDONTWRITEBYTECODE), would otherwise compile its modules again
# inside every measured run, more of them for a pure tree than for the compiled build.
PACKAGE_FOLDERS = ("kcm", "model", "reference", "properties", "checkers", "specs")


def run(config: str, engine: str, base: str | None, max_states: int | None) -> tuple[dict, float, float]:
    """One `kcm explore` process: its JSON summary (with `cmd_cpu`), wall seconds and CPU seconds (user + system)."""
    env = bytecode_env()
    if engine in ("local", "base", "workers2"):
        env["KCM_PURE"] = "1"
    if engine == "base":
        env["PYTHONPATH"] = base or ""
    cmd = [sys.executable, "-c", CHILD, "explore", "--config", config, "--quiet", "--json", *ENGINES[engine]]
    if engine != "base":
        cmd.append("--continue")
    if max_states is not None:
        cmd += ["--max-states", str(max_states)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/" if engine == "base" else None)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        summary = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except json.JSONDecodeError:
        summary = None
    if summary is None:
        sys.exit(f"bench_explore: {engine} on {config} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    if "bench-fallback " in done.stderr:
        names = done.stderr.rsplit("bench-fallback ", 1)[1].split()[0]
        print(f"bench_explore: {engine} imported {names} from source (edited since `ci/build_compiled.py`)",
              file=sys.stderr)
    mark = done.stderr.rsplit("bench-cpu ", 1)
    summary["cmd_cpu"] = float(mark[1].split()[0]) if len(mark) == 2 else cpu
    return summary, wall, cpu


def bytecode_env() -> dict[str, str]:
    """The environment of a benchmark process: Python's own, writing bytecode next to the sources as usual."""
    env = dict(os.environ)
    env.pop("KCM_PURE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_trees(folders: list[Path]) -> None:
    """Byte-compile the kcm sources of each tree once, before any measured run."""
    for folder in folders:
        if folder.is_dir():
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(folder)], env=bytecode_env(),
                           stdout=subprocess.DEVNULL, check=False)


def main(argv: list[str] | None = None) -> int:
    """Run the engines on each config and print the table and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("configs", nargs="*", default=["controller", "bugs/KIP-101"], help="configs (default: "
                   "controller bugs/KIP-101)")
    p.add_argument("--engines", default="local,compiled", help="comma-separated: local, compiled, spark1, spark2, "
                   "base (default local,compiled)")
    p.add_argument("--base", metavar="FOLDER", help="a folder holding another kcm package, run as engine `base`")
    p.add_argument("--max-states", type=int, help="bound every run (the runs are then partial)")
    p.add_argument("--levels", action="store_true", help="also print each level's states and seconds")
    args = p.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown or ("base" in engines and not args.base):
        print(f"bench_explore: unknown engines {unknown} (or `base` without --base)", file=sys.stderr)
        return 2
    if "compiled" in engines or "workers2c" in engines:
        sys.path.insert(0, str(ROOT))
        from kcm.compiled import MANIFEST
        if not MANIFEST.is_file():
            print("bench_explore: no compiled build (python ci/build_compiled.py); `compiled` is left out",
                  file=sys.stderr)
            engines = [e for e in engines if e not in ("compiled", "workers2c")]
    compile_trees([ROOT / f for f in PACKAGE_FOLDERS] + ([Path(args.base)] if "base" in engines else []))
    status = 0
    for config in args.configs:
        print(f"config {config}" + (f", --max-states {args.max_states}" if args.max_states else ""))
        print(f"{'engine':9} {'states':>9} {'transitions':>11} {'explore s':>9} {'cpu s':>7} {'cmd cpu':>7} "
              f"{'states/s':>9} {'states/cmd cpu s':>16} {'B/state':>7} {'vs local':>9} {'vs base':>8} "
              f"{'vs baseline':>11}")
        results = {}
        for engine in engines:
            summary, wall, cpu = run(config, engine, args.base, args.max_states)
            results.setdefault(engine, []).append((summary, wall, cpu))
            ref = results.get("local", results[engines[0]])[0]
            parallel = engine.startswith(("workers", "spark"))
            mine = summary["cmd_cpu"]
            vs_local = ((ref[0]["seconds"] / summary["seconds"] if summary["seconds"] else 0.0) if parallel
                        else (ref[0]["cmd_cpu"] / mine if mine else 0.0))
            # Against the mean of the base runs so far (an engine may be listed twice, for alternating runs).
            base_cpu = [r[0]["cmd_cpu"] for r in results.get("base", [])]
            vs_base = "-" if not base_cpu or parallel or not mine else f"{sum(base_cpu) / len(base_cpu) / mine:.2f}x"
            rate = summary["distinct_states"] / summary["seconds"] if summary["seconds"] else 0.0
            base = BASELINE.get(config)
            vs_baseline = (f"{rate / (base[0] / base[1]):.2f}x" if base and summary["distinct_states"] == base[0]
                           else "-")
            print(f"{engine:9} {summary['distinct_states']:>9,} {summary['transitions']:>11,} "
                  f"{summary['seconds']:>9.1f} {cpu:>7.1f} {mine:>7.1f} {rate:>9,.0f} "
                  f"{summary['distinct_states'] / mine if mine else 0.0:>16,.0f} {summary['bytes_per_state']:>7} "
                  f"{vs_local:>8.2f}x {vs_base:>8} {vs_baseline:>11}", flush=True)
            if args.levels and summary.get("levels"):
                print("  levels (states, s): " + ", ".join(f"{n}:{t:.2f}" for n, t in summary["levels"]))
        runs = [r[0] for engine, rs in results.items() if engine != "base" for r in rs]
        if runs:
            same = all({k: s[k] for k in SAME} == {k: runs[0][k] for k in SAME} for s in runs)
            print("  same counts, depth and verdicts on every engine of this tree:", "yes" if same else "NO")
            status |= 0 if same else 1
            if "base" in results:
                base_same = all({k: r[0][k] for k in SAME} == {k: runs[0][k] for k in SAME} for r in results["base"])
                print("  base (another release) gives the same counts and verdicts:", "yes" if base_same else "no")
    return status


if __name__ == "__main__":
    sys.exit(main())
