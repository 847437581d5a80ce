"""`kcm gate`: one CI command: scenario library, proofs, exploration of a small config, sample traces."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kcm.checkers.gate.gate import DEFAULT_CONFIG, STAGES, GateInputError, run_gate
from kcm.checkers.reports import ci_formats


def _stages(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm gate`."""
    p.add_argument("--traces", help="folder of *.jsonl traces, with an optional manifest.json (default: specs/traces)")
    p.add_argument("--config", default=DEFAULT_CONFIG, help="explorer config name or path (default: tiny)")
    p.add_argument("--scenarios", help="folder of scenarios to run (default: the shipped library, specs/scenarios)")
    p.add_argument("--only", type=_stages, action="extend", metavar="STAGE[,STAGE]",
                   help=f"run only these stages ({', '.join(STAGES)})")
    p.add_argument("--skip", type=_stages, action="extend", metavar="STAGE[,STAGE]", help="leave these stages out")
    p.add_argument("--no-cache", action="store_true",
                   help="prove kcm's own model even when a proof of the same model hash passed before")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    ci_formats.add_arguments(p)


def main(args: argparse.Namespace) -> int:
    """Run the gate and print the report; exit 0 all passed, 1 a stage failed, 2 bad arguments."""
    try:
        report = run_gate(Path(args.traces) if args.traces else None, args.config,
                          Path(args.scenarios) if args.scenarios else None, only=args.only, skip=args.skip,
                          cache=not args.no_cache)
    except GateInputError as err:
        print(f"kcm gate: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report.text())
    try:
        ci_formats.write_outputs(report.cases(), args.junit_xml, args.sarif, args.github)
        if args.markdown:
            from kcm.checkers.reports import markdown_report

            markdown_report.append(args.markdown, markdown_report.gate_summary(report))
        if args.html:
            from kcm.checkers.reports import html_report

            html_report.write(args.html, html_report.gate_page(report))
    except OSError as err:
        print(f"kcm gate: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    return 0 if report.ok else 1
