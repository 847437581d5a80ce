"""Scenario files for `kcm run`: load, validate (schema, then meaning), run, and match `expect`.

Exit codes (the contract): 0 every expectation held; 1 an `expect`, `expect_error` or `expect_records` did not
hold, or a step was refused without `expect_error` (the refused step changes nothing and the run goes on, so the
result document is still complete); 2 the file is not a valid scenario, and nothing was run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kcm.model import strictjson
from kcm.model.actions import from_step
from kcm.model.cluster import NO_CONTROLLER, ClusterConfig
from kcm.model.errors import KcmError
from kcm.model.fingerprint import fingerprint
from kcm.model.interface import SOMETIMES_STEP, STEP
from kcm.model.names import parse_replica, parse_tp
from kcm.model.variants import SWITCHES, known_switch
from kcm.properties import catalogue
from kcm.reference import api
from kcm.reference.result import result_document


class InvalidScenario(Exception):
    """The file is not a valid scenario: the message names the place (a JSON path) and the problem."""


@dataclass
class RunOutcome:
    """What running a scenario gave: the result document and every mismatch found."""

    result: dict[str, Any]
    mismatches: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every expectation held, 1 otherwise."""
        return 1 if self.mismatches else 0


# Limits beyond the schema's (documented in docs/robustness.md and in the schema's description): the file's size,
# and the records of all produce steps together (each record is kept in every replica's log, and a run's cost grows
# with the logs' lengths).
MAX_SCENARIO_BYTES = 8 << 20
MAX_TOTAL_RECORDS = 10_000

_VALIDATOR: Any = None


def _validator() -> Any:
    global _VALIDATOR
    if _VALIDATOR is None:
        text = resources.files("kcm.specs").joinpath("scenario.schema.json").read_text(encoding="utf-8")
        _VALIDATOR = strictjson.validator(json.loads(text))
    return _VALIDATOR


def read_file(path: str | Path) -> dict[str, Any]:
    """Read, parse and validate a scenario file (at most MAX_SCENARIO_BYTES); InvalidScenario or OSError."""
    try:
        raw = strictjson.read_bounded(path, MAX_SCENARIO_BYTES)
    except strictjson.InputError as err:
        raise InvalidScenario(str(err)) from None
    return parse_text(raw)


def parse_text(raw: bytes) -> dict[str, Any]:
    """Decode and parse the bytes of a scenario file; InvalidScenario names what is wrong."""
    try:
        doc = strictjson.loads(raw)
    except strictjson.InputError as err:
        raise InvalidScenario(str(err)) from None
    validate(doc)
    return doc


def validate(doc: Any) -> None:
    """Check a parsed document against the schema, then its meaning; InvalidScenario on the first problem."""
    try:
        strictjson.check_depth(doc)
    except strictjson.InputError as err:
        raise InvalidScenario(str(err)) from None
    problem = strictjson.first_error(_validator(), doc)
    if problem:
        raise InvalidScenario(problem)
    _check_meaning(doc)


def _check_meaning(doc: dict[str, Any]) -> None:
    brokers = set(doc["config"]["brokers"])
    for j, name in enumerate(doc["config"].get("variants", [])):
        if not known_switch(name):
            raise InvalidScenario(f"$.config.variants[{j}]: unknown variant {name!r}; known: {', '.join(SWITCHES)}")
    controller = doc["config"].get("controller")
    if controller is not None and controller not in brokers:
        raise InvalidScenario(f"$.config.controller: broker {controller} is not in config.brokers")
    records = 0
    for i, step in enumerate(doc["steps"]):
        records += step.get("records", 1) if step["op"] == "produce" else 0
        if records > MAX_TOTAL_RECORDS:
            raise InvalidScenario(f"$.steps[{i}].records: more than {MAX_TOTAL_RECORDS:,} records produced by the "
                                  "file's steps together")
    created: set[tuple] = set()
    topics: set[str] = set()
    for step in doc["steps"]:
        if step["op"] in ("create_topic", "add_partitions"):
            topics.add(step["topic"])
            parts = step.get("assignment") or {str(i): [] for i in range(step.get("partitions", 0))}
            created |= {(step["topic"], int(p)) for p in parts}
    for i, step in enumerate(doc["steps"]):
        where = f"$.steps[{i}]"
        lenient = step.get("expect_error") == "InvalidReplicaAssignment"
        if "broker" in step and step["broker"] not in brokers:
            raise InvalidScenario(f"{where}.broker: broker {step['broker']} is not in config.brokers")
        lists = [("replicas", step["replicas"])] if step["op"] == "reassign" else []
        lists += [(f"assignment.{p}", r) for p, r in (step.get("assignment") or {}).items()]
        for name, replicas in lists:
            unknown = [b for b in replicas if b not in brokers]
            if unknown and not lenient:
                raise InvalidScenario(f"{where}.{name}: brokers {unknown} are not in config.brokers")
        if step["op"] in ("create_topic", "add_partitions", "delete_topic"):
            continue
        names = step.get("partitions") or ([step["partition"]] if "partition" in step else [])
        for j, name in enumerate(names):
            tp = parse_tp(name)
            if tp not in created:
                raise InvalidScenario(f"{where}.partitions[{j}]: partition {name} is not created by any step"
                                      if "partitions" in step else
                                      f"{where}.partition: partition {name} is not created by any step")
        for j, name in enumerate(step.get("replicas", []) if step["op"] == "replica_transition" else []):
            tp, b = parse_replica(name)
            if tp not in created:
                raise InvalidScenario(f"{where}.replicas[{j}]: partition of {name} is not created by any step")
            if b not in brokers:
                raise InvalidScenario(f"{where}.replicas[{j}]: broker {b} of {name} is not in config.brokers")
    wanted = doc.get("expect_violation")
    if wanted is not None:
        if wanted["property"] not in catalogue.ids():
            raise InvalidScenario(f"$.expect_violation.property: unknown property {wanted['property']!r}")
        if wanted["step"] >= len(doc["steps"]):
            raise InvalidScenario(f"$.expect_violation.step: there is no step {wanted['step']}")
    for i, step in enumerate(doc["steps"]):
        if step["op"] == "delete_topic" and step["topic"] not in topics:
            raise InvalidScenario(f"$.steps[{i}].topic: topic {step['topic']} is not created by any step")


