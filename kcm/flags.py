"""Argument types for the command line: whole numbers and seconds within declared ranges, and the checks of the
files and folders a command writes, made before its work.

argparse calls these on the flag's text; a value outside the range is an argparse error (exit 2, one message
naming the flag), so no command ever starts with a NaN, an infinite timer or a count no run could reach.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path


def count(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number written in decimal, from low to high."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if not digits.isascii() or not digits.isdigit():
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number from {low:,} to {high:,}")
        if len(digits) > len(str(high)) + 1:  # never parse a thousand-digit number
            shown = text[:40] + ("..." if len(text) > 40 else "")
            raise argparse.ArgumentTypeError(f"{shown!r} is not from {low:,} to {high:,}")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:,} is not from {low:,} to {high:,}")
        return value

    parse.__name__ = "count"  # argparse names the type in its messages
    return parse


def seconds(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds from low to high."""

    def parse(text: str) -> float:
        try:
            value = float(text[:40])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds from {low:g} to {high:g}")
        return value

    parse.__name__ = "seconds"
    return parse


def prepare_folder(path: str) -> str | None:
    """Create an output folder before any work is done; why it cannot be written to, or None when it can."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return err.strerror or err.__class__.__name__
    return None if os.access(path, os.W_OK | os.X_OK) else "not a writable folder"


# The flags that name a file a command writes once its work is done (each command's own, --junit-xml, --sarif and
# --markdown of `checkers/reports/ci_formats.py`), by their argparse names: checked before the work (`unwritable`).
OUTPUT_FILES = ("html", "markdown", "junit_xml", "sarif", "output", "emit_trace")


def unwritable_file(path: str) -> str | None:
    """Why an output file cannot be written (None: it can), found before any work is done: a file asked for after
    an hour's exploration was refused only then, and the summary with it."""
    if not path:
        return "an empty file name"
    target = Path(path)
    try:
        if target.is_dir():
            return "a folder, not a file"
        if target.exists():
            return None if os.access(target, os.W_OK) else "not writable"
        folder = target.parent
        if not folder.is_dir():
            return f"no folder {folder} to write it in"
        return None if os.access(folder, os.W_OK | os.X_OK) else f"the folder {folder} is not writable"
    except OSError as err:
        return err.strerror or err.__class__.__name__


def unwritable(args: argparse.Namespace) -> str | None:
    """The first output file flag of `args` whose file cannot be written, and why (`--html X: ...`), or None."""
    for name in OUTPUT_FILES:
        value = getattr(args, name, None)
        if isinstance(value, str) and (why := unwritable_file(value)):
            return f"--{name.replace('_', '-')} {value}: {why}"
    return None


# Ranges of the counting flags (documented in docs/robustness.md).
MAX_STATES = 10**12
MAX_WALKS = 10**9
MAX_DEPTH = 10**6
MAX_SEED = 2**64 - 1
MAX_BMC_DEPTH = 50
MAX_SECONDS = 10**7
