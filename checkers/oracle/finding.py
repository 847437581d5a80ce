"""One shape for what an oracle finds, shared by the trace oracle (`kcm check-trace`), the state-change log rules
(`kcm check-log`) and `kcm conform`: the id of the rule broken, the message, where, and the evidence.

Its own module so that the two oracles, which do not build on one another (`.importlinter`), share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """A rule broken (or a warning): `rule_id` (a catalogue property id, a trace-only rule id, or a kind of
    failure such as `divergence`), the `message` as printed, the location (`source`: which input, when known;
    `line`: its line), and the `evidence` the rule read (the state before, the event or log line, differences)."""

    rule_id: str
    message: str
    line: int | None = None
    source: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def rule(self) -> str:
        """The rule's id (the name `log_rules.Finding` always gave it)."""
        return self.rule_id

    @property
    def state_before(self) -> dict[str, Any]:
        """The part of the checker's state the rule judged against ({} when the evidence holds none)."""
        return self.evidence.get("state_before") or {}

    @property
    def location(self) -> dict[str, Any]:
        """Where: the input and its line (None where unknown)."""
        return {"source": self.source, "line": self.line}

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data: rule_id, message, location, evidence."""
        return {"rule_id": self.rule_id, "message": self.message, "location": self.location,
                "evidence": dict(self.evidence)}


__all__ = ["Finding"]
