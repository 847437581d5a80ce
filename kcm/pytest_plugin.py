"""pytest plugin (entry point `pytest11`): the `kcm_oracle` fixture, which fails a test at kcm's first violation.

Another project's test feeds the events its controller emitted (or a trace file) to the fixture; a test whose
events break a rule of the model fails with the line, the rule, the event and the model's state before it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from kcm.model.tables import ORACLE_RULES


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare --kcm-rules (and the kcm_rules ini key): which rule set's tables the oracle judges with."""
    group = parser.getgroup("kcm", "kcm oracle")
    group.addoption("--kcm-rules", default=None, help="kcm rule set for the kcm_oracle fixture (default: kafka)")
    parser.addini("kcm_rules", "kcm rule set for the kcm_oracle fixture", default=ORACLE_RULES)


class KcmOracle:
    """What a test holds: feed events as they happen, or whole lists and files, and fail at the first violation."""

    def __init__(self, rules: str) -> None:
        from kcm.oracle import TraceChecker

        self.rules = rules
        self._checker = TraceChecker(rules)

    def feed(self, event: dict[str, Any]) -> None:
        """Judge one more event; fail the test now if it is the first illegal one."""
        __tracebackhide__ = True
        v = self._checker.feed(event)
        if v is not None:
            raise AssertionError(self._message(v, "event"))

    def feed_all(self, events: Iterable[dict[str, Any]]) -> None:
        """Judge events in order, continuing what was fed before; fail at the first illegal one."""
        __tracebackhide__ = True
        for event in events:
            self.feed(event)

    def check_file(self, path: str | Path) -> None:
        """Judge a JSONL trace file on its own (fresh state); fail the test at its first illegal line."""
        __tracebackhide__ = True
        from kcm.oracle import check_trace_file

        v = check_trace_file(path, self.rules)
        if not v.ok:
            raise AssertionError(self._message(v, f"{path} line"))

    def verdict(self) -> Any:
        """The verdict on the events fed so far (a kcm.oracle.Verdict), without failing."""
        return self._checker.verdict()

    def _message(self, v: Any, source: str) -> str:
        from kcm.oracle import failure_message

        return failure_message(v, source)


@pytest.fixture
def kcm_oracle(request: pytest.FixtureRequest) -> KcmOracle:
    """A fresh kcm oracle per test, judging with the rule set --kcm-rules or the kcm_rules ini key names."""
    rules = request.config.getoption("--kcm-rules") or request.config.getini("kcm_rules")
    try:
        return KcmOracle(rules)
    except KeyError as exc:
        pytest.fail(f"kcm_oracle: {exc.args[0]}", pytrace=False)
