"""What each state property declares it reads (`properties/reads.py`), and the explorer that skips on it.

The declarations are checked mechanically: every predicate runs on reachable states through a recorder that
notes each Cluster part it touches, and a part it reads without declaring fails the test. The explorer that
judges only the properties whose parts a step changed must give the same result as one that judges all.
"""

from __future__ import annotations

from typing import Any

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.explore.verdicts import successors
from kcm.model.cluster import Cluster
from kcm.model.interface import ALWAYS, EVENTUALLY, SOMETIMES
from kcm.properties import reads
from kcm.properties.catalogue import CATALOGUE

STATE_PROPERTIES = [p for p in CATALOGUE if p.expectation in (ALWAYS, SOMETIMES, EVENTUALLY)]


class Recorder:
    """A Cluster (or one of its records) that notes the dotted path of every part read through it."""

    def __init__(self, value: Any, seen: set[str], prefix: str = "") -> None:
        self._value, self._seen, self._prefix = value, seen, prefix

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._value, name)
        if not self._prefix and name in reads.RECORDS and value is not None:
            return Recorder(value, self._seen, name)  # its fields are noted one by one
        self._seen.add(f"{self._prefix}.{name}" if self._prefix else name)
        return value

    def __iter__(self) -> Any:
        raise AssertionError(f"iterates over the whole of {self._prefix or 'the state'}")

    def __getitem__(self, key: Any) -> Any:
        raise AssertionError(f"indexes {self._prefix or 'the state'} by position")


def reachable(config: str, limit: int) -> list[Cluster]:
    """Up to `limit` reachable states of a config, breadth first."""
    model = BoundedSystem(load_config(config))
    seen = {model.fingerprint(s): s for s in model.init_states()}
    frontier = list(seen.values())
    while frontier and len(seen) < limit:
        nxt = []
        for state in frontier:
            for _, s, _ in successors(model, state):
                fp = model.fingerprint(s)
                if fp not in seen and len(seen) < limit:
                    seen[fp] = s
                    nxt.append(s)
        frontier = nxt
    return list(seen.values())


def covers(declared: tuple[str, ...], path: str) -> bool:
    """Whether a declaration covers a read part (a whole record covers each of its fields)."""
    return path in declared or path.split(".")[0] in declared


def test_every_state_property_declares_what_it_reads():
    assert all(reads.declared(p.condition) for p in STATE_PROPERTIES), [
        p.name for p in STATE_PROPERTIES if not reads.declared(p.condition)]


@pytest.mark.parametrize("config", ["controller", "bugs/KIP-101", "unclean", "liveness", "async", "tiny"])
def test_no_state_property_reads_a_part_it_does_not_declare(config):
    model = BoundedSystem(load_config(config))
    undeclared: dict[str, set[str]] = {}
    for state in reachable(config, 600):
        for p in STATE_PROPERTIES:
            seen: set[str] = set()
            assert p.condition(model, Recorder(state, seen)) == p.condition(model, state)
            missing = {path for path in seen if not covers(reads.declared(p.condition), path)}
            if missing:
                undeclared.setdefault(p.name, set()).update(missing)
    assert not undeclared


def test_the_recorder_catches_an_undeclared_read():
    @reads.reads("zk.partitions")
    def sloppy(model: Any, state: Cluster) -> bool:
        return len(state.zk.partitions) + len(state.brokers) >= 0

    model = BoundedSystem(load_config("tiny"))
    seen: set[str] = set()
    sloppy(model, Recorder(model.init_states()[0], seen))
    assert {path for path in seen if not covers(reads.declared(sloppy), path)} == {"brokers"}


def test_unknown_parts_are_refused():
    with pytest.raises(ValueError, match="unknown parts"):
        reads.reads("zk.no_such_field")


def test_a_step_that_changes_one_part_rechecks_only_the_properties_that_read_it():
    model = BoundedSystem(load_config("bugs/KIP-101"))
    props = [p for p in model.properties() if p.expectation in (ALWAYS, SOMETIMES)]
    rechecks = reads.Rechecks(props)
    state = model.init_states()[0]
    assert rechecks.after_step(state, state) == []
    produced = [(a, s) for a, s, _ in successors(model, state) if type(a).__name__ == "Produce"]
    assert produced
    action, after = produced[0]
    judged = {p.name for p in rechecks.after_step(state, after)}
    assert reads.changed(state, after) & reads.BITS["replicas"]
    assert "LogsAgreeBelowHw" in judged and "ControllerActive" not in judged and "LeaderInIsrInAr" not in judged
    # States of another kind (no Cluster) get every property.
    assert rechecks.after_step((1,), (2,)) == props


def summary(found: Any, model: Any) -> dict[str, Any]:
    """Everything an exploration reports, for comparing two runs."""
    return {"states": found.distinct_states, "transitions": found.transitions, "depth": found.depth,
            "complete": found.complete, "verdicts": found.verdicts(model.properties()),
            "reached": sorted(found.reached),
            "counterexamples": {k: [a.to_step() for a in v] for k, v in found.violations.items()}}


@pytest.mark.parametrize("config", ["tiny", "controller", "unclean", "tla-high-watermark"])
def test_skipping_unchanged_checks_gives_the_same_exploration_as_judging_every_state(config):
    model = BoundedSystem(load_config(config))
    skipping = bfs.explore(model)
    full = bfs.explore(model, skip_unchanged=False)
    assert summary(skipping, model) == summary(full, model)
    fa, sa = full.visited.arrays(), skipping.visited.arrays()
    assert fa.keys() == sa.keys() and all((fa[k] == sa[k]).all() for k in fa)
