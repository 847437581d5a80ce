"""The bounded system the explorers walk: the reference controller and data plane behind the Model interface.

A bounded configuration (JSON, `specs/configs/`) names the brokers, the initial topics, which action families
are on and the bounds. This module only enumerates actions and reads bounds; every rule is the reference's
(`api.step`), every property the `properties` modules'.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from kcm.model import actions as A
from kcm.model.cluster import Cluster, ClusterConfig
from kcm.model.effects import Effects
from kcm.model.errors import KcmError
from kcm.model.fingerprint import fingerprint
from kcm.model.interface import Property
from kcm.properties import controller as controller_properties
from kcm.properties import dataplane as dataplane_properties
from kcm.reference import api
from kcm.reference.dataplane import canonical_zk_versions

FAMILIES = ("broker_failure", "controlled_shutdown", "controller_failover", "reassignment", "preferred",
            "data_plane", "deletion")
_KEYS = {"name", "description", "brokers", "rules", "truncation", "unclean_leader_election", "min_insync_replicas",
         "topics", "families", "bounds", "properties", "variants"}
_BOUNDS = {"max_failures": 1, "max_restarts": 1, "max_controller_epoch": 2, "max_leader_epoch": 3, "max_records": 1,
           "reassign_targets": []}


class BadConfig(ValueError):
    """A bounded configuration that cannot be explored; the message names the key."""


def load_config(name_or_path: str) -> dict[str, Any]:
    """A config from a file path, or by name from specs/configs/; BadConfig if missing or malformed."""
    path = Path(name_or_path)
    try:
        if path.suffix == ".json" or path.exists():
            text = path.read_text(encoding="utf-8")
        else:
            text = resources.files("kcm.specs").joinpath("configs", f"{name_or_path}.json").read_text("utf-8")
    except (OSError, FileNotFoundError) as err:
        known = sorted(p.name[:-5] for p in resources.files("kcm.specs").joinpath("configs").iterdir()
                       if p.name.endswith(".json"))
        raise BadConfig(f"no config {name_or_path!r} ({err.__class__.__name__}); shipped: {', '.join(known)}") from None
    try:
        cfg = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadConfig(f"{name_or_path}: not valid JSON: {err}") from None
    validate_config(cfg)
    return cfg


def validate_config(cfg: Any) -> None:
    """Check a bounded configuration's keys and types; BadConfig names the first problem."""
    if not isinstance(cfg, dict):
        raise BadConfig("a config is a JSON object")
    unknown = set(cfg) - _KEYS
    if unknown:
        raise BadConfig(f"unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
    brokers = cfg.get("brokers")
    if not isinstance(brokers, list) or not brokers or not all(isinstance(b, int) and b >= 0 for b in brokers):
        raise BadConfig("brokers: a non-empty list of broker ids")
    for fam in cfg.get("families", []):
        if fam not in FAMILIES:
            raise BadConfig(f"families: unknown family {fam!r}; known: {', '.join(FAMILIES)}")
    for key in cfg.get("bounds", {}):
        if key not in _BOUNDS:
            raise BadConfig(f"bounds: unknown bound {key!r}; known: {', '.join(_BOUNDS)}")
    for topic, assignment in cfg.get("topics", {}).items():
        for part, replicas in assignment.items():
            if not part.isdigit() or not all(b in brokers for b in replicas):
                raise BadConfig(f"topics.{topic}.{part}: replicas must be brokers of the config")
    variants = cfg.get("variants", [])
    if not isinstance(variants, list) or not all(isinstance(v, str) and v for v in variants):
        raise BadConfig("variants: a list of bug-variant names (each a reverted fix, e.g. \"KAFKA-7128\")")
    names = {p.name for p in all_properties()}
    for name in cfg.get("properties", []):
        if name not in names:
            raise BadConfig(f"properties: unknown property {name!r}")


def all_properties() -> list[Property]:
    """Every named property of the properties modules."""
    return list(controller_properties.PROPERTIES) + list(dataplane_properties.PROPERTIES)


class BoundedSystem:
    """The Model of one bounded configuration (see the module docstring)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.config = ClusterConfig(
            brokers=tuple(cfg["brokers"]), rules=cfg.get("rules", "seeds"),
            unclean_leader_election=cfg.get("unclean_leader_election", False),
            min_insync_replicas=cfg.get("min_insync_replicas", 1),
            truncation=cfg.get("truncation", "high_watermark"), variants=tuple(cfg.get("variants", [])))
        self.families = set(cfg.get("families", []))
        self.bounds = dict(_BOUNDS, **cfg.get("bounds", {}))
        self.topic_steps = [A.CreateTopic(t, tuple(sorted((int(p), tuple(r)) for p, r in a.items())))
                            for t, a in sorted(cfg.get("topics", {}).items())]
        self.tps = [(c.topic, p) for c in self.topic_steps for p, _ in c.assignment]
        wanted = set(cfg.get("properties", []))
        self._properties = [p for p in all_properties() if not wanted or p.name in wanted]
        self._targets = [tuple(x) for x in self.bounds["reassign_targets"]]

    def init_states(self) -> list[Cluster]:
        """The first election, then the configured topics created."""
        state, _ = api.start(self.config)
        for action in self.topic_steps:
            state, _ = api.step(self.config, state, action)
        return [state]

    def actions(self, state: Cluster) -> list[Any]:
        """The actions of the enabled families that the bounds still allow."""
        out: list[Any] = []
        brokers = dict(state.brokers)
        down = [b for b, s in brokers.items() if not s.alive or s.shutting_down]
        budget = len(down) < self.bounds["max_failures"]
        fam = self.families
        if "broker_failure" in fam:
            out += [A.BrokerFail(b) for b, s in brokers.items() if s.alive and budget]
            out += [A.BrokerStart(b) for b, s in brokers.items() if not s.alive]
        if "controlled_shutdown" in fam and budget:
            out += [A.ControlledShutdown(b) for b, s in brokers.items() if s.alive and not s.shutting_down]
        if "controller_failover" in fam and state.zk.controller_epoch < self.bounds["max_controller_epoch"]:
            out.append(A.ControllerResign())
        if "preferred" in fam:
            out.append(A.PreferredElection())
        assignments = dict(state.zk.assignments)
        for tp in self.tps:
            if tp not in assignments:
                continue
            if "reassignment" in fam and not any(k == tp for k, _ in state.ctx.reassignments):
                out += [A.Reassign(tp, t) for t in self._targets if t != assignments[tp]]
            if "data_plane" in fam:
                out += [A.Produce(tp), A.Replicate(tp)]
                lai = dict(state.zk.partitions).get(tp)
                if lai is not None:
                    out += [A.IsrShrink(tp, b) for b in lai.isr if b != lai.leader]
        if "deletion" in fam:
            out += [A.DeleteTopic(t.topic) for t in self.topic_steps if any(k[0] == t.topic for k in assignments)]
        return out

    def step(self, state: Cluster, action: Any) -> tuple[Cluster, Effects]:
        """The reference's next state and effects (KcmError when refused)."""
        return api.step(self.config, state, action)

    def next_state(self, state: Cluster, action: Any) -> Cluster | None:
        """The next state, or None when the action is refused or changes nothing."""
        try:
            nxt, _ = api.step(self.config, state, action)
        except KcmError:
            return None
        return None if nxt == state else nxt

    def properties(self) -> list[Property]:
        """The properties this configuration checks."""
        return self._properties

    def within_boundary(self, state: Cluster) -> bool:
        """Controller epoch, leader epochs, broker restarts and log lengths within the bounds."""
        if any(b.incarnation > self.bounds["max_restarts"] for _, b in state.brokers):
            return False
        if state.zk.controller_epoch > self.bounds["max_controller_epoch"]:
            return False
        if any(lai.leader_epoch > self.bounds["max_leader_epoch"] for _, lai in state.zk.partitions):
            return False
        return all(len(r.log) <= self.bounds["max_records"] for _, r in state.replicas)

    def fingerprint(self, state: Cluster) -> int:
        """The stable 64-bit fingerprint of the state's canonical form (zkVersions renumbered, see dataplane)."""
        return fingerprint(canonical_zk_versions(state))

    def scenario(self, actions: list[Any]) -> dict[str, Any]:
        """A `kcm run` scenario that replays a trace of this system from its initial state."""
        c = self.config
        return {"name": f"counterexample in config {self.cfg.get('name', '?')}",
                "config": {"brokers": list(c.brokers), "rules": c.rules, "truncation": c.truncation,
                           "unclean_leader_election": c.unclean_leader_election,
                           "min_insync_replicas": c.min_insync_replicas},
                "steps": [a.to_step() for a in self.topic_steps + list(actions)]}


__all__ = ["BadConfig", "BoundedSystem", "FAMILIES", "load_config"]
