"""How long a stop takes to put a whole checkpoint on file, and to end, per engine, side by side.

For each engine asked for, runs `kcm explore --config CONFIG --checkpoint FILE` in its own process, sends it SIGTERM
AFTER seconds later (a level in the middle of its work), and times the lines the stop prints on stderr: the
signal's, `checkpoint of level N written` (a frontier above 100,000 states: the checkpoint is on file without the
frontier's states, and a SIGKILL from then on leaves it) and the process's end (the states stored too). A
smaller frontier's stop writes once, at the end. Prints per engine the level, the frontier, the two times, their
ratio and the file's size; then checks the file loads, with the frontier's states stored.

    python ci/bench_stop.py [--config large] [--after 90] [--engines local,workers,spark]
"""

from __future__ import annotations

import argparse
import json
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kcm.checkers.core.bounded import load_config
from kcm.checkers.explore import checkpoint

ENGINE_FLAGS = {"local": [], "workers": ["--workers", "2"], "spark": ["--engine", "spark"]}
WRITTEN = re.compile(r"checkpoint of level (\d+) written to .*; now storing its frontier's ([\d,]+) states")


def timed_stop(config: str, engine: str, after: float, folder: Path) -> dict:
    """One run stopped by SIGTERM `after` seconds in: the seconds to each stop line, and the file."""
    path = folder / f"{engine}.ckpt"
    proc = subprocess.Popen([sys.executable, "-m", "kcm", "explore", "--config", config, "--checkpoint", str(path),
                             "--json", *ENGINE_FLAGS[engine]], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put((time.monotonic(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(after)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout is not None
    summary = json.loads(proc.stdout.read() or "{}")
    proc.wait()
    ended = time.monotonic() - signalled
    reader.join(timeout=10)
    whole, level, frontier = None, None, None
    while not lines.empty():
        at, line = lines.get()
        found = WRITTEN.search(line)
        if found:
            whole, level, frontier = at - signalled, int(found[1]), int(found[2].replace(",", ""))
    try:
        snap = checkpoint.load(path, checkpoint.config_identity(load_config(config)))
    except checkpoint.BadCheckpoint as err:  # the run ended before it wrote one (stderr says why)
        raise SystemExit(f"bench_stop: {engine}: exit {proc.returncode}, no checkpoint ({err})") from None
    return {"engine": engine, "exit": proc.returncode, "level": snap.meta["depth"] if level is None else level,
            "frontier": snap.meta["sizes"][-1] if frontier is None else frontier, "whole": whole, "ended": ended,
            "stored": "states.ends" in snap.arrays, "bytes": path.stat().st_size,
            "states": summary.get("distinct_states")}


def main() -> int:
    """Run the stops and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="large")
    parser.add_argument("--after", type=float, default=90.0, help="seconds from the start to the SIGTERM")
    parser.add_argument("--engines", default="local,workers,spark")
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    if not engines or any(e not in ENGINE_FLAGS for e in engines):
        parser.error(f"--engines takes a comma-separated list of {', '.join(ENGINE_FLAGS)}")
    if not 0 <= args.after <= 86400:  # NaN fails too
        parser.error("--after takes seconds from 0 to 86400")
    try:
        load_config(args.config)
    except Exception as err:  # noqa: BLE001 - any config kcm refuses, said in one line
        parser.error(f"--config {args.config}: {err}")
    print(f"{args.config}: SIGTERM {args.after:.0f} s after the start")
    print(f"{'engine':8} {'exit':>4} {'level':>5} {'frontier':>10} {'whole file s':>12} {'end s':>7} {'end/whole':>9}"
          f" {'states stored':>13} {'MB':>7}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="kcm-bench-stop-") as tmp:
        for engine in engines:
            r = timed_stop(args.config, engine, args.after, Path(tmp))
            whole = r["whole"] if r["whole"] is not None else r["ended"]  # one write: whole at the end
            print(f"{engine:8} {r['exit']:>4} {r['level']:>5} {r['frontier']:>10,} {whole:>12.1f} {r['ended']:>7.1f} "
                  f"{r['ended'] / max(whole, 1e-9):>8.1f}x {str(r['stored']):>13} {r['bytes'] / 1e6:>7.1f}",
                  flush=True)
            failed = failed or r["exit"] != 3 or not r["stored"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
