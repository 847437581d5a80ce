"""`kcm report`: explore a config and write one self-contained HTML report of its counterexamples and coverage."""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm report`."""
    p.add_argument("--config", default="tiny", help="a config name from specs/configs/ or a path (default: tiny)")
    p.add_argument("--max-states", type=int, help="stop after this many distinct states (the run is then partial)")
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="the HTML file to write")


def main(args: argparse.Namespace) -> int:
    """Explore (local engine) counting coverage, write the HTML; exit 0 written, 2 bad config or unwritable file."""
    from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
    from kcm.checkers.explore import bfs, coverage, liveness
    from kcm.checkers.reports import html_report

    try:
        model = BoundedSystem(load_config(args.config))
    except (BadConfig, ValueError) as err:
        print(f"kcm report: {err}", file=sys.stderr)
        return 2
    found = bfs.explore(model, args.max_states, coverage=True)  # coverage counted by the run itself
    liveness.add_verdicts(found, model, args.max_states)
    summary = found.to_json(model)
    summary["config"] = model.cfg.get("name", args.config)
    cov = coverage.of_run(model, found.tally, summary["config"]).to_dict()
    try:
        html_report.write(args.output, html_report.exploration_page(summary, cov))
    except OSError as err:
        print(f"kcm report: cannot write {args.output}: {err.strerror}", file=sys.stderr)
        return 2
    bad = ", ".join(summary["counterexamples"]) or "none"
    print(f"kcm report: wrote {args.output} (config {summary['config']}, {summary['distinct_states']:,} states, "
          f"violated: {bad})")
    return 0
