"""Benchmark of the live mode: every library scenario run simulated and on a real ZooKeeper, side by side.

    .venv/bin/python ci/bench_live.py [--zookeeper HOST:PORT]

Without --zookeeper it uses the server `bash ci/zookeeper.sh start` left running in this checkout. It prints the
wall time of both runs of the library, their ratio, the ZooKeeper operations and notifications, and any scenario
whose live result differs from the simulated one (there should be none).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

from kcm.checkers.core.scenario import parse_text, run
from kcm.checkers.live.live import LiveError, run_live


def main() -> int:
    """Run the library both ways and print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zookeeper", metavar="HOST:PORT")
    args = p.parse_args()
    address = args.zookeeper
    if address is None:
        script = Path(__file__).resolve().parent / "zookeeper.sh"
        done = subprocess.run(["bash", str(script), "status"], capture_output=True, text=True)
        if done.returncode != 0:
            print("bench_live: no ZooKeeper: run `bash ci/zookeeper.sh start` or pass --zookeeper", file=sys.stderr)
            return 2
        address = done.stdout.strip()
    files = sorted(Path(str(resources.files("kcm.specs").joinpath("scenarios"))).rglob("*.json"))
    docs = [(f, parse_text(f.read_bytes())) for f in files]
    simulated, lived, operations, notifications, differ = 0.0, 0.0, 0, 0, []
    for f, doc in docs:
        t = time.perf_counter()
        plain = run(doc, trace=True)
        simulated += time.perf_counter() - t
        t = time.perf_counter()
        try:
            outcome = run_live(doc, address, trace=True)
        except LiveError as err:
            print(f"bench_live: {f.name}: {err}", file=sys.stderr)
            return 2
        lived += time.perf_counter() - t
        report = outcome.result.pop("zookeeper")
        operations += report["operations"]
        notifications += len(report["notifications"])
        if report["differences"] or {k: v for k, v in outcome.result.items() if k != "log"} != \
                {k: v for k, v in plain.result.items() if k != "log"}:
            differ.append(f.name)
    print(f"scenarios: {len(docs)}")
    print(f"simulated: {simulated:.2f} s ({1000 * simulated / len(docs):.1f} ms per scenario)")
    print(f"live:      {lived:.2f} s ({1000 * lived / len(docs):.1f} ms per scenario), "
          f"{operations} ZooKeeper operations, {notifications} watch notifications")
    print(f"ratio live / simulated: {lived / simulated:.0f}x")
    print(f"scenarios whose live result differs: {len(differ)}" + (f" ({', '.join(differ)})" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
