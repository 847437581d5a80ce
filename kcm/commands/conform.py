"""`kcm conform`: run another implementation (an adapter command) through scenarios and judge it."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from kcm.checkers.conformance.conform import (
    DEFAULT_TIMEOUT,
    MAX_OUTPUT_BYTES,
    ConformInputError,
    Options,
    generate_suite_folder,
    load_scenarios,
    parse_adapter,
    run_conform,
)
from kcm.checkers.reports import ci_formats


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 1 and 256")
    return value


def _mib(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of MiB") from None
    if not 1 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 1 and 4096 MiB")
    return value << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm conform`."""
    p.add_argument("--adapter", required=True, metavar="COMMAND",
                   help="the implementation under test, one quoted command line: it reads a scenario on stdin "
                        "and writes its trace on stdout")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--scenarios", metavar="DIR", help="every *.json scenario under DIR (default: the library)")
    source.add_argument("--suite", metavar="CONFIG",
                        help="the scenarios kcm suite generates for an explorer config (or a folder it wrote)")
    p.add_argument("--rules", choices=("seeds", "kafka"),
                   help="judge every trace by this rule set (default: each scenario's own)")
    p.add_argument("--timeout", type=_positive, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"kill an adapter run after this long (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--out", metavar="DIR",
                   help="shrink each failure and write the smallest failing scenario and its trace here")
    p.add_argument("--jobs", type=_jobs, default=1, metavar="N", help="run N adapters at a time (default 1)")
    p.add_argument("--max-output", type=_mib, default=MAX_OUTPUT_BYTES, metavar="MIB",
                   help=f"stdout an adapter run may write (default {MAX_OUTPUT_BYTES >> 20} MiB)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    ci_formats.add_arguments(p)


def main(args: argparse.Namespace) -> int:
    """Run the scenarios through the adapter; exit 0 all that ran conform, 1 a failure, 2 bad input."""
    generated: str | None = None
    try:
        argv = parse_adapter(args.adapter)
        if args.suite and not Path(args.suite).is_dir():
            generated = tempfile.mkdtemp(prefix="kcm-suite-")
            folder, source = generate_suite_folder(args.suite, Path(generated)), f"kcm suite --config {args.suite}"
        elif args.suite or args.scenarios:
            folder = Path(args.suite or args.scenarios)
            source = str(folder)
        else:
            from kcm.checkers.gate.gate import library_dir

            folder, source = library_dir(), "the scenario library"
        scenarios = load_scenarios(folder)
        out = Path(args.out) if args.out else None
        if out is not None and out.exists() and not out.is_dir():
            raise ConformInputError(f"--out {out}: not a folder")
        opts = Options(argv, rules=args.rules, timeout=args.timeout, out=out, max_output=args.max_output)
        try:
            report = run_conform(scenarios, opts, source, jobs=args.jobs)
        except OSError as err:
            raise ConformInputError(f"--out {out}: cannot write {err.filename or ''}: {err.strerror or err}") \
                from None
        print(json.dumps(report.to_json(), indent=2) if args.json else report.text())
        try:
            ci_formats.write_outputs(report.cases(), args.junit_xml, args.sarif, args.github, args.markdown,
                                     "kcm conform")
        except OSError as err:
            raise ConformInputError(f"cannot write {err.filename}: {err.strerror}") from None
        return report.exit_code
    except ConformInputError as err:
        print(f"kcm conform: {err}", file=sys.stderr)
        return 2
    finally:
        if generated is not None:
            shutil.rmtree(generated, ignore_errors=True)
