"""`kcm check-trace`: replay another implementation's JSONL trace against the model's rules."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.oracle_trace import check_lines
from kcm.model.tables import RULE_SETS, rule_set

NAME = "check-trace"
HELP = "replay a JSONL trace and report the first illegal step (exit 0 valid, 1 violation, 2 malformed)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm check-trace`."""
    p.add_argument("trace")
    p.add_argument("--rules", default="seeds", choices=sorted(RULE_SETS))


def main(args: argparse.Namespace) -> int:
    """Read the trace, replay it, print the verdict."""
    try:
        with open(args.trace, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        print(f"cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return 2
    v = check_lines(lines, rule_set(args.rules))
    if v.ok:
        print("valid")
        return 0
    print(f"line {v.line}: {v.rule}")
    if not v.malformed:
        print("event: " + json.dumps(v.event, sort_keys=True))
        print("state before: " + json.dumps(v.state_before, sort_keys=True))
    return 2 if v.malformed else 1
