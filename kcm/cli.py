"""The `kcm` command: parses arguments, hands them to one subcommand module, prints, exits.

Only the chosen subcommand's module is imported, so a command whose optional dependencies are missing (or a
module that fails to import) takes down that command alone, and says which extra to install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from kcm import DISTRIBUTION, __version__, flags

# name -> (module under kcm.commands, one-line help). Each module defines add_arguments(parser) and main(args).
COMMANDS: dict[str, tuple[str, str]] = {
    "bugs": ("bugs", "explore each bug variant with the bug in (a violation is expected) and fixed (none is expected)"),
    "check-log": ("check_log", "check a Kafka state-change.log (0.8 to 3.x) for illegal moves "
                               "(exit 0 clean, 1 violation, 2 unreadable)"),
    "check-trace": ("check_trace", "replay a JSONL trace and report the first illegal step "
                                   "(exit 0 valid, 1 violation, 2 malformed)"),
    "conform": ("conform", "drive another implementation (an adapter command) through scenarios and judge its traces "
                           "and results (exit 0 conforms, 1 a failure, 2 bad input)"),
    "coverage": ("coverage", "which table edges, operations and selectors the scenarios, traces or an exploration "
                             "exercised"),
    "explore": ("explore", "explore every interleaving of a bounded cluster and report each property's verdict"),
    "gate": ("gate", "CI gate: scenarios, prove, explore (tiny), check-trace over a folder; reports every failure"),
    "prove": ("prove", "prove the safety invariants inductive with Z3 (or --bmc K: bounded model checking)"),
    "report": ("report", "write one self-contained HTML report of a counterexample, its diff and the coverage"),
    "run": ("run", "run a JSON scenario through the reference controller and print the result document"),
    "suite": ("suite", "generate the smallest set of shortest scenarios covering a config's reachable table edges, "
                       "operations, selectors, goals and violations"),
    "table": ("table", "print the partition and replica transition tables of a rule set"),
}

# Top-level modules the core install leaves out -> the extra that brings them. The spark engine and the live mode
# import theirs on first use and report a missing one themselves (commands/explore.py, checkers/live/zk_server.py).
EXTRAS = {"numpy": "explore", "msgpack": "explore", "z3": "prove"}


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named in argv (the first word that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: bad input gets exit 2 and one line naming the flag and the problem."""

    def error(self, message: str) -> NoReturn:
        """Print one line and exit 2 (argparse would print the whole usage first)."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: every subcommand listed, the arguments of `command` declared (its module imported)."""
    parser = _Parser(prog="kcm", description="A checked model of Kafka's ZooKeeper-mode controller.")
    parser.add_argument("--version", action="version", version=f"kcm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(f"kcm.commands.{module_name}")
            module.add_arguments(p)
            p.set_defaults(_main=module.main)
    return parser


def missing_extra(err: ModuleNotFoundError) -> str | None:
    """The extra to install for a missing optional dependency, or None when the missing module is not one."""
    return EXTRAS.get((err.name or "").split(".")[0])


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _chosen(argv)
    try:
        parser = build_parser(command if command in COMMANDS else None)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # a refused flag (one line already printed), or --help: the code, as a value
            return exc.code if isinstance(exc.code, int) else 2
        if not getattr(args, "_main", None):
            parser.print_help()
            return 2
        if why := flags.unwritable(args):
            print(f"kcm {command}: {why}", file=sys.stderr)
            return 2
        return int(args._main(args) or 0)
    except ModuleNotFoundError as err:
        extra = missing_extra(err)
        if extra is None:
            raise
        print(f"kcm {command}: needs {err.name}, which the core install leaves out; install it with "
              f"pip install '{DISTRIBUTION}[{extra}]'", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C before a command took the signal over (kcm explore does): one line
        print(f"kcm {command}: interrupted" if command else "kcm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
