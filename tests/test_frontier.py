"""The compact, spilled frontier (checkers/explore/frontier.py) and the level in work on disk (runs.py): the same
search with the levels encoded and on disk."""

import contextlib
import os
import tempfile

import numpy as np
import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, frontier, runs
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


@pytest.mark.parametrize("run_size", [runs.RUN, 7])
def test_levels_replayed_into_frontiers_are_the_levels_replayed_as_lists(monkeypatch, run_size):
    from kcm.checkers.explore.visited import replay_levels

    monkeypatch.setattr(frontier, "CHUNK", 16)
    monkeypatch.setattr(runs, "RUN", run_size)  # a big level replayed goes to disk in runs sorted by position
    monkeypatch.setattr(runs, "BLOCK", 3)
    model = BoundedSystem(load_config("unclean"))
    visited = bfs.explore(model).visited
    as_lists, compact = [], []
    replay_levels(model, visited, lambda _, states: as_lists.append([model.fingerprint(s) for s in states]),
                  spill=None)
    kinds = set()
    written = counting_runs(monkeypatch)
    replay_levels(model, visited, lambda _, states: (kinds.add(type(states)), compact.append(
        [model.fingerprint(s) for s in states])), spill=20)
    assert compact == as_lists and frontier.Frontier in kinds and list in kinds
    assert len(written) > (10 if run_size == 7 else 0)
    assert [len(level) for level in as_lists] == [p.size for p in visited.parents]


def same_search(a, b, model):
    """Every count, level, visited array, parent link, verdict, goal and counterexample of two searches equal."""
    assert (a.distinct_states, a.transitions, a.depth, a.complete) == (b.distinct_states, b.transitions, b.depth,
                                                                       b.complete)
    assert [n for n, _ in a.levels] == [n for n, _ in b.levels]
    fa, fb = a.visited.arrays(), b.visited.arrays()
    assert fa.keys() == fb.keys() and all(np.array_equal(fa[k], fb[k]) for k in fa)
    assert a.violations == b.violations and a.reached == b.reached and a.goals == b.goals
    assert a.verdicts(model.properties()) == b.verdicts(model.properties())


def counting_runs(monkeypatch):
    """Count the runs written to disk (so a test knows the level in work went there)."""
    written = []
    real = runs.LevelRuns.write

    def write(self, fps, *rest):
        written.append(len(fps))
        return real(self, fps, *rest)

    monkeypatch.setattr(runs.LevelRuns, "write", write)
    return written


@pytest.mark.parametrize(("config", "spill", "run_size"), [("controller", 150, 40), ("unclean", 30, 8)])
def test_the_level_in_work_on_disk_in_tiny_runs_is_the_same_search(monkeypatch, config, spill, run_size):
    monkeypatch.setattr(frontier, "CHUNK", 64)
    monkeypatch.setattr(runs, "BLOCK", 5)
    monkeypatch.setattr(bfs, "CHUNK", 50)  # candidates checked against the visited set (and the runs) at once
    model = BoundedSystem(load_config(config))
    bound = 5000 if config == "controller" else None  # controller to its level of 3,508 states (quick)
    whole = bfs.search(model, "local", bfs.expander(model), bound, spill=None)
    in_memory = bfs.search(model, "local", bfs.expander(model), bound, spill=spill, run_size=None)
    written = counting_runs(monkeypatch)
    on_disk = bfs.search(model, "local", bfs.expander(model), bound, spill=spill, run_size=run_size)
    assert len(written) > 10
    same_search(on_disk, whole, model)
    same_search(in_memory, whole, model)
    if config == "unclean":
        assert whole.violations


def test_runs_keep_the_least_link_when_the_engine_yields_out_of_order(monkeypatch):
    monkeypatch.setattr(runs, "BLOCK", 3)
    monkeypatch.setattr(bfs, "CHUNK", 20)
    model = BoundedSystem(load_config("unclean"))
    expand = bfs.expander(model)

    def backwards(level):
        return list(expand(level))[::-1]  # a state's least link comes last: the runs hold link-only records

    whole = bfs.search(model, "local", expand, spill=None)
    written = counting_runs(monkeypatch)
    reverse = bfs.search(model, "local", backwards, spill=30, run_size=25)
    assert written
    same_search(reverse, whole, model)


def open_in(folder):
    """The descriptors of this process open on files made in `folder` (unlinked ones included)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
                out.append(fd)
    return out


def test_the_run_files_do_not_outlive_the_level_nor_an_interrupted_one(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(bfs, "CHUNK", 50)
    seen_open = []
    real = runs.LevelRuns.write

    def write(self, *args):
        real(self, *args)
        seen_open.append(len(open_in(tmp_path)))

    monkeypatch.setattr(runs.LevelRuns, "write", write)
    model = BoundedSystem(load_config("controller"))
    bfs.search(model, "local", bfs.expander(model), spill=200, run_size=50, max_states=3000)
    assert seen_open and min(seen_open) >= 1  # the runs were in a file there while the level was in work
    assert not list(tmp_path.iterdir()) and not open_in(tmp_path)
    expand = bfs.expander(model)
    rows = 0

    def interrupted(level):
        nonlocal rows
        for row in expand(level):
            rows += 1
            if rows > 4000 and seen_open[-1] and len(seen_open) > 20:
                raise KeyboardInterrupt  # Ctrl-C in the middle of a level with runs on disk
            yield row

    seen_open.clear()
    with pytest.raises(KeyboardInterrupt):
        bfs.search(model, "local", interrupted, spill=200, run_size=50)
    assert seen_open and not list(tmp_path.iterdir()) and not open_in(tmp_path)


def test_the_written_fingerprints_answer_membership_as_a_set_does():
    rng = np.random.default_rng(7)
    written, every = runs.Written(), set()
    for size in (5, 300, 1, 40, 40, 2000, 7):
        fresh = np.setdiff1d(rng.integers(0, 1 << 63, size * 2, dtype=np.uint64), np.array(sorted(every), np.uint64))
        fresh = np.unique(fresh)[:size]
        written.add(fresh)
        every.update(fresh.tolist())
        probe = np.concatenate([fresh[:3], rng.integers(0, 1 << 63, 50, dtype=np.uint64)])
        assert written.has(probe).tolist() == [int(fp) in every for fp in probe.tolist()]
    assert len(written) == len(every) and len(written.parts) < 7  # like sizes were merged
    assert all(np.all(p[1:] > p[:-1]) for p in written.parts)
