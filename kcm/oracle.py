"""Public oracle API: check another implementation's events in-process against the model's rules.

Every function and the streaming `TraceChecker` judge with the `kafka` rule set unless told otherwise (the same
default as `kcm check-trace`, `kcm check-log` and the pytest plugin).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kcm.checkers import oracle_trace
from kcm.checkers.oracle_trace import Verdict
from kcm.model.tables import ORACLE_RULES, rule_set

__all__ = ["ORACLE_RULES", "TraceChecker", "Verdict", "assert_valid", "check_events", "check_trace_file",
           "failure_message"]


class TraceChecker(oracle_trace.TraceChecker):
    """A streaming checker: `feed(event)` or `feed_line(text)` as events happen; each returns None while all is
    legal and the first failure's Verdict from then on; `verdict()` judges everything fed so far."""

    def __init__(self, rules: str = ORACLE_RULES) -> None:
        super().__init__(rule_set(rules))


def check_events(events: Iterable[dict[str, Any]], rules: str = ORACLE_RULES) -> Verdict:
    """Replay a list of trace events (dicts in the specs/trace.schema.json format) and return the verdict."""
    return oracle_trace.check_events(events, rule_set(rules))


def check_trace_file(path: str | Path, rules: str = ORACLE_RULES) -> Verdict:
    """Replay a JSONL trace file and return the verdict (OSError when it cannot be read)."""
    return oracle_trace.check_file(str(path), rule_set(rules))


def failure_message(v: Verdict, source: str = "event") -> str:
    """The assertion message for a failed verdict: kcm's first violation, the event and the state before it."""
    where = f"{source} {v.line}"
    if v.malformed:
        return f"kcm: {where} is malformed: {v.rule}"
    return f"kcm: {where}: {v.rule}\n  event: {v.event}\n  state before: {v.state_before}"


def assert_valid(events: Iterable[dict[str, Any]], rules: str = ORACLE_RULES) -> None:
    """Fail a test with kcm's first violation (for use in another project's pytest suite)."""
    v = check_events(events, rules)
    if not v.ok:
        raise AssertionError(failure_message(v))