def cluster_config(doc: dict[str, Any]) -> ClusterConfig:
    """The ClusterConfig of a scenario's `config`."""
    c = doc["config"]
    return ClusterConfig(
        brokers=tuple(c["brokers"]),
        rules=c.get("rules", "seeds"),
        unclean_leader_election=c.get("unclean_leader_election", False),
        min_insync_replicas=c.get("min_insync_replicas", 1),
        truncation=c.get("truncation", "high_watermark"),
        first_controller=c.get("controller", NO_CONTROLLER),
        variants=tuple(c.get("variants", ())),
        delivery=c.get("delivery", "sync"),
        zombie_controller=c.get("zombie_controller", False),
        grain=c.get("grain", "coarse"),
        controller_message_queue_size=c.get("controller_message_queue_size", 10),
    )


def run(doc: dict[str, Any], trace: bool = False, engine: Any = api) -> RunOutcome:
    """Run a validated scenario through the reference controller and match its expectations.

    `engine` supplies `start` and `step` as `kcm.reference.api` does (the live mode passes one that also mirrors
    each step's ZooKeeper effects on a real server).
    """
    config = cluster_config(doc)
    state, _ = engine.start(config)
    log: list[dict[str, Any]] = []
    mismatches: list[str] = []
    watch = _Watch(doc.get("expect_violation"), config)
    for i, step in enumerate(doc["steps"]):
        action = from_step(step)
        entry: dict[str, Any] = {"step": i, "op": step["op"]}
        wanted = step.get("expect_error")
        before = fingerprint(state)
        previous = state
        try:
            state, effects = engine.step(config, state, action)
        except KcmError as err:
            entry.update({"requests": [], "state_changes": [], "error": err.name, "message": err.message})
            if wanted is None:
                mismatches.append(f"steps[{i}] ({step['op']}): refused with {err.name}: {err.message}")
            elif wanted != err.name:
                mismatches.append(f"steps[{i}].expect_error: expected {wanted}, got {err.name}: {err.message}")
            elif fingerprint(state) != before:
                mismatches.append(f"steps[{i}]: the refused step changed the state")
        else:
            watch.after_step(i, previous, action, state, effects)
            entry.update(effects.to_json())
            if wanted is not None:
                mismatches.append(f"steps[{i}].expect_error: expected {wanted}, but the step was accepted")
            if step["op"] == "consume":
                entry["consumed"] = effects.result
                if "expect_records" in step and effects.result != step["expect_records"]:
                    mismatches.append(f"steps[{i}].expect_records: expected {step['expect_records']}, "
                                      f"got {effects.result}")
        log.append(entry)
    result = result_document(state)
    if trace:
        result["log"] = log
    if "expect" in doc:
        mismatches += match(doc["expect"], result, "expect")
    mismatches += watch.mismatches()
    return RunOutcome(result, mismatches)


class _Watch:
    """The `expect_violation` extension: where the named property is first violated along the run."""

    def __init__(self, wanted: dict[str, Any] | None, config: ClusterConfig) -> None:
        self.wanted = wanted
        self.model = SimpleNamespace(config=config)
        self.prop = catalogue.by_id(wanted["property"]) if wanted else None
        self.first: int | None = None

    def after_step(self, i: int, before: Any, action: Any, after: Any, effects: Any) -> None:
        """Judge the property on one accepted step."""
        if self.prop is None or self.first is not None:
            return
        if self.prop.expectation in (STEP, SOMETIMES_STEP):
            ok = self.prop.condition(self.model, before, action, after, effects)
        else:
            ok = self.prop.condition(self.model, after)
        if not ok:
            self.first = i

    def mismatches(self) -> list[str]:
        """What did not go as `expect_violation` says."""
        if self.wanted is None or self.first == self.wanted["step"]:
            return []
        got = "never violated" if self.first is None else f"first violated after step {self.first}"
        return [f"expect_violation: {self.wanted['property']} should be first violated after step "
                f"{self.wanted['step']}, but it was {got}"]


def match(expected: Any, actual: Any, where: str) -> list[str]:
    """Subset match: every key `expected` names must be in `actual` with that value (lists compared whole)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual)}"]
        out: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{where}.{key}: expected {json.dumps(value)}, got nothing")
            else:
                out += match(value, actual[key], f"{where}.{key}")
        return out
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        return [f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]
    return []
