"""`--workers N` with each worker's share and candidates kept encoded (explore/frontier.py): the same search."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, frontier, runs, workers

from tests import processes


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


class _Logged(runs.LevelRuns):
    """The runs of a worker's level in work, each run's records and link-only records logged to a file (the
    workers are forked: the log is how the test sees that their levels went to disk)."""

    log = ""

    def write(self, fps, parents, actions, blobs, verdicts):
        with open(self.log, "a") as f:
            f.write(f"{len(fps)} {sum(b is None for b in blobs)}\n")
        return super().write(fps, parents, actions, blobs, verdicts)


def _runs_logged(monkeypatch, tmp_path) -> str:
    log = str(tmp_path / "runs.log")
    monkeypatch.setattr(_Logged, "log", log)
    monkeypatch.setattr(workers, "LevelRuns", _Logged)
    monkeypatch.setattr(frontier, "CHUNK", 16)  # many chunks, cut by the steals
    monkeypatch.setattr(runs, "BLOCK", 5)  # many blocks a run
    monkeypatch.setattr(workers, "SLACK", 0.0)  # states handed over between levels, out of the runs' merge
    monkeypatch.setattr(workers, "MIN_MOVE", 0)
    monkeypatch.setattr(workers, "POLL", 1)  # and taken during a level: the rows come out of position order
    monkeypatch.setattr(workers, "MIN_STEAL", 2)
    return log


@pytest.mark.parametrize(("config", "bound", "spill", "run"), [("unclean", None, 6, 8), ("unclean", None, 30, 4),
                                                                ("controller", 5000, 150, 40)])
def test_each_workers_level_in_work_on_disk_gives_the_one_process_search(monkeypatch, tmp_path, config, bound,
                                                                         spill, run):
    log = _runs_logged(monkeypatch, tmp_path)
    model = BoundedSystem(load_config(config))
    whole = bfs.explore(model, bound, spill=None)
    on_disk = workers.explore(model, 2, bound, spill=spill, run_size=run)
    written = [tuple(map(int, line.split())) for line in open(log)]
    assert len(written) > 10 and sum(n for n, _ in written) > 100  # the levels in work went to disk
    _same(on_disk, whole)
    _same(on_disk, workers.explore(model, 2, bound, spill=spill, run_size=None))  # the workers' in-memory path
    _same(on_disk, bfs.explore(model, bound, spill=spill))  # the local engine's runs
    assert [n for n, _ in on_disk.levels] == [n for n, _ in whole.levels]
    assert on_disk.goals.keys() == whole.goals.keys()
    assert whole.violations or config != "unclean"


def test_a_checkpoint_of_workers_with_their_levels_on_disk_is_the_one_process_checkpoint(monkeypatch, tmp_path):
    from kcm.checkers.explore import checkpoint

    _runs_logged(monkeypatch, tmp_path)
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    mine, theirs = tmp_path / "w.ckpt", tmp_path / "b.ckpt"
    workers.explore(model, 2, max_states=300, checkpoint=checkpoint.Checkpointer(mine, 0, identity), spill=6,
                    run_size=4)
    bfs.explore(model, max_states=300, checkpoint=checkpoint.Checkpointer(theirs, 0, identity), spill=None)
    a, b = checkpoint.load(mine, identity), checkpoint.load(theirs, identity)
    # The workers' shares gathered in position order store the frontier's states byte for byte as the one process
    # does (chunks of states packed one by one in the workers, joined in the coordinator).
    assert {"states.data", "states.ends"} <= a.arrays.keys()
    assert a.arrays.keys() == b.arrays.keys()
    assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
    assert a.meta["depth"] == b.meta["depth"]
    _no_replay(monkeypatch)
    for back in (workers.explore(model, 2, resume=a, spill=6, run_size=4), bfs.explore(model, resume=b)):
        _same(back, whole)


def _no_replay(monkeypatch) -> None:
    from kcm.checkers.explore import level_loop

    def no_replay(*_args, **_kwargs):
        raise AssertionError("a resume from stored states replayed the levels")

    monkeypatch.setattr(level_loop, "replay_levels", no_replay)


@pytest.mark.parametrize(("spill", "run"), [(6, 4), (None, None)])
def test_a_stop_in_the_middle_of_a_level_stores_every_workers_share_whatever_was_handed_over(monkeypatch, tmp_path,
                                                                                            spill, run):
    # States handed to an idle worker during the level stay in the giver's share, so the shares gathered at the
    # stop are the level's states once each, in order, however the level was shared out.
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.explore.stopping import StopRequest

    _runs_logged(monkeypatch, tmp_path)
    model = BoundedSystem(load_config("controller"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model, spill=None)
    stop = StopRequest()
    real = workers._Pool.recv
    gifts: list[int] = []

    def recv(self, w, stop_=None):
        msg = real(self, w, stop_)
        if msg[0] == "gift" and msg[1]:
            gifts.append(w)
            if len(gifts) == 12:  # well into the search, with states handed over in this level
                stop.request("a test")
        return msg

    monkeypatch.setattr(workers._Pool, "recv", recv)
    ckpt = tmp_path / "w.ckpt"
    cut = workers.explore(model, 2, checkpoint=checkpoint.Checkpointer(ckpt, float("inf"), identity), stop=stop,
                          spill=spill, run_size=run)
    assert stop.acted and not cut.complete and 0 < cut.depth < whole.depth
    snap = checkpoint.load(ckpt, identity)
    assert {"states.data", "states.ends"} <= snap.arrays.keys()
    monkeypatch.setattr(workers._Pool, "recv", real)
    _no_replay(monkeypatch)
    _same(workers.explore(model, 2, resume=snap, spill=spill, run_size=run), whole)


def test_a_big_first_frontier_is_handed_to_encoded_shares_a_chunk_at_a_time(monkeypatch):
    # One `extend` per state sealed and reopened (decompressed, compressed again) a share's last chunk for every
    # state: a resumed level of 150,014 states on `large` kept the workers from starting for over 15 minutes.
    monkeypatch.setattr(workers, "CHUNK", 8)
    calls: list[int] = []
    real = workers.Share.extend

    def counted(self, rows):
        rows = list(rows)
        calls.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(workers.Share, "extend", counted)
    model = BoundedSystem(load_config("unclean"))
    first = model.init_states() * 50  # 50 states (copies of the one initial state: only the hand-over is checked)
    levels = workers.SharedLevels(model, 2, False, 4)  # past 2 states a share is encoded
    try:
        levels.begin(first)
    finally:
        levels.close(1.0)
    handed = [n for n in calls if n]
    assert sum(handed) == 50 and len(handed) <= 50 // 8 + 2 and max(handed) == 8


def _stop_after_the_fourth_expansion(monkeypatch, tmp_path, ask) -> tuple:
    """`unclean` on two workers with runs on disk, `ask(stop)` called once the 4th level's expansion is done (its
    winners are then to be judged and handed over): the model, the whole run, the cut one, its checkpoint and the
    stop request."""
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.explore.stopping import StopRequest

    _runs_logged(monkeypatch, tmp_path)
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    stop = StopRequest()
    real = workers._Pool.expand
    expanded: list[int] = []

    def expand_then_stop(self, *args, **kwargs):
        reports = real(self, *args, **kwargs)
        expanded.append(1)
        if len(expanded) == 4:
            ask(stop)
        return reports

    monkeypatch.setattr(workers._Pool, "expand", expand_then_stop)
    ckpt = tmp_path / "w.ckpt"
    cut = workers.explore(model, 2, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity), stop=stop, spill=6,
                          run_size=4)
    monkeypatch.setattr(workers._Pool, "expand", real)
    assert stop.acted and not cut.complete and len(expanded) == 4
    return model, whole, cut, checkpoint.load(ckpt, identity), stop


def test_a_signal_while_the_workers_judge_their_winners_keeps_the_level_and_stores_its_states(monkeypatch, tmp_path,
                                                                                               capfd):
    # The winners' judging and hand-over is about a tenth of a level: a signal's stop waits for it, so the level
    # is kept and the checkpoint stores its states (before, the level was given up and the file replayed).
    model, whole, cut, snapshot, _ = _stop_after_the_fourth_expansion(
        monkeypatch, tmp_path, lambda stop: stop.request("SIGTERM received"))
    assert cut.depth == 4  # the 4th level was recorded
    assert cut.distinct_states == whole.distinct_states - sum(n for n, _ in whole.levels[4:])
    assert "Traceback" not in capfd.readouterr().err
    assert "states.data" in snapshot.arrays
    _no_replay(monkeypatch)
    _same(workers.explore(model, 2, resume=snapshot, spill=6, run_size=4), whole)


def test_the_memory_limit_while_the_workers_judge_their_winners_gives_the_level_up(monkeypatch, tmp_path, capfd):
    # Past --max-memory nothing waits: the level is given up at once and the checkpoint of the last whole level
    # written, without states (the workers had let go of them for their winners), so its resume replays.
    def over_memory(stop) -> None:
        stop.max_memory = 1 << 20  # no process is that small: the next reading passes it
        stop._next = 0.0

    model, whole, cut, snapshot, stop = _stop_after_the_fourth_expansion(monkeypatch, tmp_path, over_memory)
    assert stop.over_memory and "--max-memory" in stop.reason
    assert cut.depth == 3  # the 4th level was given up, not recorded
    assert cut.distinct_states == whole.distinct_states - sum(n for n, _ in whole.levels[3:])
    assert "Traceback" not in capfd.readouterr().err
    assert "states.data" not in snapshot.arrays
    _same(workers.explore(model, 2, resume=snapshot, spill=6, run_size=4), whole)


# `default`: the signal comes at the first level a worker writes runs for, with most of the search still ahead.
# SIGUSR1 dumps the coordinator's stack: the failure message then says where it was if it does not end.
_RUN = """
import faulthandler, signal
faulthandler.register(signal.SIGUSR1)
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import workers
from kcm.checkers.explore.stopping import StopRequest, on_signals

