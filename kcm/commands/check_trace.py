"""`kcm check-trace`: replay another implementation's JSONL trace against the model's rules."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.oracle.oracle_trace import TRACE_ONLY, Verdict, check_file
from kcm.checkers.reports import ci_formats
from kcm.model.tables import ORACLE_RULES, RULE_SETS, rule_set


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm check-trace`."""
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="one or more traces: one JSON event per line, as specs/trace.schema.json describes")
    p.add_argument("--rules", default=ORACLE_RULES, choices=sorted(RULE_SETS),
                   help=f"rule set to judge by (default: {ORACLE_RULES})")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON (a list with several traces)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--coverage", action="store_true", help="also print which table edges the traces exercised")
    ci_formats.add_arguments(p)


def case(path: str, v: Verdict) -> ci_formats.Case:
    """One trace's verdict as a CI case: failed at its line, with the broken rule."""
    c = ci_formats.Case("check-trace", path, file=path)
    if not v.ok:
        c.status, c.line, c.message = ci_formats.FAILED, v.line, (f"malformed: {v.rule}" if v.malformed else v.rule)
        c.rule = "malformed-trace" if v.malformed else v.rule_id  # the property's or trace-only rule's id
        c.rule_text = TRACE_ONLY.get(c.rule, "")
        c.detail = {"event": v.event, "state_focus": v.focus, "not_judged": v.not_judged,
                    "state_before": v.state_before}
    return c


def main(args: argparse.Namespace) -> int:
    """Replay each trace and print its verdict; 0 all valid, 1 a violation, 2 malformed or unreadable."""
    verdicts: list[tuple[str, Verdict]] = []
    for path in args.traces:
        try:
            verdicts.append((path, check_file(path, rule_set(args.rules))))
        except OSError as exc:
            print(f"kcm check-trace: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    if args.json:
        docs = [dict(v.to_dict(), trace=path) for path, v in verdicts]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2, sort_keys=True))
    for path, v in verdicts:
        if args.json:
            continue
        prefix = f"{path}: " if len(verdicts) > 1 else ""
        if v.malformed:
            print(f"kcm check-trace: {path}: {v.message()}", file=sys.stderr)
        else:
            print(prefix + v.message())
    try:
        ci_formats.write_outputs([case(p, v) for p, v in verdicts], args.junit_xml, args.sarif, args.github,
                                 args.markdown, "kcm check-trace")
        if args.html or args.coverage:
            from kcm.checkers.explore import coverage
            from kcm.checkers.reports import html_report

            cov = coverage.of_traces([p for p, _ in verdicts], args.rules)
            if args.coverage:
                print(coverage.text(cov))
            if args.html:
                html_report.write(args.html, html_report.traces_page(verdicts, cov))
    except OSError as err:
        print(f"kcm check-trace: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    if any(v.malformed for _, v in verdicts):
        return 2
    return 0 if all(v.ok for _, v in verdicts) else 1
