"""Helpers the property predicates use, against the plain definitions they must agree with."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore.verdicts import successors
from kcm.model.fmap import freeze, get, search
from kcm.properties.dataplane import divergent_replicas


def plain_divergent_replicas(state):
    """Every pair of one partition's replicas whose logs differ below both HWs, with the first such offset."""
    by_tp = {}
    for (topic, part, broker), data in state.replicas:
        by_tp.setdefault((topic, part), []).append((broker, data))
    out = []
    for tp, reps in sorted(by_tp.items()):
        for i, (a, da) in enumerate(reps):
            for b, db in reps[i + 1:]:
                limit = min(da.hw, db.hw, da.leo, db.leo)
                diff = next((o for o in range(limit) if da.log[o] != db.log[o]), None)
                if diff is not None:
                    out.append((tp, a, b, diff))
    return out


def test_divergent_replicas_agrees_with_the_plain_definition_on_reachable_states():
    model = BoundedSystem(load_config("bugs/KIP-101"))
    frontier, seen, divergent = model.init_states(), set(), 0
    while frontier and len(seen) < 4000:
        nxt = []
        for state in frontier:
            for _, after, _ in successors(model, state):
                fp = model.fingerprint(after)
                if fp in seen:
                    continue
                seen.add(fp)
                nxt.append(after)
                assert divergent_replicas(after) == plain_divergent_replicas(after)
                divergent += bool(divergent_replicas(after))
        frontier = nxt
    assert divergent  # the bug's config reaches divergent logs, so both branches were compared


@given(st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3), st.integers(0, 9)), st.integers(),
                       max_size=30),
       st.tuples(st.sampled_from("abc"), st.integers(-1, 4), st.integers(-1, 10)))
def test_search_finds_what_get_finds(pairs, key):
    m = freeze(pairs)
    assert search(m, key, "none") == get(m, key, "none")
    for k in pairs:
        assert search(m, k) == get(m, k) == pairs[k]
