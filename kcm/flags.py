"""Argument types for the command line: whole numbers and seconds within declared ranges.

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


# Ranges of the counting flags (documented in docs/robustness.md).
MAX_STATES = 10**12
MAX_WALKS = 10**9
MAX_DEPTH = 10**6
MAX_SEED = 2**64 - 1
MAX_BMC_DEPTH = 50
MAX_SECONDS = 10**7
