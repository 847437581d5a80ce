"""`kcm run`: run a scenario file through the reference controller (the contract's acceptance interface)."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.core.scenario import InvalidScenario, read_file, run


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm run`."""
    p.add_argument("scenario", help="the scenario file (JSON)")
    p.add_argument("--trace", action="store_true", help="add the per-step log to the result")
    p.add_argument("--zookeeper", metavar="HOST:PORT",
                   help="live mode: mirror every ZooKeeper effect on this real server (needs the live extra)")
    p.add_argument("--coverage", action="store_true",
                   help="also print on stderr which table edges, operations and selectors the scenario exercised")
    p.add_argument("--emit-trace", metavar="FILE",
                   help="also write the golden trace: the reference's own run of the scenario in the trace format "
                        "(one JSON event per line, as `kcm check-trace` reads)")


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
    if args.zookeeper is not None:
        from kcm.checkers.live.live import LiveError, run_live

        try:
            outcome = run_live(doc, args.zookeeper, trace=args.trace)
        except LiveError as err:
            print(f"kcm run: {args.scenario}: --zookeeper {args.zookeeper}: {err}", file=sys.stderr)
            return 2
    else:
        outcome = run(doc, trace=args.trace)
    if args.emit_trace is not None:
        from kcm.checkers.oracle.oracle_inputs import scenario_trace

        try:
            with open(args.emit_trace, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(e, sort_keys=True) + "\n" for e in scenario_trace(doc))
        except OSError as err:
            print(f"kcm run: --emit-trace {args.emit_trace}: cannot write: {err.strerror or err}", file=sys.stderr)
            return 2
    print(json.dumps(outcome.result, indent=2))
    for line in outcome.mismatches:
        print(f"kcm run: {line}", file=sys.stderr)
    wanted = doc.get("expect_violation")
    if wanted and not any(line.startswith("expect_violation") for line in outcome.mismatches):
        from kcm.properties.catalogue import meaning

        # stderr, as the mismatches: stdout is the contract's result document alone
        print(f"kcm run: counterexample reproduced: {wanted['property']} is first violated after step "
              f"{wanted['step']} ({meaning(wanted['property'])})", file=sys.stderr)
    if args.coverage:  # stderr: stdout is the contract's result document alone
        from kcm.checkers.explore import coverage

        for cov in coverage.of_scenarios([args.scenario]).values():
            print(coverage.text(cov), file=sys.stderr)
    return outcome.exit_code
