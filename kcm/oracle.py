"""Public oracle API: check another implementation's events in-process against the model's rules."""

from __future__ import annotations

import json

from kcm.checkers.oracle_trace import Verdict, check_lines
from kcm.model.tables import rule_set

__all__ = ["Verdict", "check_events", "assert_valid"]


def check_events(events: list[dict], rules: str = "seeds") -> Verdict:
    """Replay a list of trace events (dicts in the check-trace schema) and return the verdict."""
    return check_lines([json.dumps(e) for e in events], rule_set(rules))


def assert_valid(events: list[dict], rules: str = "seeds") -> None:
    """Fail a test with kcm's first violation (for use in another project's pytest suite)."""
    v = check_events(events, rules)
    if not v.ok:
        raise AssertionError(f"kcm: event {v.line}: {v.rule}; event={v.event}; state before={v.state_before}")
