"""The rules a real Kafka state-change log is checked against, over the events of `statechange_log`.

* every partition and replica state change is a move of the rule set's table;
* the controller epoch never decreases across controller-side lines, and a broker never applies a LeaderAndIsr
  request whose controller epoch is older than one it already applied;
* per partition, the leader epoch of successive controller decisions and requests never decreases, and one
  (partition, leader epoch) never names two different leaders;
* a change starts from the state the previous logged change of that partition or replica ended in under the same
  controller epoch; when it does not, a transition was not logged (a "missed transition" warning, not a violation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import BinaryIO, NamedTuple

from kcm.checkers.oracle import statechange_log as scl
from kcm.checkers.oracle.finding import Finding
from kcm.model.states import PartitionState as P
from kcm.model.strictjson import bounded_lines
from kcm.model.tables import ORACLE_RULES, RuleSet, rule_set
from kcm.properties import catalogue

# --kafka-version values and the format family each one's lines come in (1.x spans both: 1.0 wrote the legacy
# messages, 1.1 introduced the prefixed ones).
KAFKA_VERSIONS = ("auto", "0.8", "0.9", "0.10", "0.11", "1.x", "2.x", "3.x")
_FAMILIES = {
    "0.8": {scl.LEGACY}, "0.9": {scl.LEGACY}, "0.10": {scl.LEGACY}, "0.11": {scl.LEGACY},
    "1.x": {scl.LEGACY, scl.PREFIXED}, "2.x": {scl.PREFIXED}, "3.x": {scl.PREFIXED},
}
_FAMILY_OF = {scl.LEGACY: scl.LEGACY, scl.V08: scl.LEGACY, scl.V09_10: scl.LEGACY, scl.PREFIXED: scl.PREFIXED,
              scl.V11_23: scl.PREFIXED, scl.V24_28: scl.PREFIXED, scl.V3: scl.PREFIXED}
# How many events are looked at to detect the version before the rule set has to be fixed.
DETECTION_WINDOW = 5000

RULE_PARTITION_TABLE = "ValidTransition"
RULE_REPLICA_TABLE = "ValidTransition"
RULE_CONTROLLER_EPOCH = "ControllerEpochMonotone"
RULE_BROKER_STALE_EPOCH = "EpochFencing"
RULE_LEADER_EPOCH = "LeaderEpochMonotone"
RULE_ONE_LEADER_PER_EPOCH = "OneLeaderPerEpoch"
# The catalogue properties (kcm.properties.catalogue) a state-change log can break, judged under their ids.
JUDGED = frozenset({RULE_PARTITION_TABLE, RULE_REPLICA_TABLE, RULE_CONTROLLER_EPOCH, RULE_BROKER_STALE_EPOCH,
                    RULE_LEADER_EPOCH, RULE_ONE_LEADER_PER_EPOCH})
# Every other catalogue id, with why a state-change log cannot show it (declared with each property).
NOT_JUDGED: dict[str, str] = catalogue.not_judged("log")
WARN_MISSED = "missed-transition"

# What each judged rule reads, as (counters one of which must be non-zero, why not when none is): a log that holds
# none of them leaves the rule unjudged, and the report says so (LogChecker.not_judged).
_CONTROLLER_EPOCHS = "controller lines with an epoch"
_LEADER_EPOCHS = "lines with a leader epoch"
_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "ValidTransition": ((scl.PARTITION_CHANGE, scl.REPLICA_CHANGE), "no partition or replica state change lines"),
    "ControllerEpochMonotone": ((_CONTROLLER_EPOCHS,), "no controller line carries a controller epoch"),
    "EpochFencing": ((scl.REQUEST_APPLIED,), "no line of a broker applying a controller's request"),
    "LeaderEpochMonotone": ((_LEADER_EPOCHS,), "no LeaderAndIsr or partition change line carries a leader epoch"),
    "OneLeaderPerEpoch": ((_LEADER_EPOCHS,), "no LeaderAndIsr or partition change line carries a leader epoch"),
}


class Report(NamedTuple):
    """The outcome of checking one log."""

    lines_read: int
    messages: int
    events: int
    unknown_lines: int
    headerless_lines: int  # of the unknown lines, those with no log4j header (stack traces, binary, cut heads)
    partitions_seen: int
    detected_version: str
    rules: str
    violations: int
    warnings: int
    first_violation: Finding | None
    first_warnings: list[Finding]
    unreadable_lines: int = 0  # lines skipped because they could not be read (over-long, absurd numbers)
    first_unreadable: tuple[int, ...] = ()  # the first few of their line numbers
    not_judged: dict[str, str] = {}  # noqa: RUF012 - a NamedTuple default, never mutated: rule id -> why

    @property
    def ok(self) -> bool:
        """Whether no rule was broken."""
        return self.violations == 0


class LogChecker:
    """Feeds on events in log order and records each rule broken; keeps only the last known state per key."""

    MAX_WARNINGS_KEPT = 10

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.partitions: dict[str, str] = {}
        self.replicas: dict[tuple[str, int], str] = {}
        self.controller_epoch: int | None = None
        self.controller_epoch_line = 0
        self.broker_epochs: dict[int, int] = {}
        self.leader_epochs: dict[str, int] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.seen: set[str] = set()
        self.kinds: Counter = Counter()  # what the log held, for the rules it could not judge
        self.events = 0
        self.violations = 0
        self.warnings = 0
        self.first_violation: Finding | None = None
        self.first_warnings: list[Finding] = []

    def _violation(self, ev: scl.Event, rule: str, message: str, before: dict) -> None:
        self.violations += 1
        if self.first_violation is None:
            self.first_violation = Finding(rule, message, ev.line, evidence={"state_before": before})

    def _warning(self, ev: scl.Event, message: str, before: dict) -> None:
        self.warnings += 1
        if len(self.first_warnings) < self.MAX_WARNINGS_KEPT:
            self.first_warnings.append(Finding(WARN_MISSED, message, ev.line, evidence={"state_before": before}))

    def _before(self, ev: scl.Event) -> dict:
        """The part of the checker's state an event is judged against (for reports)."""
        p = ev.partition
        out: dict = {"newest_controller_epoch": self.controller_epoch}
        if p is not None:
            out["partition"] = p
            out["partition_state"] = self.partitions.get(p)
            out["leader_epoch"] = self.leader_epochs.get(p)
            if ev.leader_epoch is not None:
                out["leader_at_that_epoch"] = self.leaders.get((p, ev.leader_epoch))
        if ev.replica is not None and p is not None:
            out["replica"] = ev.replica
            out["replica_state"] = self.replicas.get((p, ev.replica))
        if ev.side == "broker" and ev.node is not None:
            out["broker"] = ev.node
            out["broker_applied_controller_epoch"] = self.broker_epochs.get(ev.node)
        return out

    def feed(self, ev: scl.Event) -> None:
        """Check one event against every rule, then record what it changed."""
        self.events += 1
        kind = ev.kind
        kinds = self.kinds
        kinds[kind] += 1
        if ev.side == "controller" and ev.controller_epoch is not None:
            kinds[_CONTROLLER_EPOCHS] += 1
        if ev.leader_epoch is not None and ev.leader is not None:
            kinds[_LEADER_EPOCHS] += 1
        if ev.partition is not None:
            self.seen.add(ev.partition)
        if ev.side == "controller":
            self._controller_epoch(ev)
        if kind == scl.PARTITION_CHANGE:
            self._partition_change(ev)
        elif kind == scl.REPLICA_CHANGE:
            self._replica_change(ev)
        elif kind == scl.LEADER_AND_ISR_SENT:
            self._leader_decision(ev, monotonic=True)
        elif kind == scl.LEADER_AND_ISR_RECEIVED:
            # A broker logs receipt before it fences stale requests, so only the one-leader rule applies here.
            self._leader_decision(ev, monotonic=False)
        elif kind == scl.REQUEST_APPLIED:
            self._broker_applied(ev)

    def not_judged(self) -> dict[str, str]:
        """Each rule id the lines so far gave no means to judge, with why."""
        return {rid: why for rid, (what, why) in _NEEDS.items() if not any(self.kinds[k] for k in what)}

    def _controller_epoch(self, ev: scl.Event) -> None:
        epoch = ev.controller_epoch
        if epoch is None:
            return
        if self.controller_epoch is not None and epoch < self.controller_epoch:
            self._violation(ev, RULE_CONTROLLER_EPOCH,
                            f"controller {ev.node} logs epoch {epoch} after epoch {self.controller_epoch} "
                            f"(line {self.controller_epoch_line})", self._before(ev))
            return
        if self.controller_epoch is None or epoch > self.controller_epoch:
            if self.controller_epoch is not None:
                # A newly elected controller loads every state from ZooKeeper without logging it, and states moved
                # under other controllers meanwhile: what this log said last says nothing about the next change.
                self.partitions.clear()
                self.replicas.clear()
            self.controller_epoch = epoch
            self.controller_epoch_line = ev.line

    def _partition_change(self, ev: scl.Event) -> None:
        p, frm, to = ev.partition, ev.from_state, ev.to_state
        assert p is not None and frm is not None and to is not None
        prev = self.partitions.get(p)
        if prev is not None and prev != frm:
            self._warning(ev, f"partition {p} changes from {frm} but its last logged change ended in {prev}",
                          self._before(ev))
        if not self.rules.allows_partition(frm, to):
            self._violation(ev, RULE_PARTITION_TABLE,
                            f"partition {p}: {frm} -> {to} is not a move of rule set {self.rules.name}",
                            self._before(ev))
        if frm == P.NON_EXISTENT and to == P.NEW:
            # A partition created (again): a deleted topic's partition of the same name had its own leader epochs,
            # which the new znode (leader epoch 0) does not continue. As in the trace oracle, the creation is the
            # first line that shows the old znode gone (the deletion's own decisions come after NonExistentPartition).
            self.leader_epochs.pop(p, None)
            for gone in [k for k in self.leaders if k[0] == p]:
                del self.leaders[gone]
        if ev.leader_epoch is not None:
            self._leader_decision(ev, monotonic=True)
        self.partitions[p] = to

    def _replica_change(self, ev: scl.Event) -> None:
        p, r, frm, to = ev.partition, ev.replica, ev.from_state, ev.to_state
        assert p is not None and r is not None and frm is not None and to is not None
        key = (p, r)
        prev = self.replicas.get(key)
        if prev is not None and prev != frm:
            self._warning(ev, f"replica {r} of {p} changes from {frm} but its last logged change ended in {prev}",
                          self._before(ev))
        if not self.rules.allows_replica(frm, to):
            self._violation(ev, RULE_REPLICA_TABLE,
                            f"replica {r} of {p}: {frm} -> {to} is not a move of rule set {self.rules.name}",
                            self._before(ev))
        self.replicas[key] = to

    def _leader_decision(self, ev: scl.Event, monotonic: bool) -> None:
        p, epoch, leader = ev.partition, ev.leader_epoch, ev.leader
        if p is None or epoch is None or leader is None:
            return
        known = self.leaders.get((p, epoch))
        if known is not None and known != leader:
            self._violation(ev, RULE_ONE_LEADER_PER_EPOCH,
                            f"partition {p} leader epoch {epoch} names leader {leader}, earlier leader {known}",
                            self._before(ev))
        last = self.leader_epochs.get(p)
        if monotonic and last is not None and epoch < last:
            self._violation(ev, RULE_LEADER_EPOCH,
                            f"partition {p} leader epoch {epoch} after leader epoch {last}", self._before(ev))
        if known is None:
            self.leaders[(p, epoch)] = leader
        if monotonic and (last is None or epoch > last):
            self.leader_epochs[p] = epoch

    def _broker_applied(self, ev: scl.Event) -> None:
        broker, epoch = ev.node, ev.controller_epoch
        if broker is None or epoch is None:
            return
        newest = self.broker_epochs.get(broker)
        if newest is not None and epoch < newest:
            self._violation(ev, RULE_BROKER_STALE_EPOCH,
                            f"broker {broker} applies a request of controller epoch {epoch} after one of epoch "
                            f"{newest}", self._before(ev))
            return
        if newest is None or epoch > newest:
            self.broker_epochs[broker] = epoch


