"""Replay a JSONL trace of another controller against the model's tables, epoch, ISR and high-watermark rules.

The event format is `specs/trace.schema.json` (described in `specs/traces/README.md`). Every line is first
validated against the schema (a malformed line stops the replay, exit 2); then `Replay.apply` judges it against
what the earlier lines established and names the first rule it breaks.

Every message starts with the id of the rule broken: a property id of the catalogue (kcm.properties.catalogue)
where the trace can show that property, or one of TRACE_ONLY's ids for what a trace must say consistently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import jsonschema
from kcm.checkers.oracle.finding import Finding
from kcm.model import strictjson
from kcm.model.states import PartitionState, ReplicaState
from kcm.model.tables import RuleSet
from kcm.properties import catalogue

NO_LEADER = -1
_UNKNOWN = "?"  # a state machine's state a newly elected controller initialised without logging it

# The catalogue properties a trace can break, each judged from the events under its catalogue id.
JUDGED = frozenset({
    "LeaderInIsrInAr", "OneLeaderPerEpoch", "LeaderHwMonotone", "ControllerEpochMonotone", "ValidTransition",
    "ZkEpochFencing", "LeaderEpochMonotone", "CleanElection", "EpochFencing", "NoBrokerAheadOfZk",
})
# Every other catalogue id, with why a trace cannot show it (declared with each property: kcm.properties.facts).
NOT_JUDGED: dict[str, str] = catalogue.not_judged("trace")
# What a trace must say consistently about itself, beyond the catalogue's properties: id -> meaning.
TRACE_ONLY: dict[str, str] = {
    "TraceConsistent": "a state change starts from the state the trace left, and a broker goes up or down in turn",
    "LiveActors": "a broker known to be down elects, applies, appends or fetches nothing",
    "EpochsWereElected": "every controller epoch a write or request carries was elected",
    "ZkVersionGrows": "a partition znode's zkVersion strictly increases with every write",
    "PreferredElectionChoosesPreferred": "a preferred election chooses the first replica of AR",
    "RequestsCarryWrites": "a request carries only leader epochs written to ZooKeeper",
    "LeaderEpochFencing": "no broker applies a LeaderAndIsr with an older leader epoch than it applied",
    "OnlyLeadersAppend": "only the partition's leader appends produced records",
    "OffsetsConsistent": "appends start at the LEO, and no follower fetches or holds beyond its leader's LEO",
    "FetchFromLeader": "a follower fetches from its partition's leader, never from itself",
    "HwWithinLeo": "a replica's HW is within its LEO, and a follower's within its leader's HW",
}
_RULE_ID = re.compile(r"[A-Z][A-Za-z]+")

# Counters a replay keeps besides the event types (Replay.seen): the means some rules need.
_AR, _MARKED, _APPLIED = "replicas given", "election marked", "request applied"
_STATE_CHANGES = ("partition_state_change", "replica_state_change")
_LIVENESS = (("broker_up", "broker_down"), "no broker_up or broker_down events: which brokers are live is unknown")
_WRITES = (("leader_and_isr_write",), "no leader_and_isr_write events")
_LEADERS = (("leader_and_isr_write", "request_sent", "request_received"),
            "no leader_and_isr_write or LeaderAndIsr request events")
_RECEIVED = ((_APPLIED,), "no request_received event that a broker applied")
_DATA = (("produce", "fetch"), "no produce or fetch events")
# What each rule reads, as (event kinds, one of which must have been seen; why not, when none was).
_NEEDS: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "ValidTransition": [(_STATE_CHANGES, "no partition_state_change or replica_state_change events")],
    "TraceConsistent": [(_STATE_CHANGES + _LIVENESS[0], "no state change or broker_up/broker_down events")],
    "ControllerEpochMonotone": [(("controller_elected",), "no controller_elected events")],
    "EpochsWereElected": [(("leader_and_isr_write", "request_sent", "request_received"),
                           "no leader_and_isr_write or request events carry a controller epoch")],
    "ZkEpochFencing": [(("controller_elected",), "no controller_elected events: no controller epoch to fence by"),
                       _WRITES],
    "LeaderEpochMonotone": [_WRITES],
    "ZkVersionGrows": [_WRITES],
    "LeaderInIsrInAr": [_LEADERS, ((_AR, "replica_state_change"),
                                   "no `replicas` in writes or requests and no replica_state_change events: the "
                                   "assigned replicas (AR) are unknown, so ISR within AR and leader within AR are not "
                                   "judged")],
    "OneLeaderPerEpoch": [_LEADERS],
    "CleanElection": [_WRITES, (_LIVENESS[0], _LIVENESS[1] + ", so a new leader that is down and an unclean "
                                "election while ISR members are live are not judged")],
    "PreferredElectionChoosesPreferred": [((_MARKED,), "no leader_and_isr_write says which election made it "
                                                      "(`election`): a preferred election is not told apart")],
    "RequestsCarryWrites": [(("request_sent",), "no request_sent events")],
    "EpochFencing": [_RECEIVED],
    "NoBrokerAheadOfZk": [_RECEIVED],
    "LeaderEpochFencing": [_RECEIVED],
    "LiveActors": [_LIVENESS],
    "OnlyLeadersAppend": [(("produce",), "no produce events")],
    "OffsetsConsistent": [_DATA],
    "FetchFromLeader": [(("fetch",), "no fetch events")],
    "HwWithinLeo": [_DATA],
    "LeaderHwMonotone": [_DATA],
}
# Which parts of the replay state each rule reads (for the focused state of a violation).
_READS_CONTROLLER = {"ControllerEpochMonotone", "ZkEpochFencing", "EpochsWereElected", "NoBrokerAheadOfZk",
                     "EpochFencing"}
_READS_LIVENESS = {"LiveActors", "CleanElection"}
_READS_ZNODE = {"LeaderEpochMonotone", "ZkVersionGrows", "LeaderInIsrInAr", "OneLeaderPerEpoch", "CleanElection",
                "PreferredElectionChoosesPreferred", "RequestsCarryWrites", "OnlyLeadersAppend", "FetchFromLeader"}
_READS_BROKER = {"EpochFencing", "LeaderEpochFencing", "NoBrokerAheadOfZk", "OnlyLeadersAppend", "FetchFromLeader",
                 "LeaderHwMonotone"}
_READS_LOGS = {"OffsetsConsistent", "HwWithinLeo", "LeaderHwMonotone"}
_LAI = ("leader", "leader_epoch", "isr", "zk_version", "controller_epoch", "replicas", "election")
_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "ControllerEpochMonotone": ("broker", "epoch"), "ZkEpochFencing": ("controller_epoch",),
    "EpochsWereElected": ("controller_epoch",), "NoBrokerAheadOfZk": ("broker", "controller_epoch"),
    "EpochFencing": ("broker", "controller_epoch"), "LeaderEpochMonotone": _LAI, "ZkVersionGrows": _LAI,
    "LeaderInIsrInAr": _LAI + ("partitions",), "OneLeaderPerEpoch": _LAI + ("partitions",), "CleanElection": _LAI,
    "PreferredElectionChoosesPreferred": _LAI, "RequestsCarryWrites": ("partitions",),
    "LeaderEpochFencing": ("broker", "partitions"), "LiveActors": ("broker", "leader"),
    "OnlyLeadersAppend": ("broker", "offset", "count", "leo", "hw"),
    "OffsetsConsistent": ("broker", "offset", "count", "fetch_offset", "leo", "hw", "leader", "leader_leo"),
    "FetchFromLeader": ("broker", "leader"), "HwWithinLeo": ("broker", "leo", "hw", "leader_leo", "leader_hw"),
    "LeaderHwMonotone": ("broker", "leo", "hw", "leader_hw"),
}


def rule_id(message: str) -> str:
    """The id a rule message starts with (a catalogue property id or a TRACE_ONLY id)."""
    found = _RULE_ID.match(message)
    return found.group(0) if found else ""


def _broken(rid: str, detail: str, where: str = "") -> Finding:
    """The finding of a rule the replay saw broken: its id, and the message as printed (the id, then the detail)."""
    return Finding(rid, f"{rid} ({where}): {detail}" if where else f"{rid}: {detail}")


class Verdict(NamedTuple):
    """Outcome of a replay: ok, or the first violation (line, event, rule broken, state before it).

    `not_judged` maps each rule id the trace gave no means to judge (up to the verdict) to why: a valid verdict
    never silently means "judged less". `focus` is the part of the state before the event that the broken rule
    reads, with the event's own values beside it. `finding` is the violation in the shape every oracle and
    `kcm conform` share (`checkers/oracle/finding.py`): rule id, message, location, evidence."""

    ok: bool
    line: int = 0
    event: dict | None = None
    rule: str = ""
    state_before: dict | None = None
    malformed: bool = False
    events: int = 0  # events judged (lines that held an event)
    not_judged: dict[str, str] | None = None
    focus: dict[str, Any] | None = None
    finding: Finding | None = None

    @property
    def rule_id(self) -> str:
        """The id of the rule broken ('' when valid or malformed): a catalogue property id or a TRACE_ONLY id."""
        if self.ok or self.malformed:
            return ""
        return self.finding.rule_id if self.finding is not None else rule_id(self.rule)

    def message(self) -> str:
        """Human-readable lines: 'valid', or the line, the rule, the event and what the rule read before it; then
        the rules the trace gave no means to judge."""
        if self.malformed:
            return f"line {self.line}: malformed: {self.rule}"
        if self.ok:
            lines = [f"valid ({self.events} events)"]
        else:
            lines = [f"line {self.line}: {self.rule}", f"  event: {json.dumps(self.event, sort_keys=True)}",
                     f"  state before (what {self.rule_id} reads):"]
            lines += [f"    {k}: {json.dumps(v, sort_keys=True)}" for k, v in (self.focus or {}).items()]
        if self.not_judged:
            n = len(self.not_judged)
            lines.append(f"  not judged ({n} rule{'s' * (n != 1)}):")
            lines += [f"    {rid}: {why}" for rid, why in sorted(self.not_judged.items())]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The verdict as a JSON document (a string)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready data."""
        return {"ok": self.ok, "malformed": self.malformed, "line": self.line or None, "rule": self.rule or None,
                "rule_id": self.rule_id or None, "event": self.event, "state_before": self.state_before,
                "state_focus": self.focus, "events": self.events, "not_judged": dict(self.not_judged or {}),
                "finding": self.finding.to_dict() if self.finding is not None else None}


