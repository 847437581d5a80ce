"""The compact, spilled frontier (checkers/explore/frontier.py): the same search with the levels encoded and on disk."""

import numpy as np
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, frontier
from kcm.checkers.explore.codec import StateCodec


def level_of(config, size):
    """The first level of `config`'s search with at least `size` states (a list of states)."""
    model = BoundedSystem(load_config(config))
    kept = []

    def expand(states):
        kept[:] = [list(states)]
        return [] if len(states) >= size else bfs.expander(model)(states)

    bfs.search(model, "local", expand, spill=None)
    return model, kept[0]


def test_a_spilled_level_gives_back_the_same_states_in_order(monkeypatch):
    monkeypatch.setattr(frontier, "CHUNK", 64)
    model, states = level_of("controller", 400)
    kept = frontier.Frontier(states, StateCodec(), spill=100)
    assert len(kept) == len(states) and kept.file is not None and kept.chunks[0][0] is not None
    assert kept.chunks[-1][0] is None and 0 < kept.ram_bytes < kept.encoded_bytes
    assert [model.fingerprint(s) for s in kept] == [model.fingerprint(s) for s in states]
    assert list(kept) == states
    for i in (len(states) - 1, 0, 130, 65, 64, 63):  # any position, across chunks in memory and on disk
        assert kept[i] == states[i]
    kept.close()
    assert kept.file is None


def test_next_level_stays_a_list_below_the_threshold():
    assert frontier.next_level(iter([1, 2]), 2, None) == [1, 2]
    assert frontier.next_level(iter([1, 2]), 2, 2) == [1, 2]


def test_controller_with_a_tiny_spill_threshold_is_the_same_search(monkeypatch):
    monkeypatch.setattr(frontier, "CHUNK", 256)
    model = BoundedSystem(load_config("controller"))
    whole = bfs.explore(model, spill=None, stop_at=None)
    spilled = bfs.explore(BoundedSystem(load_config("controller")), spill=300, stop_at=None)
    assert (spilled.distinct_states, spilled.transitions, spilled.depth) == (whole.distinct_states,
                                                                              whole.transitions, whole.depth)
    assert [n for n, _ in spilled.levels] == [n for n, _ in whole.levels]
    assert np.array_equal(spilled.visited.seen, whole.visited.seen)
    for mine, theirs in ((spilled.visited.parents, whole.visited.parents),
                         (spilled.visited.actions, whole.visited.actions)):
        assert all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))
    assert spilled.violations == whole.violations and spilled.reached == whole.reached
    assert spilled.verdicts(model.properties()) == whole.verdicts(model.properties())


def test_a_violation_found_with_the_frontier_spilled_has_the_same_counterexample():
    whole = bfs.explore(BoundedSystem(load_config("unclean")), spill=None)
    spilled = bfs.explore(BoundedSystem(load_config("unclean")), spill=0)
    assert whole.violations and spilled.violations == whole.violations
    assert spilled.distinct_states == whole.distinct_states


def test_levels_replayed_into_frontiers_are_the_levels_replayed_as_lists(monkeypatch):
    from kcm.checkers.explore.visited import replay_levels

    monkeypatch.setattr(frontier, "CHUNK", 16)
    model = BoundedSystem(load_config("unclean"))
    visited = bfs.explore(model).visited
    as_lists, compact = [], []
    replay_levels(model, visited, lambda _, states: as_lists.append([model.fingerprint(s) for s in states]),
                  spill=None)
    kinds = set()
    replay_levels(model, visited, lambda _, states: (kinds.add(type(states)), compact.append(
        [model.fingerprint(s) for s in states])), spill=20)
    assert compact == as_lists and frontier.Frontier in kinds and list in kinds
    assert [len(level) for level in as_lists] == [p.size for p in visited.parents]