def detect_version(witnessed: Iterable[str]) -> str:
    """The finest Kafka version family consistent with the families the lines witnessed."""
    seen = set(witnessed)
    fine = [v for v in (scl.V3, scl.V24_28, scl.V11_23, scl.V09_10, scl.V08) if v in seen]
    if fine:
        return fine[0]
    if scl.PREFIXED in seen:
        return "1.1-3.x"
    if scl.LEGACY in seen:
        return "0.8-1.0"
    return "unknown"


def default_rules(version: str) -> str:
    """The rule set a log of that (given or detected) version is checked against when --rules is not given."""
    return "kafka-0.8" if version in ("0.8", scl.V08) else ORACLE_RULES


def check_events(events: Iterable[scl.Event], stats: scl.ReadStats, kafka_version: str = "auto",
                 rules: str | None = None) -> Report:
    """Check a stream of events; the version is detected on the first events unless given."""
    allowed = _FAMILIES.get(kafka_version)  # None: any family
    witnessed: set[str] = set()
    buffered: list[scl.Event] = []
    checker: LogChecker | None = None
    skipped = 0

    def start() -> LogChecker:
        version = kafka_version if kafka_version != "auto" else detect_version(witnessed)
        return LogChecker(rule_set(rules or default_rules(version)))

    for ev in events:
        if allowed is not None and ev.version is not None and _FAMILY_OF[ev.version] not in allowed:
            # A line in another release family's format: not this version's message, so not an event.
            skipped += 1
            continue
        if ev.version is not None:
            witnessed.add(ev.version)
        if checker is None:
            buffered.append(ev)
            if len(buffered) < DETECTION_WINDOW:
                continue
            checker = start()
            for b in buffered:
                checker.feed(b)
            buffered.clear()
        else:
            checker.feed(ev)
    if checker is None:
        checker = start()
        for b in buffered:
            checker.feed(b)
    detected = detect_version(witnessed)
    return Report(stats.lines, stats.messages, checker.events, stats.unknown + skipped, stats.continuation,
                  len(checker.seen),
                  detected, checker.rules.name, checker.violations, checker.warnings, checker.first_violation,
                  checker.first_warnings, not_judged=checker.not_judged())


