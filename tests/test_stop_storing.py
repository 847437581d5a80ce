"""A stop with a big frontier: the checkpoint goes to the file whole without the frontier's states first, then
with them; a SIGKILL while they are stored leaves the first one, and a second signal leaves them out."""

from __future__ import annotations

import errno
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, checkpoint, level_loop, stopping, stored_states, workers
from kcm.checkers.explore.stopping import StatesLeftOut

from tests.explored import as_explored
from tests.test_explore_signals import LONG, _kcm, _same

CONFIG = "controller"
# The stop comes at the engine's 8th look at its stop request: the engines look at least once a level, and
# CONFIG has 15 levels, so the search is always cut, in whichever level the engine's pace puts that look.
LOOKS = 8
OUTCOME = ("distinct_states", "transitions", "depth", "complete", "violations")
# `kcm explore` with every stop's frontier "big", and the storing of its states held until a second signal (or
# two minutes): the window in which a supervisor's SIGKILL, or the user's second Ctrl-C, comes.
HELD = """
import sys, time
from kcm.checkers.explore import level_loop, stored_states
level_loop.STORE_BELOW = 0
real = stored_states.pack

def held(states, give_up=None):
    sys.stderr.write("test: storing held\\n")
    sys.stderr.flush()
    end = time.monotonic() + 120
    while give_up is not None and not give_up() and time.monotonic() < end:
        time.sleep(0.02)
    return real(states, give_up)

stored_states.pack = held
from kcm.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The uninterrupted run of LONG, as `kcm explore --json` prints it."""
    done = _kcm("--config", LONG, "--json", "--quiet", cwd=tmp_path_factory.mktemp("whole"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class _StopAfter(stopping.StopRequest):
    """A stop request that asks for itself at its `at`-th look: in the middle of a level."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.looks = at, 0

    def poll(self) -> bool:
        self.looks += 1
        if self.looks == self.at:
            self.request("stopped by the test")
        return super().poll()


def _outcome(found) -> tuple:
    return tuple(getattr(found, k) for k in OUTCOME)


def _recorded(monkeypatch, path: Path, identity: str, stop: stopping.StopRequest, again: bool) -> tuple[list, list]:
    """Record each checkpoint write (depth, with states?) and, while the states are made, the file as it is
    then (depth, with states?); with `again`, a second signal comes just then. Every frontier counts as big."""
    calls, on_file, real = [], [], checkpoint.Checkpointer.write

    def write(self, visited, frontier, meta, stored=None, give_up=None):
        calls.append((meta["depth"], stored is not None))

        def maker():
            if path.exists():
                snap = checkpoint.load(path, identity)
                on_file.append((snap.meta["depth"], "states.ends" in snap.arrays))
            if again:
                stop._on_signal(signal.SIGINT, None)
            return stored()

        return real(self, visited, frontier, meta, maker if stored is not None else None, give_up)

    monkeypatch.setattr(checkpoint.Checkpointer, "write", write)
    monkeypatch.setattr(level_loop, "STORE_BELOW", 0)
    return calls, on_file


@pytest.mark.parametrize("engine", ["local", "workers"])
@pytest.mark.parametrize("again", [False, True])
def test_a_big_frontiers_stop_writes_its_checkpoint_first_and_then_its_states(tmp_path, monkeypatch, capfd,
                                                                              engine, again):
    model = BoundedSystem(load_config(CONFIG))
    whole_run = bfs.explore(model)
    identity = checkpoint.config_identity(model.cfg)
    path = tmp_path / "stop.ckpt"
    stop = _StopAfter(LOOKS)
    calls, on_file = _recorded(monkeypatch, path, identity, stop, again)
    writer = checkpoint.Checkpointer(path, float("inf"), identity)
    if engine == "local":
        cut = bfs.explore(model, checkpoint=writer, stop=stop)
    else:
        cut = workers.explore(model, 2, checkpoint=writer, stop=stop)
    assert stop.acted and not cut.complete
    depth = cut.depth
    # Whole without the states first; while they were made, that file was there.
    assert calls == [(depth, False), (depth, True)] and on_file == [(depth, False)]
    err = capfd.readouterr().err
    assert f"checkpoint of level {depth} written to {path}; now storing its frontier's" in err
    snap = checkpoint.load(path, identity)
    assert ("states.ends" in snap.arrays) is not again and snap.meta["depth"] == depth
    assert "unjudged" not in snap.meta  # these engines judge each state as they meet it
    assert ("leaving the frontier's states out" in err) is again
    monkeypatch.undo()
    assert _outcome(bfs.explore(model, resume=snap)) == _outcome(whole_run)


def test_a_full_disk_while_the_states_are_stored_keeps_the_checkpoint_without_them(tmp_path, monkeypatch, capfd):
    model = BoundedSystem(load_config(CONFIG))
    identity = checkpoint.config_identity(model.cfg)
    path = tmp_path / "stop.ckpt"
    stop = _StopAfter(LOOKS)
    monkeypatch.setattr(level_loop, "STORE_BELOW", 0)
    real, saves = checkpoint.save, []

    def save(target, header, body):
        saves.append(len(body))
        if len(saves) == 2:  # the file with the states, several times bigger
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(target, header, body)

    monkeypatch.setattr(checkpoint, "save", save)
    cut = bfs.explore(model, checkpoint=checkpoint.Checkpointer(path, float("inf"), identity), stop=stop)
    assert stop.acted and stop.states_left_out and len(saves) == 2 and saves[1] > saves[0]
    snap = checkpoint.load(path, identity)
    assert "states.ends" not in snap.arrays and snap.meta["depth"] == cut.depth
    assert "the frontier's states could not be stored (No space left on device)" in capfd.readouterr().err
    monkeypatch.undo()
    assert _outcome(bfs.explore(model, resume=snap)) == _outcome(bfs.explore(model))


def test_a_stop_with_a_small_frontier_writes_once_with_its_states(tmp_path, monkeypatch):
    model = BoundedSystem(load_config(CONFIG))
    identity = checkpoint.config_identity(model.cfg)
    path = tmp_path / "stop.ckpt"
    stop = _StopAfter(LOOKS)
    calls, on_file = _recorded(monkeypatch, path, identity, stop, False)
    monkeypatch.setattr(level_loop, "STORE_BELOW", 10 ** 9)
    cut = bfs.explore(model, checkpoint=checkpoint.Checkpointer(path, float("inf"), identity), stop=stop)
    assert calls == [(cut.depth, True)] and not on_file


def test_the_encoding_gives_up_between_chunks_when_asked():
    state = next(iter(BoundedSystem(load_config("tiny")).init_states()))
    asked = []

    def give_up() -> bool:
        asked.append(1)
        return len(asked) >= 2

    made = []
    with pytest.raises(StatesLeftOut):
        for blob in stored_states.state_bytes([state] * (3 * stored_states.CHUNK), give_up):
            made.append(blob)
    assert len(made) == 2 * stored_states.CHUNK and len(asked) == 2  # asked once a chunk, after the first
    assert len(stored_states.pack([state] * 10, lambda: True)["states.ends"]) == 1  # one chunk: never asked


def test_a_stop_on_spark_writes_its_checkpoint_first_and_a_second_signal_leaves_the_states_out(spark, tmp_path,
                                                                                                 monkeypatch):
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config(CONFIG))
    whole_run = bfs.explore(model)
    identity = checkpoint.config_identity(model.cfg)
    path = tmp_path / "spark.ckpt"
    stop = stopping.StopRequest()
    entered, groups = spark_bfs._Watch.level, []

    def level(self, group, cancel=None):
        if not groups:
            stop.request("stopped by the test")  # as the first Spark level begins
        groups.append(group)
        return entered(self, group, cancel)

    monkeypatch.setattr(spark_bfs._Watch, "level", level)
    calls, on_file = _recorded(monkeypatch, path, identity, stop, True)
    cut = spark_bfs.explore(model, spark, checkpoint=checkpoint.Checkpointer(path, float("inf"), identity, "spark"),
                            host_below=1000, stop=stop)
    assert stop.acted and not cut.complete and calls == [(cut.depth, False), (cut.depth, True)]
    assert on_file == [(cut.depth, False)]
    snap = checkpoint.load(path, identity)
    assert "states.ends" not in snap.arrays and snap.meta["depth"] == cut.depth
    assert snap.meta["unjudged"]  # written before the judging pass; the resume below judges the frontier
    monkeypatch.undo()
    assert _outcome(bfs.explore(model, resume=snap)) == _outcome(whole_run)


class _Lines:
    """A process's stderr lines, read by a thread as they come (a select on a buffered pipe misses lines that a
    read has already taken in)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.lines, self.queue = proc, [], queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.queue.put(line)
        self.queue.put(None)

    def until(self, text: str, seconds: float = 120.0) -> None:
        """Wait for a line that holds `text` (failing after `seconds`, or if the output ends first)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                line = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return
        self.proc.kill()
        raise AssertionError(f"no line with {text!r}: {''.join(self.lines)[-2000:]}")

    def rest(self) -> str:
        """Everything after the lines waited for, once the output has ended."""
        self.thread.join(timeout=120)
        out = []
        while not self.queue.empty():
            line = self.queue.get()
            if line is not None:
                out.append(line)
        return "".join(out)


@pytest.mark.parametrize("second", [signal.SIGKILL, signal.SIGINT])
def test_a_sigkill_or_a_second_signal_while_the_states_are_stored_leaves_a_whole_checkpoint(tmp_path,
                                                                                            uninterrupted, second):
    ckpt = tmp_path / "run.ckpt"
    proc = subprocess.Popen([sys.executable, "-c", HELD, "explore", "--config", LONG, "--checkpoint", str(ckpt),
                             "--json"], cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = _Lines(proc)
    err.until("level ")
    proc.send_signal(signal.SIGTERM)
    err.until("test: storing held")
    assert any("now storing its frontier's" in line for line in err.lines), err.lines
    proc.send_signal(second)
    assert proc.stdout is not None
    out = proc.stdout.read()  # to its end, as the process ends
    proc.wait(timeout=120)
    rest = err.rest()
    snap = checkpoint.load(ckpt, as_explored(load_config(LONG))[1])  # the command wrote it
    assert "states.ends" not in snap.arrays and not list(tmp_path.glob(".*.tmp"))
    if second == signal.SIGINT:
        assert proc.returncode == 3 and "Traceback" not in rest, rest
        assert "leaving the frontier's states out" in rest
        assert json.loads(out)["interrupted"] == {
            "reason": "SIGTERM received", "checkpoint": str(ckpt), "frontier_states_left_out": True,
            "resume": f"kcm explore --config {LONG} --json --checkpoint {ckpt} --resume {ckpt}"}
    else:
        assert proc.returncode == -signal.SIGKILL
    resumed = _kcm("--config", LONG, "--json", "--quiet", "--resume", str(ckpt), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    _same(json.loads(resumed.stdout), uninterrupted)