# ---------------------------------------------------------------------------------------------------- schema

_DEF_OF_TYPE = {"request_sent": "request", "request_received": "request", "broker_up": "broker_up_down",
                "broker_down": "broker_up_down"}


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("kcm.specs").joinpath("trace.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    # Validating against the one definition the event's type selects gives a precise message, where the
    # top-level oneOf would only say "not valid under any of the given schemas".
    schema = _schema()
    return strictjson.validator(
        {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{_DEF_OF_TYPE.get(kind, kind)}"})


class _Unsupported(Exception):
    """A schema keyword the fast checker does not compile; that event type is then checked by jsonschema alone."""


Check = Callable[[Any], bool]
_IGNORED = {"description", "title", "$schema", "$id", "$defs"}
_TYPES: dict[str, Check] = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                            "string": lambda v: isinstance(v, str), "integer": lambda v: type(v) is int,
                            "boolean": lambda v: isinstance(v, bool)}


def _compile(node: dict[str, Any], defs: dict[str, Any]) -> Check:
    """A predicate that accepts only what the schema node accepts (it may refuse more: jsonschema then decides).

    jsonschema walks the schema for every line, which is most of a replay's time; this closure tree does the
    same checks at a fraction of the cost for the keywords the trace schema uses."""
    if not node:
        return lambda v: True
    unknown = set(node) - _IGNORED - {"$ref", "type", "required", "additionalProperties", "unevaluatedProperties",
                                      "properties", "enum", "const", "minimum", "pattern", "items", "uniqueItems",
                                      "dependentRequired", "allOf", "if", "then"}
    if unknown:
        raise _Unsupported(", ".join(sorted(unknown)))
    checks: list[Check] = []
    if "$ref" in node:
        checks.append(_compile(defs[node["$ref"].rsplit("/", 1)[1]], defs))
    if "type" in node:
        checks.append(_TYPES[node["type"]])
    if "enum" in node or "const" in node:
        allowed = node.get("enum", [node.get("const")])
        if not all(isinstance(a, str) for a in allowed):
            raise _Unsupported("non-string enum")
        names = frozenset(allowed)
        checks.append(lambda v: isinstance(v, str) and v in names)
    if "minimum" in node:
        low = node["minimum"]
        checks.append(lambda v: type(v) is int and v >= low)
    if "pattern" in node:
        pat = strictjson.ecma_pattern(node["pattern"])
        checks.append(lambda v: isinstance(v, str) and pat.search(v) is not None)
    if "items" in node:
        item = _compile(node["items"], defs)
        checks.append(lambda v: isinstance(v, list) and all(item(x) for x in v))
    if node.get("uniqueItems"):
        checks.append(lambda v: isinstance(v, list) and all(type(x) is int for x in v) and len(set(v)) == len(v))
    props = {k: _compile(sub, defs) for k, sub in node.get("properties", {}).items()}
    if props:
        checks.append(lambda v: isinstance(v, dict) and all(c(v[k]) for k, c in props.items() if k in v))
    if "required" in node:
        req = tuple(node["required"])
        checks.append(lambda v: isinstance(v, dict) and all(k in v for k in req))
    if "dependentRequired" in node:
        deps = {k: tuple(ks) for k, ks in node["dependentRequired"].items()}
        checks.append(lambda v: isinstance(v, dict) and all(k2 in v for k, ks in deps.items() if k in v for k2 in ks))
    for sub in node.get("allOf", []):
        checks.append(_compile(sub, defs))
    closed = node.get("additionalProperties", node.get("unevaluatedProperties", True))
    if closed is not True:
        if closed is not False:
            raise _Unsupported("schema-valued additionalProperties")
        known = set(node.get("properties", {}))
        if "unevaluatedProperties" in node:
            for sub in node.get("allOf", []):  # properties evaluated by the allOf branches count as evaluated
                sub = defs[sub["$ref"].rsplit("/", 1)[1]] if "$ref" in sub else sub
                if set(sub) - _IGNORED - {"type", "required", "properties"}:
                    raise _Unsupported("unevaluatedProperties over a conditional branch")
                known |= set(sub.get("properties", {}))
        names = frozenset(known)
        checks.append(lambda v: isinstance(v, dict) and names.issuperset(v))
    if "if" in node:
        cond = node["if"]
        if set(cond) != {"properties"} or not all(set(c) == {"const"} and isinstance(c["const"], str)
                                                  for c in cond["properties"].values()):
            raise _Unsupported("if other than string constants")
        consts = {k: c["const"] for k, c in cond["properties"].items()}
        then = _compile(node.get("then", {}), defs)
        checks.append(lambda v: not (isinstance(v, dict) and all(v.get(k, c) == c for k, c in consts.items()))
                      or then(v))
    return lambda v: all(c(v) for c in checks)


@cache
def _fast_check(kind: str) -> Check:
    schema = _schema()
    try:
        return _compile({"$ref": f"#/$defs/{_DEF_OF_TYPE.get(kind, kind)}"}, schema["$defs"])
    except _Unsupported:
        return lambda v: False


def schema_error(ev: Any) -> str:
    """Why this decoded line is not a trace event ('' when it is one)."""
    if not isinstance(ev, dict):
        return f"an event is a JSON object, not {type(ev).__name__}"
    kinds = _schema()["properties"]["type"]["enum"]
    if not isinstance(ev.get("type"), str) or ev["type"] not in kinds:
        return f"'type' must be one of {', '.join(kinds)}; got {strictjson.cut(ev.get('type'))}"
    if _fast_check(ev["type"])(ev):
        return ""
    err = jsonschema.exceptions.best_match(_validator(ev["type"]).iter_errors(ev))
    if err is None:
        return ""
    while err.context:
        err = jsonschema.exceptions.best_match(err.context)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    return f"{ev['type']}{where}: {strictjson.describe(err)}"


def parse_line(text: str) -> tuple[dict[str, Any] | None, str]:
    """(event, '') for a valid line, (None, reason) for a malformed one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 arrive as lone surrogates (surrogateescape)
        return None, "undecodable bytes: a trace is UTF-8 text"
    try:
        ev = strictjson.loads(text)
    except strictjson.InputError as exc:
        return None, f"not JSON: {exc}"
    reason = schema_error(ev)
    return (None, reason) if reason else (ev, "")


# ---------------------------------------------------------------------------------------------------- replay


def _sorted(xs: Iterable[int]) -> list[int]:
    return sorted(set(xs))


# The events of a controller's failover before its first write or request: the election and its state changes.
_FAILOVER_EVENTS = frozenset(("controller_elected", "partition_state_change", "replica_state_change"))


class Replay:
    """What the trace has established so far, and the rules each next event must keep."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.controller_epoch = 0
        self.controller: int | None = None
        self.live: dict[int, bool] = {}  # brokers whose liveness an event stated
        self.partitions: dict[str, str] = {}
        self.replicas: dict[str, str] = {}
        self.zk: dict[str, dict[str, Any]] = {}  # partition -> last leader-and-ISR write
        self.epoch_leader: dict[tuple[str, int], int] = {}  # (partition, leader epoch) -> its one leader
        self.applied_epoch: dict[int, int] = {}  # broker -> newest controller epoch it applied
        self.broker_view: dict[int, dict[str, dict[str, int]]] = {}  # broker -> partition -> leader, leader_epoch
        self.logs: dict[str, dict[str, int]] = {}  # "partition/broker" -> leo, hw, and hw_epoch when leader
        self.seen: Counter = Counter()  # event type -> how many; and the means some rules need (see not_judged)
        # Between a controller election and the next event that is not a state change: the new controller's
        # failover, whose first change of a partition or replica starts from the state it loaded from ZooKeeper.
        self.failover = False

    # ------------------------------------------------------------------------------------------- reporting

    def snapshot(self) -> dict[str, Any]:
        """The replay state as JSON-able data, for reports."""
        return {"controller_epoch": self.controller_epoch, "controller": self.controller,
                "live_brokers": _sorted(b for b, up in self.live.items() if up),
                "down_brokers": _sorted(b for b, up in self.live.items() if not up),
                "partitions": dict(self.partitions), "replicas": dict(self.replicas),
                "leader_and_isr": {p: dict(v) for p, v in self.zk.items()},
                "broker_controller_epochs": {str(b): e for b, e in sorted(self.applied_epoch.items())},
                "broker_partitions": {str(b): {p: dict(v) for p, v in view.items()}
                                      for b, view in sorted(self.broker_view.items()) if view},
                "logs": {k: {f: v for f, v in log.items() if f != "hw_epoch"} for k, log in self.logs.items()}}

    # ------------------------------------------------------------------------------------------- helpers

    def _down(self, broker: int) -> bool:
        return self.live.get(broker) is False

    def _assigned(self, partition: str) -> set[int] | None:
        """The partition's replicas (AR) as far as the trace tells: the last written AR, else the replicas
        whose state the trace has moved out of NonExistentReplica; None when it tells nothing."""
        known = self.zk.get(partition, {}).get("replicas")
        if known is not None:
            return set(known)
        prefix = partition + "/"
        found = {int(k[len(prefix):]) for k, s in self.replicas.items()
                 if k.startswith(prefix) and s != ReplicaState.NON_EXISTENT}
        return found or None

    def _leader_isr_rules(self, where: str, p: dict[str, Any], znode: bool = False) -> Finding | None:
        """ISR within AR (of a znode), leader within ISR, one leader per (partition, leader epoch)."""
        leader, isr, epoch = p["leader"], set(p["isr"]), p["leader_epoch"]
        ar = set(p["replicas"]) if "replicas" in p else self._assigned(p["partition"])
        # As properties.controller.leader_in_isr_in_ar: a leaderless partition may keep its one ISR member outside
        # AR (a replaced reassignment dropped it; the controller never empties the ISR). Only a znode is judged so:
        # a request carries the controller's AR, which is already the target when a reassignment moves the leader,
        # while the replicas leaving are still in the ISR until they are taken offline.
        if znode and ar is not None and not isr <= ar and not (leader == NO_LEADER and len(isr) == 1):
            return _broken("LeaderInIsrInAr", where=where, detail=f"ISR {_sorted(isr)} is not within the "
                                              f"assigned replicas {_sorted(ar)}")
        if leader != NO_LEADER and leader not in isr:
            return _broken("LeaderInIsrInAr", where=where, detail=f"leader {leader} is not in the ISR "
                                              f"{_sorted(isr)}")
        if ar is not None and leader != NO_LEADER and leader not in ar:
            return _broken("LeaderInIsrInAr", where=where, detail=f"leader {leader} is not an assigned replica "
                                              f"{_sorted(ar)}")
        seen = self.epoch_leader.get((p["partition"], epoch))
        if seen is not None and seen != leader:
            return _broken("OneLeaderPerEpoch", where=where, detail=f"{p['partition']} leader epoch {epoch} "
                                                f"already had leader {seen}, now {leader}")
        return None

    def _record_leader(self, p: dict[str, Any]) -> None:
        self.epoch_leader.setdefault((p["partition"], p["leader_epoch"]), p["leader"])

    def _leads(self, partition: str, broker: int) -> tuple[bool | None, int | None]:
        """(whether broker leads partition, in which leader epoch) from the broker's own view, else ZooKeeper's;
        (None, None) when the trace does not say."""
        view = self.broker_view.get(broker, {}).get(partition)
        if view is None:
            view = self.zk.get(partition)
        if view is None:
            return None, None
        return view["leader"] == broker, view["leader_epoch"]

    def _log(self, partition: str, broker: int) -> dict[str, int]:
        return self.logs.get(f"{partition}@{broker}", {})

    def _hw_rules(self, partition: str, broker: int, leo: int, hw: int, who: str) -> Finding | None:
        """HW <= LEO; on a leader the HW never decreases within its leader epoch."""
        if hw > leo:
            return _broken("HwWithinLeo", f"{who} {partition} on broker {broker} has HW {hw} above its "
                                          f"LEO {leo}")
        log = self._log(partition, broker)
        leads, epoch = self._leads(partition, broker)
        if leads and log.get("hw_epoch") == epoch and hw < log["hw"]:
            return _broken("LeaderHwMonotone", f"the HW of leader {broker} of {partition} (leader "
                                               f"epoch {epoch}) went down from {log['hw']} to {hw}")
        return None

    def _set_log(self, partition: str, broker: int, leo: int, hw: int) -> None:
        log = self.logs.setdefault(f"{partition}@{broker}", {})
        leads, epoch = self._leads(partition, broker)
        log.update(leo=leo, hw=hw)
        if leads:
            log["hw_epoch"] = epoch if epoch is not None else -1
        else:
            log.pop("hw_epoch", None)

    # ------------------------------------------------------------------------------------------- events

    def apply(self, ev: dict[str, Any]) -> Finding | None:
        """Apply one schema-valid event; return the rule it breaks (None if it is legal, and then only is the
        state changed: every handler checks all its rules before it records anything)."""
        kind = ev["type"]
        if kind not in _FAILOVER_EVENTS:
            self.failover = False
        seen = self.seen
        seen[kind] += 1
        if kind == "leader_and_isr_write":
            if "replicas" in ev:
                seen[_AR] += 1
            if "election" in ev:
                seen[_MARKED] += 1
        elif kind == "request_received" and ev.get("accepted", True):
            seen[_APPLIED] += 1
        elif kind == "request_sent" and ev["request"] == "LeaderAndIsr" and any("replicas" in p
                                                                                   for p in ev["partitions"]):
            seen[_AR] += 1
        return getattr(self, "_" + kind)(ev)

    def not_judged(self) -> dict[str, str]:
        """Each rule id the events so far gave no means to judge (wholly or in part), with why."""
        seen = self.seen
        out: dict[str, str] = {}
        for rid, needs in _NEEDS.items():
            missing = [why for what, why in needs if not any(seen[k] for k in what)]
            if missing:
                out[rid] = "; ".join(missing)
        return out

    def focus(self, rid: str, ev: dict[str, Any]) -> dict[str, Any]:
        """What the rule `rid` read of the state before `ev`: the entries of `snapshot()` it needs, under the same
        keys and cut to the partitions and brokers of the event, then the event's own values (`event`)."""
        out: dict[str, Any] = {}
        part = ev.get("partition")
        parts = [part] if part else [p["partition"] for p in ev.get("partitions", [])]
        brokers = [b for b in (ev.get("broker"), ev.get("leader") if ev["type"] == "fetch" else None)
                   if isinstance(b, int)]
        if rid in _READS_CONTROLLER or ev["type"] == "controller_elected":
            out["controller_epoch"], out["controller"] = self.controller_epoch, self.controller
        if rid in _READS_LIVENESS or ev["type"] in ("broker_up", "broker_down"):
            out["live_brokers"] = _sorted(b for b, up in self.live.items() if up)
            out["down_brokers"] = _sorted(b for b, up in self.live.items() if not up)
        if ev["type"] == "partition_state_change":
            cur = self.partitions.get(part, PartitionState.NON_EXISTENT)
            out["partitions"] = {part: cur}
            out["table_allows"] = {cur: self._allowed("partition", cur)}
        elif ev["type"] == "replica_state_change":
            key = f"{part}@{ev['replica']}"
            cur = self.replicas.get(key, ReplicaState.NON_EXISTENT)
            out["replicas"] = {key: cur}
            out["table_allows"] = {cur: self._allowed("replica", cur)}
        if rid in _READS_ZNODE:
            out["leader_and_isr"] = {p: self.zk.get(p) for p in parts}
            ars = {p: _sorted(ar) for p in parts if (ar := self._assigned(p)) is not None}
            if ars:
                out["assigned_replicas"] = ars
            if rid == "OneLeaderPerEpoch":
                out["epoch_leaders"] = {f"{q} epoch {e}": b for (q, e), b in sorted(self.epoch_leader.items())
                                        if q in parts}
        if rid in _READS_BROKER:
            out["broker_controller_epochs"] = {str(b): self.applied_epoch.get(b) for b in brokers}
            out["broker_partitions"] = {str(b): {p: v for p, v in self.broker_view.get(b, {}).items() if p in parts}
                                        for b in brokers}
        if rid in _READS_LOGS:
            out["logs"] = {f"{p}@{b}": {f: v for f, v in self.logs[f"{p}@{b}"].items() if f != "hw_epoch"}
                           for p in parts for b in brokers if f"{p}@{b}" in self.logs}
        event_side = {k: ev[k] for k in _EVENT_FIELDS.get(rid, ()) if k in ev}
        if event_side:
            out["event"] = event_side
        return out

    def _allowed(self, machine: str, state: str) -> list[str]:
        """The states the rule set's table allows a move to from `state`."""
        moves = self.rules.partition if machine == "partition" else self.rules.replica
        return sorted(to for to, froms in moves.items() if state in froms)

    def _controller_elected(self, ev: dict[str, Any]) -> Finding | None:
        epoch, broker = ev["epoch"], ev["broker"]
        if epoch <= self.controller_epoch:
            return _broken("ControllerEpochMonotone", f"{epoch} after {self.controller_epoch}")
        if self._down(broker):
            return _broken("LiveActors", f"controller election: broker {broker} is down")
        self.controller_epoch, self.controller = epoch, broker
        # A new controller initialises both state machines from ZooKeeper and the brokers' liveness without logging
        # a change (a replica on a dead broker starts OfflineReplica or ReplicaDeletionIneligible): what the trace
        # said of them under the previous controller says nothing about the state its next change starts from.
        self.partitions = dict.fromkeys(self.partitions, _UNKNOWN)
        self.replicas = dict.fromkeys(self.replicas, _UNKNOWN)
        # So is one the trace never saw: a topic the previous controller had not yet created (its TopicChange was
        # still queued when it moved) is in ZooKeeper, and the new controller loads it there.
        self.failover = True
        return None

    def _table_move(self, table: str, states: dict[str, Any], key: str, ev: dict[str, Any], first: Any,
                    allows: Callable[[Any, Any], bool]) -> tuple[Any, Finding | None]:
        """Judge one move of a state-machine table against the state the trace left `key` in; record it if legal."""
        cur = states.get(key, _UNKNOWN if self.failover else first)
        if cur == _UNKNOWN:
            cur = ev["from"]  # its first change under this controller: the state it was initialised in
        if cur != ev["from"]:
            return cur, _broken("TraceConsistent", f"{table} table: {key} is in {cur}, not {ev['from']}")
        if not allows(cur, ev["to"]):
            return cur, _broken("ValidTransition", f"{table} table: {cur} -> {ev['to']} not allowed by "
                                                   f"rule set {self.rules.name}")
        states[key] = ev["to"]
        return cur, None

    def _partition_state_change(self, ev: dict[str, Any]) -> Finding | None:
        key = ev["partition"]
        cur, broken = self._table_move("partition", self.partitions, key, ev, PartitionState.NON_EXISTENT,
                                       self.rules.allows_partition)
        if broken is None and cur == PartitionState.NON_EXISTENT and ev["to"] == PartitionState.NEW:
            # A partition is created (again): its topic's znode did not exist, so whatever the trace said of a
            # partition of that name belonged to a deleted topic. The deletion's own writes (the replicas taken
            # offline shrink the ISR) come after the move to NonExistentPartition, and the znode's removal when the
            # deletion completes is no event: the creation is the first event that shows the old znode gone. The
            # new znode starts again (zkVersion 0, leader epoch 0) and no rule compares it with the deleted one.
            self.zk.pop(key, None)
            for gone in [k for k in self.epoch_leader if k[0] == key]:
                del self.epoch_leader[gone]
        return broken

    def _replica_state_change(self, ev: dict[str, Any]) -> Finding | None:
        key = f"{ev['partition']}@{ev['replica']}"
        return self._table_move("replica", self.replicas, key, ev, ReplicaState.NON_EXISTENT,
                                self.rules.allows_replica)[1]

    def _leader_and_isr_write(self, ev: dict[str, Any]) -> Finding | None:
        key, epoch, cepoch = ev["partition"], ev["leader_epoch"], ev["controller_epoch"]
        prev = self.zk.get(key)
        # A write that keeps the leader, the leader epoch and the controller epoch of the znode is the leader's own
        # ISR change (contract rule 11: only the zkVersion moves): the leader writes the controller epoch the znode
        # had, which a newer controller that has not rewritten the partition leaves older than its own.
        own = (prev is not None and ev["leader"] == prev["leader"] and epoch == prev["leader_epoch"]
               and cepoch == prev.get("controller_epoch"))
        if cepoch < self.controller_epoch and not own:
            return _broken("ZkEpochFencing", f"leader-and-ISR write by controller epoch {cepoch} "
                                             f"after controller epoch {self.controller_epoch} was elected")
        if cepoch > self.controller_epoch:
            return _broken("EpochsWereElected", f"leader-and-ISR write by controller epoch "
                                                f"{cepoch}, which was never elected")
        if prev is not None:
            if epoch < prev["leader_epoch"]:
                return _broken("LeaderEpochMonotone", f"{key} leader epoch {epoch} after "
                                                      f"{prev['leader_epoch']}")
            if ev["zk_version"] <= prev["zk_version"]:
                return _broken("ZkVersionGrows", f"{key} zkVersion {ev['zk_version']} after "
                                                 f"{prev['zk_version']} (a write from a stale version)")
        broken = self._leader_isr_rules("leader-and-ISR write", ev, znode=True)
        if broken:
            return broken
        new_leader = ev["leader"] != NO_LEADER and (prev is None or prev["leader"] != ev["leader"])
        if new_leader and self._down(ev["leader"]):
            return _broken("CleanElection", f"leader election: new leader {ev['leader']} of {key} is "
                                            f"down")
        broken = self._selector_rules(ev, prev) if new_leader and prev is not None else None
        if broken:
            return broken
        self.zk[key] = {f: ev[f] for f in ("leader", "leader_epoch", "isr", "zk_version", "controller_epoch",
                                           "replicas") if f in ev}
        if "replicas" not in ev and prev is not None and "replicas" in prev:
            self.zk[key]["replicas"] = prev["replicas"]
        self._record_leader(ev)
        return None

    def _selector_rules(self, ev: dict[str, Any], prev: dict[str, Any]) -> Finding | None:
        """The leader selectors' choice: every clean election (offline, reassignment, preferred, controlled
        shutdown) picks a member of the ISR it found; only an election the trace marks unclean may pick another
        replica, and only when no ISR member is known live. A preferred election picks the first replica of AR."""
        election, leader, key = ev.get("election"), ev["leader"], ev["partition"]
        if election != "unclean" and leader not in prev["isr"]:
            return _broken("CleanElection", f"{key} elected {leader}, not in the ISR "
                                            f"{_sorted(prev['isr'])} it had (only an election marked unclean may)")
        live_isr = [b for b in prev["isr"] if self.live.get(b) is True]
        if election == "unclean" and live_isr:
            return _broken("CleanElection", f"unclean election of {key} while ISR members {live_isr} "
                                            f"are live")
        ar = ev.get("replicas", prev.get("replicas"))
        if election == "preferred" and ar and leader != ar[0]:
            return _broken("PreferredElectionChoosesPreferred", f"preferred "
                                                                f"election of {key} chose "
                                                                f"{leader}, not the preferred replica {ar[0]}")
        return None

    def _request_sent(self, ev: dict[str, Any]) -> Finding | None:
        if ev["controller_epoch"] > self.controller_epoch:
            return _broken("EpochsWereElected", f"request sent with controller epoch "
                                                f"{ev['controller_epoch']}, never elected")
        for p in ev["partitions"]:
            if "leader" not in p:
                continue
            written = self.zk.get(p["partition"])
            if written is not None and p["leader_epoch"] > written["leader_epoch"]:
                return _broken("RequestsCarryWrites", f"{ev['request']} sent: {p['partition']} "
                                                      f"leader epoch {p['leader_epoch']} was never written "
                                                      f"(ZooKeeper has {written['leader_epoch']})")
            broken = self._leader_isr_rules(f"{ev['request']} sent", p)
            if broken:
                return broken
        for p in ev["partitions"]:
            if "leader" in p:
                self._record_leader(p)
        return None

    def _request_received(self, ev: dict[str, Any]) -> Finding | None:
        broker, cepoch = ev["broker"], ev["controller_epoch"]
        if not ev.get("accepted", True):
            return None  # a refusal is always allowed: the rules are about what a broker applies
        if self._down(broker):
            return _broken("LiveActors", f"broker {broker} is down and cannot apply a {ev['request']} "
                                         f"request")
        if cepoch < self.applied_epoch.get(broker, 0):
            return _broken("EpochFencing", f"broker {broker} applied a {ev['request']} request of "
                                           f"controller epoch {cepoch} "
                                           f"after applying controller epoch {self.applied_epoch[broker]}")
        if cepoch > self.controller_epoch:
            return _broken("NoBrokerAheadOfZk", f"broker {broker} applied controller epoch "
                                                f"{cepoch}, which was never elected")
        view = self.broker_view.get(broker, {})
        for p in ev["partitions"]:
            if "leader" in p:
                broken = self._leader_isr_rules(f"{ev['request']} applied by broker {broker}", p)
                if broken:
                    return broken
                mine = view.get(p["partition"])
                if ev["request"] == "LeaderAndIsr" and mine is not None and p["leader_epoch"] < mine["leader_epoch"]:
                    return _broken("LeaderEpochFencing", f"broker {broker} applied "
                                                         f"{p['partition']} leader epoch "
                                                         f"{p['leader_epoch']} after leader epoch "
                                                         f"{mine['leader_epoch']}")
        self.applied_epoch[broker] = cepoch
        view = self.broker_view.setdefault(broker, {})
        for p in ev["partitions"]:
            if ev["request"] == "LeaderAndIsr":
                self._record_leader(p)
                view[p["partition"]] = {"leader": p["leader"], "leader_epoch": p["leader_epoch"]}
                if p["leader"] != broker:
                    # A broker made a follower may truncate its log (to its HW before KIP-101), which no event
                    # says: its LEO is known again from its next fetch or append.
                    self.logs.pop(f"{p['partition']}@{broker}", None)
            elif ev["request"] == "StopReplica":
                view.pop(p["partition"], None)
                if p.get("delete"):
                    self.logs.pop(f"{p['partition']}@{broker}", None)
            elif "leader" in p:
                self._record_leader(p)
        return None

    def _broker_up(self, ev: dict[str, Any]) -> Finding | None:
        broker = ev["broker"]
        if self.live.get(broker) is True:
            return _broken("TraceConsistent", f"broker {broker} came up while it was up")
        self.live[broker] = True
        # A restarted broker starts from nothing in memory: no controller epoch, no partition roles.
        self.applied_epoch.pop(broker, None)
        self.broker_view.pop(broker, None)
        for key, log in self.logs.items():
            if key.endswith(f"@{broker}"):
                log.pop("hw_epoch", None)
        return None

    def _broker_down(self, ev: dict[str, Any]) -> Finding | None:
        broker = ev["broker"]
        if self._down(broker):
            return _broken("TraceConsistent", f"broker {broker} went down while it was down")
        self.live[broker] = False
        return None

    def _produce(self, ev: dict[str, Any]) -> Finding | None:
        key, broker = ev["partition"], ev["broker"]
        if self._down(broker):
            return _broken("LiveActors", f"produce: broker {broker} is down")
        leads, epoch = self._leads(key, broker)
        if leads is False:
            return _broken("OnlyLeadersAppend", f"broker {broker} appended to {key} but is not its "
                                                f"leader (leader epoch {epoch})")
        log = self._log(key, broker)
        if "leo" in log and ev["offset"] != log["leo"]:
            return _broken("OffsetsConsistent", f"{key} on broker {broker} appended at offset "
                                                f"{ev['offset']}, its LEO was {log['leo']}")
        if ev["leo"] != ev["offset"] + ev.get("count", 1):
            return _broken("OffsetsConsistent", f"{key} on broker {broker} appended "
                                                f"{ev.get('count', 1)} at {ev['offset']} but reports LEO {ev['leo']}")
        broken = self._hw_rules(key, broker, ev["leo"], ev["hw"], "leader")
        if broken:
            return broken
        self._set_log(key, broker, ev["leo"], ev["hw"])
        return None

    def _fetch(self, ev: dict[str, Any]) -> Finding | None:
        key, follower, leader = ev["partition"], ev["broker"], ev["leader"]
        for b in (follower, leader):
            if self._down(b):
                return _broken("LiveActors", f"fetch: broker {b} is down")
        if follower == leader:
            return _broken("FetchFromLeader", f"broker {leader} fetched {key} from itself")
        leads, epoch = self._leads(key, leader)
        if leads is False:
            return _broken("FetchFromLeader", f"{key} fetched from broker {leader}, which is not its "
                                              f"leader (leader epoch {epoch})")
        llog = self._log(key, leader)
        leader_leo = ev.get("leader_leo", llog.get("leo"))
        if leader_leo is not None and ev["fetch_offset"] > leader_leo:
            return _broken("OffsetsConsistent", f"{key} fetch at offset {ev['fetch_offset']} "
                                                f"beyond leader {leader}'s LEO {leader_leo}")
        if ev["leo"] > (leader_leo if leader_leo is not None else ev["leo"]):
            return _broken("OffsetsConsistent", f"follower {follower} of {key} has LEO {ev['leo']} "
                                                f"beyond leader's LEO {leader_leo}")
        leader_hw = ev.get("leader_hw", llog.get("hw"))
        if leader_hw is not None and leader_leo is not None:
            broken = self._hw_rules(key, leader, leader_leo, leader_hw, "leader")
            if broken:
                return broken
        if leader_hw is not None and ev["hw"] > leader_hw:
            return _broken("HwWithinLeo", f"follower {follower} of {key} has HW {ev['hw']} above the "
                                          f"leader's HW {leader_hw}")
        broken = self._hw_rules(key, follower, ev["leo"], ev["hw"], "follower")
        if broken:
            return broken
        if leader_leo is not None and leader_hw is not None:
            self._set_log(key, leader, leader_leo, leader_hw)
        self._set_log(key, follower, ev["leo"], ev["hw"])
        return None



class TraceChecker:
    """An incremental replay: feed events one at a time; the first failure is kept and every later feed repeats it."""

    def __init__(self, rules: RuleSet, source: str | None = None) -> None:
        self.replay = Replay(rules)
        self.source = source  # the input's name for a finding's location (a file), when there is one
        self.line = 0
        self.events = 0
        self.failure: Verdict | None = None

    def feed_line(self, text: str) -> Verdict | None:
        """Judge the next line; None while everything so far is legal (blank lines count but hold no event)."""
        if self.failure is not None:
            return self.failure
        self.line += 1
        if not text.strip():
            return None
        ev, reason = parse_line(text)
        if ev is None:
            self.failure = Verdict(False, self.line, None, reason, None, malformed=True, events=self.events)
            return self.failure
        broken = self.replay.apply(ev)
        if broken is not None:  # an event that breaks a rule changed nothing, so this is the state before it
            replay = self.replay
            focus = replay.focus(broken.rule_id, ev)
            found = Finding(broken.rule_id, broken.message, self.line, self.source,
                            evidence={"event": ev, "state_before": focus})
            self.failure = Verdict(False, self.line, ev, broken.message, replay.snapshot(), events=self.events,
                                   not_judged=replay.not_judged(), focus=focus, finding=found)
            return self.failure
        self.events += 1
        return None

    def feed(self, event: Any) -> Verdict | None:
        """Judge the next event given as decoded JSON (a dict); None while everything so far is legal."""
        return self.feed_line(json.dumps(event, default=repr))

    def verdict(self) -> Verdict:
        """The verdict on everything fed so far."""
        return self.failure or Verdict(True, events=self.events, not_judged=self.replay.not_judged())


def check_lines(lines: Iterable[str], rules: RuleSet) -> Verdict:
    """Replay JSONL lines; stop at the first malformed line or violation."""
    checker = TraceChecker(rules)
    for text in lines:
        if checker.feed_line(text) is not None:
            break
    return checker.verdict()


def check_events(events: Iterable[dict[str, Any]], rules: RuleSet) -> Verdict:
    """Replay events given as dicts; the Nth event is reported as line N."""
    return check_lines((json.dumps(e, default=repr) for e in events), rules)


# An event is a few hundred bytes; a longer line is not one (documented in docs/robustness.md).
MAX_LINE_BYTES = 1 << 20


def check_file(path: str, rules: RuleSet) -> Verdict:
    """Replay a trace file, reading lines of bounded length; undecodable bytes or an over-long line make their
    line malformed, a file without a single event is malformed, an unreadable file raises OSError."""
    checker = TraceChecker(rules, str(path))
    number = 0
    with open(path, "rb") as fh:
        try:
            for raw, whole in strictjson.bounded_lines(fh, MAX_LINE_BYTES):
                number += 1
                if not whole:
                    return Verdict(False, number, None, f"a line longer than {MAX_LINE_BYTES:,} bytes",
                                   malformed=True, events=checker.events)
                if checker.feed_line(raw.decode("utf-8", "surrogateescape")) is not None:
                    break
        except strictjson.InputError as err:
            return Verdict(False, number + 1, None, str(err), malformed=True, events=checker.events)
    verdict = checker.verdict()
    if verdict.ok and verdict.events == 0:
        return Verdict(False, max(number, 1), None, "no events: an empty trace proves nothing", malformed=True)
    return verdict
