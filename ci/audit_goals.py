"""Audit of the reachability goals of every shipped config: where a complete run first reaches each goal.

For each config (all of `specs/configs/` and `specs/configs/bugs/` by default, `large` only when named, as it
is millions of states whole), explores its space judging only its goals (`checkers/explore/goals.py`: up to the level
where the last goal is first reached, or whole while a goal is not reached; `--whole`: always whole) and prints
one table: states, depth and seconds of the run, then each goal and the depth where it is first reached, or
"never reached" with the reason the config states in `unreached_goals`. Exit 1 if a config leaves a goal
unreached without a reason, or states a reason for a goal it reaches. `tests/test_config_goals.py` runs the same
audit on the configs that finish in seconds; this script covers the rest.

    python ci/audit_goals.py [CONFIG...] [--max-states N] [--whole] [--json] [--skip CONFIG,...]
"""

from __future__ import annotations

import argparse
import json
import sys

from kcm.checkers.explore import goals

# Left out unless named: `large` is millions of states whole (estimated 6.8 million: docs/exploration.md).
TOO_LARGE = ("large",)


def main(argv: list[str] | None = None) -> int:
    """Run the audit and print the table; exit 1 on a goal left unreached without a reason."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("configs", nargs="*", help="config names (default: every shipped config but large)")
    p.add_argument("--max-states", type=int, help="stop each run after the level that reaches N states (partial)")
    p.add_argument("--skip", default="", help="comma-separated configs to leave out")
    p.add_argument("--whole", action="store_true",
                   help="explore each config whole (its full counts) even once every goal is reached")
    p.add_argument("--json", action="store_true", help="one JSON object per config instead of the table")
    args = p.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    names = args.configs or [c for c in goals.shipped_configs() if c not in TOO_LARGE]
    problems: list[str] = []
    for name in names:
        if name in skip:
            continue
        found = goals.audit(name, args.max_states, args.whole)
        problems += found.problems()
        if args.json:
            print(json.dumps({"config": found.config, "states": found.states, "transitions": found.transitions,
                              "depth": found.depth, "seconds": round(found.seconds, 1), "complete": found.complete,
                              "whole": found.whole,
                              "first_reached": found.first_reached, "reasons": found.reasons}), flush=True)
            continue
        partial = (" (partial: --max-states)" if not found.complete else "" if found.whole else
                   " (up to the level of the last goal reached)")
        print(f"{found.config}: {found.states:,} states{partial}, depth {found.depth}, {found.seconds:.1f} s",
              flush=True)
        for goal in found.first_reached:
            print(f"  {goal:28} {found.row(goal)}", flush=True)
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
