"""Replay a JSONL trace of another controller against the model's tables and epoch rules."""

from __future__ import annotations

import json
from typing import NamedTuple

from kcm.model.states import PartitionState, ReplicaState
from kcm.model.tables import RuleSet


class Verdict(NamedTuple):
    """Outcome of a replay: ok, or the first violation (line, event, rule broken, state before it)."""

    ok: bool
    line: int = 0
    event: dict | None = None
    rule: str = ""
    state_before: dict | None = None
    malformed: bool = False


class _Replay:
    """Mutable replay state: the last known state of each partition/replica and the epochs seen."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.partitions: dict[str, str] = {}
        self.replicas: dict[str, str] = {}
        self.controller_epoch = 0
        self.leader_epochs: dict[str, int] = {}

    def snapshot(self) -> dict:
        """The replay state as JSON-able data, for reports."""
        return {"controller_epoch": self.controller_epoch, "partitions": dict(self.partitions),
                "replicas": dict(self.replicas), "leader_epochs": dict(self.leader_epochs)}

    def apply(self, ev: dict) -> str:
        """Apply one event; return the name of the rule it breaks, or '' if legal."""
        kind = ev["type"]
        if kind == "controller_elected":
            epoch = int(ev["epoch"])
            if epoch <= self.controller_epoch:
                return f"controller epoch must increase: {epoch} after {self.controller_epoch}"
            self.controller_epoch = epoch
        elif kind == "partition_state_change":
            key = str(ev["partition"])
            cur = self.partitions.get(key, PartitionState.NON_EXISTENT)
            if cur != ev["from"] or not self.rules.allows_partition(cur, ev["to"]):
                return f"partition table: {cur} -> {ev['to']} not allowed by rule set {self.rules.name}"
            self.partitions[key] = ev["to"]
        elif kind == "replica_state_change":
            key = f"{ev['partition']}/{ev['replica']}"
            cur = self.replicas.get(key, ReplicaState.NON_EXISTENT)
            if cur != ev["from"] or not self.rules.allows_replica(cur, ev["to"]):
                return f"replica table: {cur} -> {ev['to']} not allowed by rule set {self.rules.name}"
            self.replicas[key] = ev["to"]
        elif kind == "leader_and_isr_write":
            key = str(ev["partition"])
            epoch = int(ev["leader_epoch"])
            if epoch <= self.leader_epochs.get(key, -1):
                return f"leader epoch must increase: {epoch} after {self.leader_epochs[key]}"
            if int(ev.get("controller_epoch", self.controller_epoch)) < self.controller_epoch:
                return "epoch fencing: write with a stale controller epoch"
            self.leader_epochs[key] = epoch
        else:
            raise ValueError(f"unknown event type {kind!r}")
        return ""


def check_lines(lines: list[str], rules: RuleSet) -> Verdict:
    """Replay JSONL lines; stop at the first malformed line or violation."""
    replay = _Replay(rules)
    for no, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            ev = json.loads(text)
            if not isinstance(ev, dict) or "type" not in ev:
                raise ValueError("an event is a JSON object with a 'type'")
            before = replay.snapshot()
            broken = replay.apply(ev)
        except (ValueError, KeyError, TypeError) as exc:
            return Verdict(False, no, None, f"malformed: {exc}", None, malformed=True)
        if broken:
            return Verdict(False, no, ev, broken, before)
    return Verdict(True)
