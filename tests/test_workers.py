"""`kcm explore --workers N`: worker processes give the single-process engine's counts, verdicts and counterexamples."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, checkpoint, workers

from kcm.cli import main
from tests.explored import as_explored


def _same(a, b) -> None:
    assert (a.distinct_states, a.transitions, a.depth, a.complete, a.stopped) == (
        b.distinct_states, b.transitions, b.depth, b.complete, b.stopped)
    assert a.reached == b.reached
    assert {k: [x.to_step() for x in v] for k, v in a.violations.items()} == {
        k: [x.to_step() for x in v] for k, v in b.violations.items()}
    assert [n for n, _ in a.levels] == [n for n, _ in b.levels]


@pytest.mark.parametrize("config", ["tiny", "unclean", "bugs/KAFKA-2729"])
@pytest.mark.parametrize("count", [2, 3])
def test_owner_processes_find_what_one_process_finds(config, count):
    model = BoundedSystem(load_config(config))
    _same(workers.explore(model, count), bfs.explore(model))


def test_shares_are_evened_out_by_handovers():
    assert workers.plan_moves([10, 10]) == []
    assert workers.plan_moves([1000, 0]) == [(0, 1, 500)]
    assert workers.plan_moves([520, 480]) == []  # within the slack: not worth the pickling
    moves = workers.plan_moves([900, 50, 50])
    after = [900, 50, 50]
    for giver, taker, count in moves:
        after[giver] -= count
        after[taker] += count
    assert sorted(after) == [333, 333, 334]


def test_idle_workers_take_work_from_busy_ones(monkeypatch):
    # No handover between levels: the worker that expands the single initial state keeps every state it finds,
    # so the others work only on what they take from it during a level.
    monkeypatch.setattr(workers, "plan_moves", lambda counts: [])
    monkeypatch.setattr(workers, "POLL", 1)
    monkeypatch.setattr(workers, "MIN_STEAL", 2)
    gifts = []
    recv = workers._Pool.recv

    def counting(pool, w, stop=None):
        msg = recv(pool, w, stop)
        if msg[0] == "gift" and msg[1]:
            gifts.append(w)
        return msg

    monkeypatch.setattr(workers._Pool, "recv", counting)
    model = BoundedSystem(load_config("unclean"))
    _same(workers.explore(model, 3), bfs.explore(model))
    assert gifts


def test_states_handed_over_between_levels_keep_the_result(monkeypatch):
    monkeypatch.setattr(workers, "SLACK", 0.0)
    monkeypatch.setattr(workers, "MIN_MOVE", 0)
    relayed = []
    relay = workers._Pool.relay

    def counting(pool, g, t, stop=None):
        relayed.append((g, t))
        relay(pool, g, t, stop)

    monkeypatch.setattr(workers._Pool, "relay", counting)
    model = BoundedSystem(load_config("bugs/KAFKA-2729"))
    _same(workers.explore(model, 2), bfs.explore(model))
    assert relayed


class _DiesInAWorker:
    """A model whose steps end the process they run in, once that is not the coordinator's."""

    def __init__(self, model) -> None:
        self.model, self.parent = model, os.getpid()

    def __getattr__(self, name):
        return getattr(self.model, name)

    def successor(self, state, action):
        if os.getpid() != self.parent:
            os._exit(3)
        return self.model.successor(state, action)


def test_a_worker_that_dies_is_reported():
    model = _DiesInAWorker(BoundedSystem(load_config("tiny")))
    with pytest.raises(RuntimeError, match="died"):
        workers.explore(model, 2)


class _ResetPipe:
    """A coordinator's end of a pipe whose worker has gone: reset on reading, broken on writing."""

    def poll(self) -> bool:
        return True

    def recv(self):
        raise ConnectionResetError(104, "Connection reset by peer")

    def recv_bytes(self):
        raise ConnectionResetError(104, "Connection reset by peer")

    def send(self, msg) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    send_bytes = send


class _GoneProcess:
    pid, exitcode = 4242, 3

    def join(self, timeout=None) -> None:
        pass


@pytest.mark.parametrize("use", ["recv", "send", "relay"])
def test_a_pipe_reset_or_broken_by_a_dying_worker_is_told_as_its_death(use):
    # Which error a dead worker's pipe gives depends on the moment it went (EOF, reset, broken pipe): all are its death.
    pool = workers._Pool.__new__(workers._Pool)
    pool.conns, pool.procs = [_ResetPipe(), _ResetPipe()], [_GoneProcess(), _GoneProcess()]
    call = {"recv": lambda: pool.recv(0), "send": lambda: pool.send(0, ("expand",)), "relay": lambda: pool.relay(0, 1)}
    with pytest.raises(RuntimeError, match="worker process 4242 died"):
        call[use]()


def test_owner_processes_stop_at_the_same_first_violation():
    model = BoundedSystem(load_config("unclean"))
    stop = bfs.safety_names(model)
    one, two = bfs.explore(model, stop_at=stop), workers.explore(model, 2, stop_at=stop)
    assert one.stopped and one.violations
    _same(two, one)


def test_a_checkpoint_of_the_owner_processes_resumes_on_one_process_and_back(tmp_path):
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    ckpt = tmp_path / "w.ckpt"
    workers.explore(model, 2, max_states=300, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    resumed = bfs.explore(model, resume=checkpoint.load(ckpt, identity))
    assert (resumed.distinct_states, resumed.transitions, resumed.depth) == (
        whole.distinct_states, whole.transitions, whole.depth)
    bfs.explore(model, max_states=300, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    back = workers.explore(model, 2, resume=checkpoint.load(ckpt, identity))
    assert (back.distinct_states, back.transitions, back.depth) == (
        whole.distinct_states, whole.transitions, whole.depth)
    assert back.violations.keys() == whole.violations.keys()


def test_workers_option_on_the_command_line(capsys):
    assert main(["explore", "--config", "tiny", "--quiet", "--json", "--workers", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_states"] == 381
    assert main(["explore", "--config", "tiny", "--quiet", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_a_killed_run_of_owner_processes_resumes_to_the_whole_counts(tmp_path):
    cli = [sys.executable, "-c", "import sys; from kcm.cli import main; sys.exit(main(sys.argv[1:]))", "explore",
           "--config", "controller", "--quiet", "--workers", "2"]
    ckpt = tmp_path / "controller.ckpt"
    identity = as_explored(load_config("controller"))[1]  # the command writes it

    def depth() -> int:
        try:
            return checkpoint.load(ckpt, identity).meta["depth"]
        except checkpoint.BadCheckpoint:
            return -1

    proc = subprocess.Popen(cli + ["--checkpoint", str(ckpt), "--checkpoint-every", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while depth() < 6:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint at level 6 within 300 s"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its worker processes at once
        proc.wait()
    done = subprocess.run(cli + ["--json", "--resume", str(ckpt)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["distinct_states"], out["transitions"], out["depth"], out["complete"]) == (27697, 52648, 13, True)
