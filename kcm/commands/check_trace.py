"""`kcm check-trace`: replay another implementation's JSONL trace against the model's rules."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.oracle_trace import check_file
from kcm.model.tables import DEFAULT_RULES, RULE_SETS, rule_set


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm check-trace`."""
    p.add_argument("trace", help="one JSON event per line, as specs/trace.schema.json describes")
    p.add_argument("--rules", default=DEFAULT_RULES, choices=sorted(RULE_SETS))
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")


def main(args: argparse.Namespace) -> int:
    """Replay the trace and print the verdict; 0 valid, 1 violation, 2 malformed or unreadable."""
    try:
        v = check_file(args.trace, rule_set(args.rules))
    except OSError as exc:
        print(f"kcm check-trace: cannot read {args.trace}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(v.to_json(), indent=2, sort_keys=True))
    elif v.malformed:
        print(f"kcm check-trace: {args.trace}: {v.message()}", file=sys.stderr)
    else:
        print(v.message())
    return 0 if v.ok else 2 if v.malformed else 1
