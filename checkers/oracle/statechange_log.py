"""Parse Kafka's `state-change.log` (log4j output of "state.change.logger") into events, streaming.

Two families of message formats exist, and the parser knows both:

* legacy (Kafka 0.8 to 1.0): every controller message starts "Controller <id> epoch <epoch> ...", every broker
  message "Broker <id> ...", and partitions print as "[topic,partition]";
* prefixed (Kafka 1.1 to 3.x): messages start with "[Controller id=<id> epoch=<epoch>] " or "[Broker id=<id>] "
  and partitions print as "topic-partition".

Within a family the request bodies differ by release (0.8's "(Leader:1,ISR:1,2,LeaderEpoch:0,...)", 0.9+'s
"PartitionState(controllerEpoch=..., leader=..., leaderEpoch=...)", 2.4+'s "LeaderAndIsrPartitionState(topicName=...)",
3.x's "LeaderAndIsr(... leaderRecoveryState=...)"); those differences only serve to detect the version.

A line the parser does not know is counted and skipped. Lines are decoded with replacement characters, so binary
bytes, truncation and stack traces reach the regexes as ordinary (unmatched) text and never raise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO, NamedTuple

from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.strictjson import bounded_lines

# Event kinds (short strings: cheap to compare, readable in --json output).
PARTITION_CHANGE = "partition_state_change"
REPLICA_CHANGE = "replica_state_change"
LEADER_AND_ISR_SENT = "leader_and_isr_sent"
CONTROLLER_OTHER = "controller_other"
REFUSED_CHANGE = "refused_state_change"
LEADER_AND_ISR_RECEIVED = "leader_and_isr_received"
REQUEST_APPLIED = "request_applied"
REQUEST_IGNORED_STALE = "request_ignored_stale"
BROKER_OTHER = "broker_other"

# Version families a line can witness, from coarse to fine.
LEGACY = "legacy"  # 0.8-1.0 message style
PREFIXED = "prefixed"  # 1.1-3.x message style
V08 = "0.8"
V09_10 = "0.9-1.0"
V11_23 = "1.1-2.3"
V24_28 = "2.4-2.8"
V3 = "3.x"

# The names Kafka prints (the Scala case objects' toString) mapped explicitly onto the model's names, so a
# renamed or unknown state in some release shows up as an unknown line rather than as a silent mismatch. Every
# release from 0.8 on prints the same partition names; 0.8.0 knew only the first four replica states, and
# ReplicaDeletionStarted/Successful/Ineligible appear from 0.8.1 (topic deletion).
PARTITION_STATE_NAMES: dict[str, str] = {
    "NonExistentPartition": P.NON_EXISTENT,
    "NewPartition": P.NEW,
    "OnlinePartition": P.ONLINE,
    "OfflinePartition": P.OFFLINE,
}
REPLICA_STATE_NAMES: dict[str, str] = {
    "NewReplica": R.NEW,
    "OnlineReplica": R.ONLINE,
    "OfflineReplica": R.OFFLINE,
    "NonExistentReplica": R.NON_EXISTENT,
    "ReplicaDeletionStarted": R.DELETION_STARTED,
    "ReplicaDeletionSuccessful": R.DELETION_SUCCESSFUL,
    "ReplicaDeletionIneligible": R.DELETION_INELIGIBLE,
}


class Event(NamedTuple):
    """One recognised state-change log message; fields a format does not carry are None."""

    line: int
    kind: str
    side: str  # "controller" or "broker"
    node: int | None  # the controller's or broker's id
    controller_epoch: int | None  # the controller epoch the line carries (controller's own, or the request's)
    partition: str | None = None  # normalised "topic-partition"
    replica: int | None = None
    from_state: str | None = None
    to_state: str | None = None
    leader: int | None = None
    leader_epoch: int | None = None
    target_broker: int | None = None
    version: str | None = None  # the finest version family this line witnesses


class LogLine(NamedTuple):
    """A physical line (or one of several messages interleaved on it) with its 1-based number."""

    number: int
    text: str


# log4j's default state-change layout is "[%d] %p %m (%c)%n"; the date may also be ISO with a 'T', or unbracketed
# in a site's own layout.
_HEAD = re.compile(r"\[?\d{4}-\d\d-\d\d[ T][0-9:,.+\-Z]*\]? (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")
# A second log4j header further along the same physical line: two threads' output interleaved.
_NEXT_HEAD = re.compile(r"\[\d{4}-\d\d-\d\d[ T]")
_LOGGER_SUFFIX = " (state.change.logger)"

_PREFIX = re.compile(r"\[(Controller|Broker) id=(\d+)(?: epoch=(\d+))?\] ")

# Legacy (0.8-1.0) controller messages, after "Controller <id> epoch <epoch> ".
_LEGACY_CONTROLLER = re.compile(r"Controller (\d+) epoch (\d+) ")
_L_PARTITION = re.compile(r"changed partition \[([^,\]\s]+),(\d+)\] (?:state )?from (\w+) to (\w+)"
                          r"(?: with leader (-?\d+)| with assigned replicas [\d,]*)?$")
_L_REPLICA = re.compile(r"changed state of replica (\d+) for partition \[([^,\]\s]+),(\d+)\] from (\w+) to (\w+)$")
_L_SEND = re.compile(r"sending become-\w+ LeaderAndIsr request (.*?) (with correlationId \d+ )?to broker (\d+) "
                     r"for partition \[([^,\]\s]+),(\d+)\]$")
_L_REFUSED = re.compile(r"initiated state change (?:for partition|of replica \d+ for partition) \S+ from \w+ to \w+ "
                        r"failed")

# Legacy broker messages, after "Broker <id> ".
_LEGACY_BROKER = re.compile(r"Broker (\d+) ")
_L_RECEIVED = re.compile(r"received LeaderAndIsr request (.*) correlation id \d+ from controller (\d+) epoch (\d+) "
                         r"for partition \[([^,\]\s]+),(\d+)\]$")
_L_APPLIED = re.compile(r"(?:handling|completed) LeaderAndIsr request correlationId \d+ from controller (\d+) "
                        r"epoch (\d+) (?:starting|for) the become-\w+ transition for partition \[([^,\]\s]+),(\d+)\]$")
_L_IGNORED = re.compile(r"ignoring LeaderAndIsr request from controller (\d+) with correlation id \d+ since its "
                        r"controller epoch (\d+) is old")

# Prefixed (1.1-3.x) controller messages, after "[Controller id=<id> epoch=<epoch>] ".
_P_PARTITION = re.compile(r"Changed partition (\S+) (?:state )?from (\w+) to (\w+)"
                          r"(?: with state (.*)| with assigned replicas [\d,]*)?$")
_P_REPLICA = re.compile(r"Changed state of replica (\d+) for partition (\S+) from (\w+) to (\w+)$")
_P_SEND = re.compile(r"Sending become-\w+ LeaderAndIsr request (.*) to broker (\d+) for partition (\S+)$")
_P_REFUSED = re.compile(r"Initiated state change (?:for partition|of replica \d+ for partition) \S+ from \w+ to \w+ "
                        r"failed")

# Prefixed broker messages, after "[Broker id=<id>] ".
_P_RECEIVED = re.compile(r"Received LeaderAndIsr request (.*) correlation id \d+ from controller (\d+) epoch (\d+)"
                         r"(?: for partition (\S+))?$")
_P_APPLIED = re.compile(r"(?:Handling|Completed) LeaderAndIsr request correlationId \d+ from controller (\d+) "
                        r"epoch (\d+) (?:starting|for) the become-\w+ transition for partition (\S+)$")
_P_IGNORED = re.compile(r"Ignoring LeaderAndIsr request from controller (\d+) with correlation id \d+ since its "
                        r"controller epoch (\d+) is old")

# Request bodies: 0.8's LeaderIsrAndControllerEpoch text, and the key=value text of every later release.
_BODY_08 = re.compile(r"Leader:(-?\d+),ISR:[\d,]*,LeaderEpoch:(\d+),ControllerEpoch:(\d+)")
_BODY_KV_LEADER = re.compile(r"\bleader=(-?\d+)")
_BODY_KV_EPOCH = re.compile(r"\bleaderEpoch=(\d+)")
# A broker that cached an UpdateMetadata request (0.8: "cached leader info ...", 2.x: "Cached leader info ..." per
# partition and "Add N partitions ... from metadata cache ..." per request) applied it: it fences stale ones first.
_METADATA_APPLIED = re.compile(r"(?:for partition (\S+) )?in response to UpdateMetadata request sent by controller "
                               r"(\d+) epoch (\d+) ")
_BODY_TOPIC = re.compile(r"topicName='([^']*)', partitionIndex=(\d+)")


def _split_partition(text: str) -> str | None:
    """'topic-3' as printed by TopicPartition, checked: None when the tail is not a partition number."""
    topic, sep, num = text.rpartition("-")
    if not sep or not topic or not num.isdigit():
        return None
    return text


def _normalise(text: str | None) -> str | None:
    """A partition as printed by either family ("[topic,3]" or "topic-3") as "topic-3"; None if neither."""
    if text is None:
        return None
    if text.startswith("[") and text.endswith("]") and "," in text:
        topic, _, num = text[1:-1].rpartition(",")
        return f"{topic}-{num}" if topic and num.isdigit() else None
    return _split_partition(text)


def _body_leader(body: str) -> tuple[int | None, int | None, str | None]:
    """(leader, leader epoch, version witnessed) read from a LeaderAndIsr request or state text."""
    m = _BODY_08.search(body)
    if m:
        return int(m.group(1)), int(m.group(2)), None
    lm = _BODY_KV_LEADER.search(body)
    em = _BODY_KV_EPOCH.search(body)
    if not lm or not em:
        return None, None, None
    if "leaderRecoveryState=" in body or "partitionEpoch=" in body:
        version = V3
    elif body.startswith("LeaderAndIsrPartitionState("):
        version = V24_28
    elif body.startswith("PartitionState("):
        version = V11_23
    else:
        version = None
    return int(lm.group(1)), int(em.group(1)), version


def split_messages(number: int, raw: str) -> list[LogLine]:
    """The messages on one physical line: usually one, several when threads' output got interleaved."""
    starts = [m.start() for m in _NEXT_HEAD.finditer(raw, 1)]
    if not starts:
        return [LogLine(number, raw)]
    cuts = [0, *starts, len(raw)]
    return [LogLine(number, raw[a:b]) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def message_of(text: str) -> str | None:
    """The log message of a log4j line (header and logger name removed), or None if it has no header."""
    m = _HEAD.match(text)
    if not m:
        return None
    msg = text[m.end():].rstrip("\r\n ")
    if msg.endswith(_LOGGER_SUFFIX):
        msg = msg[: -len(_LOGGER_SUFFIX)]
    return msg


def parse_message(number: int, msg: str) -> Event | None:
    """The event one state-change message records, or None if the message is not one the parser knows."""
    c = msg[:1]
    if c == "[":
        m = _PREFIX.match(msg)
        if not m:
            return None
        rest = msg[m.end():]
        node = int(m.group(2))
        if m.group(1) == "Controller":
            epoch = int(m.group(3)) if m.group(3) is not None else None
            return _parse_prefixed_controller(number, node, epoch, rest)
        return _parse_prefixed_broker(number, node, rest)
    if c == "C":
        m = _LEGACY_CONTROLLER.match(msg)
        if not m:
            return None
        return _parse_legacy_controller(number, int(m.group(1)), int(m.group(2)), msg[m.end():])
    if c == "B":
        m = _LEGACY_BROKER.match(msg)
        if not m:
            return None
        return _parse_legacy_broker(number, int(m.group(1)), msg[m.end():])
    return None


def _partition_event(number: int, node: int, epoch: int | None, partition: str, frm: str, to: str,
                     leader: int | None, leader_epoch: int | None, version: str | None) -> Event | None:
    f, t = PARTITION_STATE_NAMES.get(frm), PARTITION_STATE_NAMES.get(to)
    if f is None or t is None:
        return None
    return Event(number, PARTITION_CHANGE, "controller", node, epoch, partition, None, f, t, leader, leader_epoch,
                 None, version)


def _replica_event(number: int, node: int, epoch: int | None, partition: str, replica: int, frm: str, to: str,
                   version: str) -> Event | None:
    f, t = REPLICA_STATE_NAMES.get(frm), REPLICA_STATE_NAMES.get(to)
    if f is None or t is None:
        return None
    return Event(number, REPLICA_CHANGE, "controller", node, epoch, partition, replica, f, t, None, None, None,
                 version)


def _parse_legacy_controller(number: int, node: int, epoch: int, rest: str) -> Event | None:
    if rest.startswith("changed partition"):
        m = _L_PARTITION.match(rest)
        if not m:
            return None
        leader = int(m.group(5)) if m.group(5) is not None else None
        return _partition_event(number, node, epoch, f"{m.group(1)}-{m.group(2)}", m.group(3), m.group(4), leader,
                                None, LEGACY)
    if rest.startswith("changed state of replica"):
        m = _L_REPLICA.match(rest)
        if not m:
            return None
        return _replica_event(number, node, epoch, f"{m.group(2)}-{m.group(3)}", int(m.group(1)), m.group(4),
                              m.group(5), LEGACY)
    if rest.startswith("sending become-"):
        m = _L_SEND.match(rest)
        if not m:
            return None
        leader, leader_epoch, _ = _body_leader(m.group(1))
        # 0.8.2 names the correlation id in this message; 0.9 to 1.0 do not.
        version = V08 if m.group(2) else V09_10
        return Event(number, LEADER_AND_ISR_SENT, "controller", node, epoch, f"{m.group(4)}-{m.group(5)}", None,
                     None, None, leader, leader_epoch, int(m.group(3)), version)
    if _L_REFUSED.match(rest):
        return Event(number, REFUSED_CHANGE, "controller", node, epoch, version=LEGACY)
    return Event(number, CONTROLLER_OTHER, "controller", node, epoch, version=LEGACY)


def _parse_legacy_broker(number: int, node: int, rest: str) -> Event | None:
    if rest.startswith("received LeaderAndIsr"):
        m = _L_RECEIVED.match(rest)
        if not m:
            return None
        body = m.group(1)
        leader, leader_epoch, _ = _body_leader(body)
        # 0.8 prints PartitionStateInfo "(LeaderAndIsrInfo:(Leader:..."; 0.9 to 1.0 print "PartitionState(...)".
        version = V08 if "LeaderAndIsrInfo:" in body else (V09_10 if body.startswith("PartitionState(") else LEGACY)
        return Event(number, LEADER_AND_ISR_RECEIVED, "broker", node, int(m.group(3)), f"{m.group(4)}-{m.group(5)}",
                     None, None, None, leader, leader_epoch, None, version)
    if rest.startswith(("handling LeaderAndIsr", "completed LeaderAndIsr")):
        m = _L_APPLIED.match(rest)
        if not m:
            return None
        return Event(number, REQUEST_APPLIED, "broker", node, int(m.group(2)), f"{m.group(3)}-{m.group(4)}",
                     version=LEGACY)
    if rest.startswith("ignoring LeaderAndIsr"):
        m = _L_IGNORED.match(rest)
        if not m:
            return None
        return Event(number, REQUEST_IGNORED_STALE, "broker", node, int(m.group(2)), version=LEGACY)
    m = _METADATA_APPLIED.search(rest)
    if m:
        return Event(number, REQUEST_APPLIED, "broker", node, int(m.group(3)), _normalise(m.group(1)),
                     version=LEGACY)
    return Event(number, BROKER_OTHER, "broker", node, None, version=LEGACY)


def _parse_prefixed_controller(number: int, node: int, epoch: int | None, rest: str) -> Event | None:
    if rest.startswith("Changed partition"):
        m = _P_PARTITION.match(rest)
        if not m:
            return None
        partition = _split_partition(m.group(1))
        if partition is None:
            return None
        leader = leader_epoch = version = None
        if m.group(4) is not None:
            leader, leader_epoch, version = _body_leader(m.group(4))
            if leader is None:
                return None
        return _partition_event(number, node, epoch, partition, m.group(2), m.group(3), leader, leader_epoch,
                                version or PREFIXED)
    if rest.startswith("Changed state of replica"):
        m = _P_REPLICA.match(rest)
        if not m:
            return None
        partition = _split_partition(m.group(2))
        if partition is None:
            return None
        return _replica_event(number, node, epoch, partition, int(m.group(1)), m.group(3), m.group(4), PREFIXED)
    if rest.startswith("Sending become-"):
        m = _P_SEND.match(rest)
        if not m:
            return None
        partition = _split_partition(m.group(3))
        leader, leader_epoch, version = _body_leader(m.group(1))
        if partition is None or leader is None:
            return None
        return Event(number, LEADER_AND_ISR_SENT, "controller", node, epoch, partition, None, None, None, leader,
                     leader_epoch, int(m.group(2)), version or PREFIXED)
    if _P_REFUSED.match(rest):
        return Event(number, REFUSED_CHANGE, "controller", node, epoch, version=PREFIXED)
    return Event(number, CONTROLLER_OTHER, "controller", node, epoch, version=PREFIXED)


def _parse_prefixed_broker(number: int, node: int, rest: str) -> Event | None:
    if rest.startswith("Received LeaderAndIsr"):
        m = _P_RECEIVED.match(rest)
        if not m:
            return None
        body = m.group(1)
        leader, leader_epoch, version = _body_leader(body)
        if m.group(4) is not None:
            partition = _split_partition(m.group(4))
        else:
            # 2.4+ no longer appends "for partition ..."; the request state names topic and index itself.
            tm = _BODY_TOPIC.search(body)
            partition = f"{tm.group(1)}-{tm.group(2)}" if tm else None
        if partition is None or leader is None:
            return None
        return Event(number, LEADER_AND_ISR_RECEIVED, "broker", node, int(m.group(3)), partition, None, None, None,
                     leader, leader_epoch, None, version or PREFIXED)
    if rest.startswith(("Handling LeaderAndIsr", "Completed LeaderAndIsr")):
        m = _P_APPLIED.match(rest)
        if m:
            partition = _split_partition(m.group(3))
            if partition is None:
                return None
            return Event(number, REQUEST_APPLIED, "broker", node, int(m.group(2)), partition, version=PREFIXED)
        # 2.x also logs a per-request summary "... from controller N for K partitions" with no epoch.
        return Event(number, BROKER_OTHER, "broker", node, None, version=PREFIXED)
    if rest.startswith("Ignoring LeaderAndIsr"):
        m = _P_IGNORED.match(rest)
        if m:
            return Event(number, REQUEST_IGNORED_STALE, "broker", node, int(m.group(2)), version=PREFIXED)
    m = _METADATA_APPLIED.search(rest)
    if m:
        return Event(number, REQUEST_APPLIED, "broker", node, int(m.group(3)), _normalise(m.group(1)),
                     version=PREFIXED)
    return Event(number, BROKER_OTHER, "broker", node, None, version=PREFIXED)


class ReadStats:
    """Counters the reader keeps while streaming: physical lines, messages, unknown messages."""

    __slots__ = ("lines", "messages", "unknown", "continuation", "unreadable", "unreadable_at")

    KEPT_LINE_NUMBERS = 10

    def __init__(self) -> None:
        self.lines = 0
        self.messages = 0
        self.unknown = 0  # messages with a log4j header the parser does not know, and headerless lines
        self.continuation = 0  # of those, headerless lines (stack traces, wrapped text, binary garbage)
        self.unreadable = 0  # lines that could not be read at all (too long, or numbers past any real value)
        self.unreadable_at: list[int] = []  # the first few of their line numbers

    def skip_unreadable(self, number: int) -> None:
        """Count a line that cannot be read; it is skipped."""
        self.unreadable += 1
        if len(self.unreadable_at) < self.KEPT_LINE_NUMBERS:
            self.unreadable_at.append(number)


# No state-change message is anywhere near this long; a longer "line" is binary data without newlines, and cutting
# it keeps the regexes' work bounded.
MAX_LINE_BYTES = 1 << 20


def decode_lines(raw_lines: Iterable[bytes]) -> Iterator[str]:
    """Bytes lines decoded as UTF-8, any invalid byte replaced (never an error), each cut to MAX_LINE_BYTES."""
    for raw in raw_lines:
        yield raw[:MAX_LINE_BYTES].decode("utf-8", "replace")


def file_lines(fh: BinaryIO) -> Iterator[str | None]:
    """The decoded lines of a binary file, each read with bounded memory; None for a line longer than
    MAX_LINE_BYTES (it cannot be a state-change message, and the reader skips it)."""
    for raw, whole in bounded_lines(fh, MAX_LINE_BYTES):
        yield raw.decode("utf-8", "replace") if whole else None


def read_events(lines: Iterable[str | None], stats: ReadStats) -> Iterator[Event]:
    """Stream the events of a state-change log's lines, counting what is read and what is skipped (a line given
    as None could not be read)."""
    number = 0
    for raw in lines:
        number += 1
        stats.lines = number
        if raw is None:
            stats.skip_unreadable(number)
            continue
        pieces = split_messages(number, raw) if "[" in raw[1:] and _NEXT_HEAD.search(raw, 1) else (
            (LogLine(number, raw),))
        for piece in pieces:
            msg = message_of(piece.text)
            if msg is None:
                if piece.text.strip():
                    stats.unknown += 1
                    stats.continuation += 1
                continue
            stats.messages += 1
            try:
                ev = parse_message(number, msg)
            except ValueError:  # a number no log holds (past Python's int-string limit): the line is unreadable
                stats.skip_unreadable(number)
                continue
            if ev is None:
                stats.unknown += 1
                continue
            yield ev