stop = StopRequest()
with on_signals(stop), stop.search():
    found = workers.explore(BoundedSystem(load_config("default")), 2, stop=stop, spill=150, run_size=40)
print("stopped" if stop.reason else "done", found.complete, flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_coordinator_while_a_worker_holds_run_files_ends_the_workers_and_their_files(tmp_path, sig):
    folder = tmp_path / "tmp"
    folder.mkdir()
    run = subprocess.Popen([sys.executable, "-c", _RUN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(folder)}, start_new_session=True)
    helpers: list[processes.Proc] = []
    try:
        deadline = time.monotonic() + 120
        # Evidence, not a delay: a worker has a file of its own open in the folder.
        while not helpers or not any(processes.files_in(w[0], str(folder)) for w in helpers):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no worker opened a file within 120 s"
            time.sleep(0.02)
            helpers = processes.children(run.pid)
        run.send_signal(sig)
        try:
            out, err = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            run.send_signal(signal.SIGUSR1)
            time.sleep(1)
            run.kill()
            out, err = run.communicate()
            pytest.fail(f"no exit within 60 s of {sig.name}; the coordinator's stack:\n{err[-4000:]}")
        deadline = time.monotonic() + 30
        while [w for w in helpers if processes.alive(w)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in helpers if processes.alive(w)], "a worker outlived the run"
        assert "Traceback" not in err, err
        assert out.split() == (["stopped", "False"] if sig == signal.SIGTERM else [])
        assert run.returncode == (0 if sig == signal.SIGTERM else -signal.SIGKILL)
        assert not list(folder.iterdir())  # and no file is left in the folder
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        processes.kill(helpers)


def test_a_share_that_cannot_be_stored_whole_leaves_the_checkpoint_without_states(monkeypatch, tmp_path):
    # A worker that fails to encode part of its share (a value the encoding does not know) says so: a frontier
    # stored in part would be refused on resume, so none is stored and the resume replays.
    from kcm.checkers.explore import checkpoint, stored_states

    monkeypatch.setattr(workers, "CHUNK", 4)  # each worker sends its share in batches of 4
    real, calls = stored_states.state_bytes, []

    def fails_after_one_batch(states):
        calls.append(1)  # per process: the workers are forked
        if len(calls) > 1:
            raise TypeError("a value the encoding does not know")
        return real(states)

    monkeypatch.setattr(stored_states, "state_bytes", fails_after_one_batch)
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "w.ckpt"
    workers.explore(model, 2, max_states=300, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    snap = checkpoint.load(ckpt, identity)
    assert snap.arrays["frontier"].size > 8 and "states.data" not in snap.arrays
    monkeypatch.setattr(stored_states, "state_bytes", real)
    _same(workers.explore(model, 2, resume=snap), bfs.explore(model))
