"""`kcm table`: print the transition tables of a rule set."""

from __future__ import annotations

import argparse
import sys

from kcm.model.render import MACHINES, GraphvizMissing, table_dot, table_json, table_markdown, table_svg
from kcm.model.tables import DEFAULT_RULES, RULE_SETS, rule_set


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm table`."""
    p.add_argument("--rules", default=DEFAULT_RULES, choices=sorted(RULE_SETS),
                   help=f"the rule set whose tables to print (default: {DEFAULT_RULES}; " +
                        "; ".join(f"{name}: {r.description}" for name, r in RULE_SETS.items()) + ")")
    p.add_argument("--machine", choices=MACHINES, help="only this state machine (default: both)")
    p.add_argument("--format", default="md", choices=("md", "json", "dot", "svg"))
    p.add_argument("--output", "-o", help="write to this file instead of stdout")


def main(args: argparse.Namespace) -> int:
    """Render the tables and print or write them."""
    rules = rule_set(args.rules)
    machines = (args.machine,) if args.machine else MACHINES
    render = {"md": table_markdown, "json": table_json, "dot": table_dot, "svg": table_svg}[args.format]
    try:
        text = render(rules, machines)
    except GraphvizMissing as exc:
        print(f"kcm table: {exc}", file=sys.stderr)
        return 2
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text if text.endswith("\n") else text + "\n")
        except OSError as err:
            print(f"kcm table: --output {args.output}: {err.strerror or err}", file=sys.stderr)
            return 2
    else:
        print(text)
    return 0
