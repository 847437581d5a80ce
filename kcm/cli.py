"""The `kcm` command: parses arguments, hands them to one subcommand module, prints, exits."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import NoReturn

import kcm.commands


def _commands() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(kcm.commands.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kcm.commands.{info.name}")
        found[module.NAME] = module
    return dict(sorted(found.items()))


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: bad input gets exit 2 and one line naming the flag and the problem."""

    def error(self, message: str) -> NoReturn:
        """Print one line and exit 2 (argparse would print the whole usage first)."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand found in kcm.commands."""
    parser = _Parser(prog="kcm", description="A checked model of Kafka's ZooKeeper-mode controller.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _commands().items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a refused flag (one line already printed), or --help: the code, as a return value
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "_main", None):
        parser.print_help()
        return 2
    try:
        return int(args._main(args) or 0)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
