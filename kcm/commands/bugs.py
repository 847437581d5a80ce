"""`kcm bugs`: rediscover Kafka's catalogued controller and replication bugs from their variants alone."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kcm import flags
from kcm.checkers.core.bounded import BadConfig
from kcm.checkers.gate.bug_catalogue import VARIANTS


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm bugs`."""
    p.add_argument("names", nargs="*", metavar="NAME", help="variants to run (default: all); see --list")
    p.add_argument("--list", action="store_true", help="list the variants and exit")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--out", help="write each counterexample as a `kcm run` scenario NAME.json into this folder")
    p.add_argument("--max-states", type=flags.count(1, flags.MAX_STATES),
                   help="cap each exploration (a capped fixed run is not called clean)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report of the counterexamples")
    p.add_argument("--jobs", type=flags.count(1, 256), default=min(4, os.cpu_count() or 1), metavar="N",
                   help="explorations run at once, one process each (default: this machine's cores, at most 4); "
                        "the table is the same whatever N is, but for the seconds")


def main(args: argparse.Namespace) -> int:
    """Run the variants and print the table; exit 1 if one is not rediscovered or its fixed model is not clean."""
    if args.list:  # the catalogue alone: a core install (no NumPy, which the explorer needs) lists it too
        for v in VARIANTS:
            print(f"{v.name:12} {v.affected:>24} -> {v.fixed:10} breaks {', '.join(v.breaks)}: {v.title}")
        return 0
    from kcm.checkers.gate.bugs import check_all

    if args.out and (why := flags.prepare_folder(args.out)):
        print(f"kcm bugs: --out {args.out}: {why}", file=sys.stderr)
        return 2
    try:
        rows = check_all(args.names or None, args.max_states, args.jobs)
    except (KeyError, BadConfig) as err:
        print(f"kcm bugs: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kcm bugs: interrupted; nothing to resume (each exploration is short: run the variants again)",
              file=sys.stderr)
        return 130
    if args.out:
        folder = Path(args.out)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for row in rows:
                if row["scenario"] is not None:
                    (folder / f"{row['name']}.json").write_text(json.dumps(row["scenario"], indent=1) + "\n")
        except OSError as err:
            print(f"kcm bugs: --out {args.out}: {err.strerror or err}", file=sys.stderr)
            return 2
    ok = all(r["rediscovered"] and r["fixed_clean"] for r in rows)
    if args.json:
        print(json.dumps({"variants": [{k: v for k, v in r.items() if k not in ("scenario", "evidence")} for r in rows],
                          "all_rediscovered": all(r["rediscovered"] for r in rows),
                          "all_fixed_clean": all(r["fixed_clean"] for r in rows)}, indent=2))
    else:
        print(_table(rows))
    if args.html:
        from kcm.checkers.reports import html_report

        found = {r["name"]: r["evidence"] for r in rows if r.get("evidence")}
        try:
            html_report.write(args.html, html_report.bugs_page(rows, found))
        except OSError as err:
            print(f"kcm bugs: cannot write {args.html}: {err.strerror}", file=sys.stderr)
            return 2
    return 0 if ok else 1


def _table(rows: list[dict]) -> str:
    # The property column is as wide as its longest name, so a long one does not push its row out of line.
    wide = max([len("property broken"), *(len(r["property"] or "NOT FOUND") for r in rows)])
    head = (f"{'variant':12} {'property broken':{wide}} {'trace':>5} {'states':>8} {'time s':>7}   "
            f"{'fixed':6} {'states':>8} {'time s':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        fixed = "clean" if r["fixed_clean"] else ("partial" if not r["fixed_complete"] else "BROKEN")
        lines.append(f"{r['name']:12} {(r['property'] or 'NOT FOUND'):{wide}} {r['trace_length'] or '-':>5} "
                     f"{r['states']:>8,} {r['seconds']:>7}   {fixed:6} {r['fixed_states']:>8,} {r['fixed_seconds']:>7}")
        if r.get("error"):
            lines.append(f"{'':12} {r['error']}")
        if not r["fixed_clean"] and r["fixed_violations"]:
            lines.append(f"{'':12} fixed model violates: {', '.join(r['fixed_violations'])}")
    found = sum(r["rediscovered"] for r in rows)
    clean = sum(r["fixed_clean"] for r in rows)
    lines.append(f"{found} of {len(rows)} rediscovered, {clean} of {len(rows)} fixed configs clean")
    return "\n".join(lines)
