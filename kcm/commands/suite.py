"""`kcm suite`: the smallest set of shortest scenarios that covers what a config's exploration reaches."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kcm import flags


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm suite`."""
    p.add_argument("--config", required=True, metavar="NAME",
                   help="explorer config (a name in specs/configs or a file) whose whole graph the suite covers")
    p.add_argument("--out", required=True, metavar="DIR", help="folder the scenario documents are written to")
    p.add_argument("--traces", action="store_true",
                   help="also write each scenario's golden trace (the reference's run) as NAME.trace.jsonl")
    p.add_argument("--json", action="store_true", help="print the report as JSON, every reachable item listed")
    p.add_argument("--behaviours", action="store_true",
                   help="also cover every distinct behaviour of a step (its operation, moves, selectors and what it "
                        "did to the znodes): a larger suite that exercises each kind of step at least once")
    p.add_argument("--max-states", type=flags.count(1, flags.MAX_STATES), default=None, metavar="N",
                   help="refuse a config whose graph has more states than this (default 1,000,000: the whole graph "
                        "is held in memory, about 0.8 KB a state)")


def main(args: argparse.Namespace) -> int:
    """Generate the suite and print its report; 0 written, 2 bad config or folder."""
    from kcm.checkers.conformance.suite import MAX_SUITE_STATES, SuiteError, generate_suite

    if why := flags.prepare_folder(args.out):
        print(f"kcm suite: --out {args.out}: {why}", file=sys.stderr)
        return 2
    try:
        report = generate_suite(args.config, Path(args.out), traces=args.traces,
                                max_states=args.max_states or MAX_SUITE_STATES, behaviours=args.behaviours)
    except SuiteError as err:
        print(f"kcm suite: --config {args.config}: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.text())
    return 0
