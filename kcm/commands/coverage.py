"""`kcm coverage`: which table edges, operations and selectors the scenarios, traces or an exploration exercised."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm coverage`."""
    p.add_argument("--scenarios", nargs="*", metavar="PATH",
                   help="scenario files or folders (default, with no other source: the shipped library)")
    p.add_argument("--config", action="append", metavar="NAME", help="explore this config and count its transitions")
    p.add_argument("--traces", nargs="+", metavar="TRACE", help="JSONL traces (as check-trace reads them)")
    p.add_argument("--rules", default=None, help="rule set the traces are counted against (default: kafka)")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")


def main(args: argparse.Namespace) -> int:
    """Collect and print the coverage reports; exit 2 on an unknown config or unreadable input."""
    from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
    from kcm.checkers.explore import coverage
    from kcm.checkers.gate.gate import library_dir
    from kcm.model.tables import ORACLE_RULES, RULE_SETS

    reports: list[coverage.Coverage] = []
    scenarios = args.scenarios
    if scenarios is None and not args.config and not args.traces:
        scenarios = [str(library_dir())]
    if scenarios is not None:
        files: list[Path] = []
        for name in scenarios or [str(library_dir())]:
            path = Path(name)
            if not path.exists():
                print(f"kcm coverage: {name}: no such file or folder", file=sys.stderr)
                return 2
            files += sorted(p for p in path.rglob("*.json")) if path.is_dir() else [path]
        reports += coverage.of_scenarios(files).values()
    for name in args.config or []:
        try:
            reports.append(coverage.of_exploration(BoundedSystem(load_config(name))))
        except BadConfig as err:
            print(f"kcm coverage: {err}", file=sys.stderr)
            return 2
    if args.traces:
        rules = args.rules or ORACLE_RULES
        if rules not in RULE_SETS:
            print(f"kcm coverage: --rules: unknown rule set {rules!r}", file=sys.stderr)
            return 2
        reports.append(coverage.of_traces(args.traces, rules))
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=1))
    else:
        print("\n".join(coverage.text(r) for r in reports))
    return 0
