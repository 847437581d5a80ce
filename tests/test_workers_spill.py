"""`--workers N` with each worker's share and candidates kept encoded (explore/frontier.py): the same search."""

from __future__ import annotations

import numpy as np
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, frontier, workers


def _same(a, b) -> None:
    assert (a.distinct_states, a.transitions, a.depth, a.complete) == (
        b.distinct_states, b.transitions, b.depth, b.complete)
    assert a.reached == b.reached
    assert {k: [x.to_step() for x in v] for k, v in a.violations.items()} == {
        k: [x.to_step() for x in v] for k, v in b.violations.items()}
    assert np.array_equal(a.visited.seen, b.visited.seen)
    for mine, theirs in ((a.visited.parents, b.visited.parents), (a.visited.actions, b.visited.actions)):
        assert all(np.array_equal(x, y) for x, y in zip(mine, theirs, strict=True))


def test_encoded_shares_with_handovers_and_steals_give_the_one_process_search(monkeypatch):
    monkeypatch.setattr(frontier, "CHUNK", 16)  # many chunks, cut by the steals
    monkeypatch.setattr(workers, "SLACK", 0.0)  # states handed over between levels, encoded
    monkeypatch.setattr(workers, "MIN_MOVE", 0)
    monkeypatch.setattr(workers, "POLL", 1)  # and taken during a level, encoded
    monkeypatch.setattr(workers, "MIN_STEAL", 2)
    model = BoundedSystem(load_config("unclean"))
    whole = bfs.explore(model, spill=None)
    # 6 over 2 workers: every share past 3 states encoded, 1 chunk of it in memory and the rest on disk
    _same(workers.explore(model, 2, spill=6), whole)
    _same(workers.explore(model, 3, spill=None), whole)


def test_a_resumed_level_is_handed_to_the_workers_encoded(tmp_path, monkeypatch):
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.explore.level_loop import resume_frontier

    monkeypatch.setattr(frontier, "CHUNK", 16)
    monkeypatch.setattr(frontier, "SPILL", 8)  # the resumed levels are replayed into Frontiers
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    ckpt = tmp_path / "w.ckpt"
    bfs.explore(model, max_states=300, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    # the checkpoint of the level the run stopped in: 117 states, replayed into a Frontier
    assert isinstance(resume_frontier(model, checkpoint.load(ckpt, identity))[2], frontier.Frontier)
    for back in (workers.explore(model, 2, resume=checkpoint.load(ckpt, identity), spill=8),
                 bfs.explore(model, resume=checkpoint.load(ckpt, identity), spill=8)):
        assert (back.distinct_states, back.transitions, back.depth) == (
            whole.distinct_states, whole.transitions, whole.depth)
        assert {k: [x.to_step() for x in v] for k, v in back.violations.items()} == {
            k: [x.to_step() for x in v] for k, v in whole.violations.items()}
