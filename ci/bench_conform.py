"""Benchmark of `kcm conform`: 100 scenarios through an adapter, timed from the command line.

Two adapters: a trivial one (a Python process that reads its stdin and prints one event, so every scenario is
judged and compared but nothing is shrunk) and the example controller of examples/toy_controller (a real run of
each scenario it implements; the rest exit 3). The 100 scenarios are the library's, taken in order and repeated
under new names to make up the count.

    .venv/bin/python ci/bench_conform.py [--scenarios 100] [--jobs 2] [--target 30]

Prints wall time, scenarios/s and the ratio to the target (at most 30 s for 100 scenarios on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcm.checkers.gate.gate import library_dir

ROOT = Path(__file__).resolve().parent.parent
TRIVIAL = "import sys\nsys.stdin.read()\nprint('{\"type\": \"broker_up\", \"broker\": 0}')\n"


def make_folder(into: Path, count: int) -> None:
    """Copy `count` library scenarios into a folder, repeating the library under new names as needed."""
    library = sorted(p for p in library_dir().rglob("*.json"))
    for i in range(count):
        src = library[i % len(library)]
        shutil.copy(src, into / f"{i:03d}-{src.stem}.json")


def timed(adapter: str, folder: Path, jobs: int) -> tuple[float, dict]:
    """Wall seconds of one `kcm conform` run and its JSON report."""
    cmd = [sys.executable, "-m", "kcm", "conform", "--adapter", adapter, "--scenarios", str(folder),
           "--jobs", str(jobs), "--json"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    seconds = time.perf_counter() - start
    if done.returncode == 2:
        raise SystemExit(f"bench_conform: kcm conform refused its input: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--target", type=float, default=30.0, help="seconds allowed for the run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcm-bench-conform-") as tmp:
        folder = Path(tmp, "scenarios")
        folder.mkdir()
        make_folder(folder, args.scenarios)
        trivial = Path(tmp, "trivial_adapter.py")
        trivial.write_text(TRIVIAL, encoding="utf-8")
        adapters = {"trivial": f"{sys.executable} {trivial}",
                    "toy controller": f"{sys.executable} {ROOT / 'examples' / 'toy_controller' / 'adapter.py'}"}
        print(f"kcm conform on {args.scenarios} scenarios, --jobs {args.jobs}, {os.cpu_count()} CPUs")
        for name, adapter in adapters.items():
            seconds, report = timed(adapter, folder, args.jobs)
            counts = ", ".join(f"{n} {k}" for k, n in report["counts"].items() if n)
            print(f"  {name:<15} {seconds:6.1f} s wall  {args.scenarios / seconds:6.1f} scenarios/s  "
                  f"{seconds / args.target:5.2f}x of the {args.target:g} s target  ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
