"""The canonical zkVersion form identifies only states with the same behaviour, and closes data-plane spaces."""

from __future__ import annotations

from kcm.checkers.core.bounded import BoundedSystem
from kcm.checkers.explore import bfs
from kcm.model.canonical import relative_zk_versions
from kcm.model.fingerprint import fingerprint

CONFIG = {"name": "dp", "brokers": [0, 1], "topics": {"t": {"0": [0, 1]}}, "families": ["data_plane", "broker_failure"],
          "bounds": {"max_failures": 1, "max_restarts": 2, "max_leader_epoch": 3, "max_records": 2,
                     "max_controller_epoch": 3}, "truncation": "high_watermark"}


def _reachable(model: BoundedSystem, limit: int) -> list:
    seen, frontier, out = set(), list(model.init_states()), []
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            for a in model.actions(s):
                n = model.next_state(s, a)
                if n is not None and fingerprint(n) not in seen:
                    seen.add(fingerprint(n))
                    out.append(n)
                    nxt.append(n)
        frontier = nxt
    return out


def test_a_state_and_its_canonical_form_behave_alike():
    model = BoundedSystem(CONFIG)
    states = [s for s in _reachable(model, 3000) if relative_zk_versions(s) != s]
    assert len(states) > 100  # the leader's ISR updates do move zkVersions apart
    for s in states[::7]:
        c = relative_zk_versions(s)
        for a in model.actions(s):
            n1, n2 = model.next_state(s, a), model.next_state(c, a)
            assert (n1 is None) == (n2 is None), a
            if n1 is not None:
                assert fingerprint(relative_zk_versions(n1)) == fingerprint(relative_zk_versions(n2)), a
        assert all(p.condition(model, s) == p.condition(model, c) for p in model.properties()
                   if p.expectation == "always")


def test_canonical_form_is_idempotent_and_keeps_the_znode_version_current():
    model = BoundedSystem(CONFIG)
    for s in _reachable(model, 500):
        c = relative_zk_versions(s)
        assert relative_zk_versions(c) == c
        assert all(lai.zk_version == 1 for _, lai in c.zk.partitions)


def test_a_data_plane_space_closes():
    found = bfs.explore(BoundedSystem(CONFIG), max_states=50_000)
    assert found.complete
