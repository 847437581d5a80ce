"""`kcm gate`: one CI command: scenario library, proofs, exploration of a small config, sample traces."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kcm.checkers.gate import DEFAULT_CONFIG, GateInputError, run_gate


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm gate`."""
    p.add_argument("--traces", help="folder of *.jsonl traces, with an optional manifest.json (default: specs/traces)")
    p.add_argument("--config", default=DEFAULT_CONFIG, help="explorer config name or path (default: tiny)")
    p.add_argument("--scenarios", help="folder of scenarios to run (default: the shipped library, specs/scenarios)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def main(args: argparse.Namespace) -> int:
    """Run the gate and print the report; exit 0 all passed, 1 a stage failed, 2 bad arguments."""
    try:
        report = run_gate(Path(args.traces) if args.traces else None, args.config,
                          Path(args.scenarios) if args.scenarios else None)
    except GateInputError as err:
        print(f"kcm gate: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report.text())
    return 0 if report.ok else 1
