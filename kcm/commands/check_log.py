"""`kcm check-log`: check a real Kafka state-change.log against the rule set's tables and the epoch rules."""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.oracle.log_rules import KAFKA_VERSIONS, Report, check_file, line_text, report_dict
from kcm.checkers.reports import ci_formats
from kcm.model.tables import RULE_SETS


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm check-log`."""
    p.add_argument("file", help="a state-change.log written by Kafka's state.change.logger")
    p.add_argument("--kafka-version", default="auto", choices=KAFKA_VERSIONS,
                   help="the Kafka line that wrote the log (default: detected from the lines)")
    p.add_argument("--rules", default=None, choices=sorted(RULE_SETS),
                   help="rule set to check against (default: kafka-0.8 for a 0.8 log, kafka otherwise)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--coverage", action="store_true", help="also print which table edges the log exercised")
    ci_formats.add_arguments(p)


def _print_text(report: Report, line: str | None) -> None:
    print(f"lines read:        {report.lines_read}")
    print(f"events:            {report.events}")
    print(f"unknown lines:     {report.unknown_lines} ({report.headerless_lines} without a log4j header)")
    if report.unreadable_lines:
        at = ", ".join(map(str, report.first_unreadable))
        more = ", ..." if report.unreadable_lines > len(report.first_unreadable) else ""
        print(f"unreadable lines:  {report.unreadable_lines} (skipped; at line {at}{more})")
    print(f"partitions seen:   {report.partitions_seen}")
    print(f"detected version:  {report.detected_version}")
    print(f"rules:             {report.rules}")
    print(f"warnings:          {report.warnings} (missed transitions)")
    print(f"violations:        {report.violations}")
    if report.events == 0 and report.lines_read:
        print("note: no line was a state-change message this checker knows (wrong file or --kafka-version?)")
    for w in report.first_warnings[:3]:
        print(f"warning at line {w.line}: {w.message}")
    v = report.first_violation
    if v is not None:
        print(f"first violation at line {v.line}: {v.rule}: {v.message}")
        print(f"  line: {line}")
        print("  state before: " + json.dumps(v.state_before, sort_keys=True))
    for rid, why in sorted(report.not_judged.items()):
        print(f"not judged: {rid}: {why}")


def main(args: argparse.Namespace) -> int:
    """Read the log, check it, print the summary and the first violation."""
    try:
        with open(args.file, "rb") as fh:
            report = check_file(fh, args.kafka_version, args.rules)
            line = line_text(fh, report.first_violation.line) if report.first_violation else None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        print(f"kcm check-log: cannot read {args.file}: {reason}", file=sys.stderr)
        return 2
    if args.json:
        doc = report_dict(report)
        for found in [doc["first_violation"], *doc["first_warnings"]]:
            if found is not None:
                found["location"]["source"] = args.file
        if doc["first_violation"] is not None:
            doc["first_violation"]["text"] = line
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        _print_text(report, line)
    c = ci_formats.Case("check-log", args.file, file=args.file)
    v = report.first_violation
    if v is not None:
        c.status, c.line, c.message, c.rule = ci_formats.FAILED, v.line, v.message, v.rule
        c.detail = {"line": line, "state_before": v.state_before}
    try:
        ci_formats.write_outputs([c], args.junit_xml, args.sarif, args.github, args.markdown, "kcm check-log")
    except OSError as err:
        print(f"kcm check-log: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    if args.coverage:
        from kcm.checkers.explore import coverage

        print(coverage.text(coverage.of_log(args.file, args.kafka_version, report.rules)))
    return 0 if report.ok else 1
