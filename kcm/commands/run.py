"""`kcm run`: run a scenario file through the reference controller (the contract's acceptance interface)."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.reference.scenario import InvalidScenario, read_file, run

NAME = "run"
HELP = "run a JSON scenario through the reference controller and print the result document"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm run`."""
    p.add_argument("scenario", help="the scenario file (JSON)")
    p.add_argument("--trace", action="store_true", help="add the per-step log to the result")


def main(args: argparse.Namespace) -> int:
    """Validate, run, print the result; exit 0 / 1 / 2 as the contract says."""
    try:
        doc = read_file(args.scenario)
    except OSError as err:
        print(f"kcm run: {args.scenario}: cannot read: {err.strerror or err}", file=sys.stderr)
        return 2
    except InvalidScenario as err:
        print(f"kcm run: {args.scenario}: invalid scenario: {err}", file=sys.stderr)
        return 2
    outcome = run(doc, trace=args.trace)
    print(json.dumps(outcome.result, indent=2))
    for line in outcome.mismatches:
        print(f"kcm run: {line}", file=sys.stderr)
    return outcome.exit_code