def check_file(fh: BinaryIO, kafka_version: str = "auto", rules: str | None = None) -> Report:
    """Check an open (binary) state-change log file, streaming."""
    stats = scl.ReadStats()
    report = check_events(scl.read_events(scl.file_lines(fh), stats), stats, kafka_version, rules)
    return report._replace(unreadable_lines=stats.unreadable, first_unreadable=tuple(stats.unreadable_at))


def report_dict(report: Report) -> dict:
    """The report as JSON-able data (for --json)."""
    def finding(f: Finding | None) -> dict | None:
        # the keys check-log has always printed, then the shared shape of every oracle's finding
        return None if f is None else {"line": f.line, "rule": f.rule, "message": f.message,
                                       "state_before": f.state_before, **f.to_dict()}
    return {
        "ok": report.ok, "lines_read": report.lines_read, "messages": report.messages, "events": report.events,
        "unknown_lines": report.unknown_lines, "headerless_lines": report.headerless_lines,
        "partitions_seen": report.partitions_seen,
        "detected_version": report.detected_version, "rules": report.rules, "violations": report.violations,
        "warnings": report.warnings, "first_violation": finding(report.first_violation),
        "unreadable_lines": report.unreadable_lines, "first_unreadable": list(report.first_unreadable),
        "first_warnings": [finding(w) for w in report.first_warnings],
        "not_judged": dict(report.not_judged),
    }


def line_text(fh: BinaryIO, number: int, limit: int = 2000) -> str:
    """The text of physical line `number` (1-based) of a binary file, decoded with replacement and cut to limit."""
    fh.seek(0)
    for n, (raw, _) in enumerate(bounded_lines(fh, limit), 1):
        if n == number:
            return raw.decode("utf-8", "replace").rstrip("\r\n")
    return ""
