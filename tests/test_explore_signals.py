"""Runs that survive: SIGINT and SIGTERM stop `kcm explore` with a checkpoint (exit 3), `--max-memory` does too,
the resumed run ends exactly as an uninterrupted one, and a rebuild of the compiled modules leaves a running
exploration alone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kcm.checkers.explore import stopping

from kcm import compiled
from kcm.cli import main
from tests import processes

LONG = "tla-kip320"  # about 5,000 states in 12 levels: a few seconds, stopped after its first progress line
SLOW = "controller"  # about 35,000 states: long enough to rebuild the compiled modules under
COMPARED = ("distinct_states", "transitions", "depth", "complete", "verdicts", "counterexamples", "goals")


def _kcm(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcm", "explore", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def _stopped(*args: str, cwd: Path, signals: tuple[int, ...]) -> tuple[int, dict, str, int]:
    """Start `kcm explore ARGS --json`, send `signals` once its first progress line is out; exit code, summary,
    stderr and the process group (the run's own session, so that its workers can be looked for afterwards)."""
    proc = subprocess.Popen([sys.executable, "-m", "kcm", "explore", *args, "--json"], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first.startswith("level "), first
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, json.loads(out) if out.strip() else {}, first + err, proc.pid


def _group_left(pgid: int) -> list[int]:
    """Processes still in the process group `pgid` (a worker the run left behind)."""
    left = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getpgid(int(name)) == pgid:
                    left.append(int(name))
            except OSError:
                pass
    return left


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The uninterrupted run of LONG."""
    done = _kcm("--config", LONG, "--json", "--quiet", cwd=tmp_path_factory.mktemp("whole"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _same(resumed: dict, whole: dict) -> None:
    assert {k: resumed[k] for k in COMPARED} == {k: whole[k] for k in COMPARED}


def test_ctrl_c_twice_writes_the_default_checkpoint_and_the_resumed_run_ends_as_the_whole_one(tmp_path, whole):
    code, summary, err, pgid = _stopped("--config", LONG, cwd=tmp_path, signals=(signal.SIGINT, signal.SIGINT))
    ckpt = tmp_path / f"kcm-explore-{LONG}.ckpt"
    assert code == 3 and "Traceback" not in err, err
    assert ckpt.is_file() and not list(tmp_path.glob(".*.tmp"))
    assert summary["interrupted"]["reason"] == "SIGINT received" and not summary["complete"]
    assert summary["interrupted"]["resume"] == f"kcm explore --config {LONG} --json --resume {ckpt.name}"
    assert summary["distinct_states"] < whole["distinct_states"]
    assert not _group_left(pgid)
    resumed = _kcm("--config", LONG, "--json", "--quiet", "--resume", ckpt.name, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    _same(json.loads(resumed.stdout), whole)


def test_sigterm_stops_the_workers_with_the_checkpoint_asked_for_and_they_resume_it(tmp_path, whole):
    ckpt = tmp_path / "run.ckpt"
    code, summary, err, pgid = _stopped("--config", LONG, "--workers", "2", "--checkpoint", str(ckpt),
                                        cwd=tmp_path, signals=(signal.SIGTERM,))
    assert code == 3 and "Traceback" not in err, err
    assert "SIGTERM received: stopping" in err and ckpt.is_file()
    assert summary["interrupted"]["checkpoint"] == str(ckpt)
    time.sleep(0.2)
    assert not _group_left(pgid), "a worker process outlived the run"
    resumed = _kcm("--config", LONG, "--json", "--quiet", "--workers", "2", "--resume", str(ckpt), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    _same(json.loads(resumed.stdout), whole)


def test_max_memory_stops_with_a_checkpoint_and_the_resumed_run_finds_the_same_counterexamples(tmp_path):
    # `unclean` has a violation: the resumed run must print the uninterrupted run's counterexample.
    whole = _kcm("--config", "unclean", "--json", "--quiet", cwd=tmp_path)
    stopped = _kcm("--config", "unclean", "--json", "--max-memory", "1M", cwd=tmp_path)
    assert stopped.returncode == 3 and "Traceback" not in stopped.stderr, stopped.stderr
    summary = json.loads(stopped.stdout)
    assert "passed --max-memory 1 MiB" in summary["interrupted"]["reason"]
    ckpt = tmp_path / "kcm-explore-unclean.ckpt"
    assert ckpt.is_file() and summary["interrupted"]["resume"].endswith(f"--max-memory 1M --resume {ckpt.name}")
    resumed = _kcm("--config", "unclean", "--json", "--quiet", "--resume", ckpt.name, cwd=tmp_path)
    assert whole.returncode == resumed.returncode == 1, resumed.stderr
    _same(json.loads(resumed.stdout), json.loads(whole.stdout))


def test_max_memory_takes_a_size_and_refuses_anything_else_in_one_line(capsys):
    assert stopping.parse_size("6G") == 6 << 30 and stopping.parse_size("500M") == 500 << 20
    assert stopping.parse_size("1.5g") == 3 << 29 and stopping.parse_size("2048KiB") == 2 << 20
    for bad in ("6X", "-1G", "12", "0.5M", "nan", "9" * 60, ""):
        assert main(["explore", "--config", "tiny", "--max-memory", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--max-memory" in err, (bad, err)
    assert main(["explore", "--config", "tiny", "--walks", "2", "--max-memory", "1G"]) == 2
    assert "exhaustive search" in capsys.readouterr().err


def test_the_memory_read_covers_the_process_and_its_children():
    child = subprocess.Popen([sys.executable, "-c", "b = b'x' * (64 << 20); import time; time.sleep(30)"])
    try:
        time.sleep(1.5)
        alone = stopping.memory_in_use(child.pid)
        assert alone >= 60 << 20
        assert stopping.memory_in_use() >= alone + (10 << 20)  # this process holds pytest and kcm besides
    finally:
        child.kill()
        child.wait()


READER = """
import mmap, sys, time
with open(sys.argv[1], "rb") as f:
    view = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("mapped", flush=True)
end = time.monotonic() + 1.5
total = 0
while time.monotonic() < end:
    for at in range(0, len(view), 4096):
        total += view[at]
print("read", total > 0)
"""


def _reader_survives(path: Path, replace) -> int:
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path)], stdout=subprocess.PIPE, text=True)
    assert reader.stdout is not None and reader.stdout.readline() == "mapped\n"
    replace()
    reader.communicate(timeout=60)
    return reader.returncode


def test_install_file_renames_a_new_file_over_a_mapped_one_and_leaves_an_unchanged_one_alone(tmp_path):
    target, new, short = tmp_path / "mod.so", tmp_path / "new.so", tmp_path / "short.so"
    target.write_bytes(b"\1" * (4 << 20))
    new.write_bytes(b"\2" * (1 << 20))
    short.write_bytes(b"\3" * 4096)
    inode = target.stat().st_ino
    assert _reader_survives(target, lambda: compiled.install_file(new, target)) == 0
    assert target.read_bytes() == new.read_bytes() and target.stat().st_ino != inode
    inode = target.stat().st_ino
    assert compiled.install_file(new, target) is False and target.stat().st_ino == inode
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    # What the build did before, a copy over the mapped file, kills the reader: the check above can fail.
    assert _reader_survives(target, lambda: shutil.copyfile(short, target)) == -signal.SIGBUS


RUN_FROM = """
import sys
from pathlib import Path
from kcm import compiled
sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, compiled.CompiledFinder)]
compiled.install(Path(sys.argv[1]))
from kcm.cli import main
code = main(["explore", "--config", sys.argv[2], "--quiet"])
print("compiled modules:", len(compiled.compiled_modules()), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.skipif(not compiled.MANIFEST.is_file(), reason="no compiled build (KCM_COMPILED=1 bash ci/setup.sh)")
def test_an_exploration_runs_on_while_every_compiled_module_is_installed_again(tmp_path):
    build = tmp_path / "build"
    shutil.copytree(compiled.BUILD, build)
    run = subprocess.Popen([sys.executable, "-c", RUN_FROM, str(build), SLOW], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    binaries = sorted(build.glob("*.so"))
    mapped: list[Path] = []
    deadline = time.monotonic() + 60
    while len(mapped) < 5 and time.monotonic() < deadline and run.poll() is None:  # the search has begun
        time.sleep(0.2)
        maps = Path(f"/proc/{run.pid}/maps").read_text()
        mapped = [b for b in binaries if str(b) in maps]
    assert run.poll() is None and mapped, "the run loaded no compiled module from the copy"
    for binary in binaries:
        # A rebuilt module: other bytes (a pad after the ELF contents, which the loader ignores).
        rebuilt = tmp_path / binary.name
        rebuilt.write_bytes(binary.read_bytes() + b"\0" * 4096)
        assert compiled.install_file(rebuilt, binary)
    maps = Path(f"/proc/{run.pid}/maps").read_text()
    assert all(f"{b} (deleted)" in maps for b in mapped), "a mapped module was written over in place"
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err
    assert "compiled modules: 0" not in err



def test_a_stopped_spark_run_cancels_its_level_writes_its_checkpoint_and_resumes_exactly(spark, tmp_path,
                                                                                          monkeypatch):
    from kcm.checkers.core.bounded import BoundedSystem, load_config
    from kcm.checkers.explore import bfs, checkpoint
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("controller"))
    whole = bfs.explore(model)
    identity = checkpoint.config_identity(model.cfg)
    path = tmp_path / "spark.ckpt"
    stop = stopping.StopRequest()
    entered, cancelled, levels = spark_bfs._Watch.level, [], []

    # The stand-in for a signal: a stop asked for as the first Spark level begins. The watch cancels the level's
    # job group at each look until the level ends, and a level of thousands of states lasts many looks (a timer
    # here once fired after a level of `unclean`'s few states had ended).
    def level(self, group):
        if not levels:
            stop.request("stopped by the test")
        levels.append(int(group.rpartition("-")[2]))
        return entered(self, group)

    spark_level = spark_bfs._Search.spark_level

    def watched(self, *args):
        try:
            return spark_level(self, *args)
        except Exception:
            cancelled.append(args[1])
            raise

    monkeypatch.setattr(spark_bfs._Watch, "level", level)
    monkeypatch.setattr(spark_bfs._Search, "spark_level", watched)
    # The levels of more than 1,000 states on Spark (the first ones in the driver).
    cut = spark_bfs.explore(model, spark, checkpoint=checkpoint.Checkpointer(path, float("inf"), identity, "spark"),
                            host_below=1000, stop=stop)
    assert stop.acted and not cut.complete and not cut.stopped and path.is_file()
    # The level in work given up, the checkpoint of its start written.
    assert levels[0] > 0 and cancelled == levels and cut.depth == levels[0]
    resumed = bfs.explore(model, resume=checkpoint.load(path, identity))
    assert (resumed.distinct_states, resumed.transitions, resumed.depth, resumed.complete, resumed.violations) == (
        whole.distinct_states, whole.transitions, whole.depth, whole.complete, whole.violations)


class _SignalsInReplay:
    """The model, sending this process SIGTERM at its `at`-th successor: inside a resume's rebuild of its levels."""

    def __init__(self, model: object, at: int) -> None:
        self.inner, self.at, self.calls = model, at, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def next_state(self, state: object, action: object) -> object:
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.inner.next_state(state, action)


def test_a_signal_while_a_resume_rebuilds_its_frontier_ends_the_run_at_once_and_leaves_the_checkpoint(tmp_path):
    from kcm.checkers.core.bounded import BoundedSystem, load_config
    from kcm.checkers.explore import bfs, checkpoint

    model = BoundedSystem(load_config("controller"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "controller.ckpt"
    bfs.explore(model, max_states=3000, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    before = ckpt.read_bytes()
    snapshot = checkpoint.load(ckpt, identity)
    nudged = _SignalsInReplay(model, 200)
    stop = stopping.StopRequest()
    with pytest.raises(stopping.Interrupted) as caught, stopping.on_signals(stop), stop.search():
        bfs.explore(nudged, resume=snapshot, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity), stop=stop)
    assert str(caught.value) == "SIGTERM received" and str(ckpt) in caught.value.where
    assert "unchanged" in caught.value.where
    assert nudged.calls < 1000  # the rebuild was cut where the signal came, not carried to its end
    assert ckpt.read_bytes() == before


def test_the_workers_end_by_themselves_when_the_coordinator_is_killed(tmp_path):
    # SIGKILL cannot be handled: the workers (which leave SIGINT and SIGTERM to the coordinator) must see it go.
    # `default` (641,636 states) is still running when the workers are found.
    folder = tmp_path / "tmp"
    folder.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "kcm", "explore", "--config", "default", "--workers", "2"],
                           cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, env={**os.environ, "TMPDIR": str(folder)})
    helpers: list[processes.Proc] = []
    try:
        deadline = time.monotonic() + 120
        while len(helpers) < 2:
            assert run.poll() is None, run.stderr.read() if run.stderr else ""
            assert time.monotonic() < deadline, "the two workers were not started within 120 s"
            time.sleep(0.05)
            helpers = processes.children(run.pid)
        run.kill()
        run.wait(timeout=30)
        deadline = time.monotonic() + 30
        while [w for w in helpers if processes.alive(w)] and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [w for w in helpers if processes.alive(w)]
        assert not left, f"workers {left} outlived their killed coordinator by 30 s"
        err = run.stderr.read() if run.stderr else ""
        assert "Traceback" not in err, err  # the workers' stderr is the coordinator's: they ended quietly
        assert not list(folder.iterdir())
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        processes.kill(helpers)


def test_a_stopped_search_leaves_the_signal_ignored_here_but_not_in_processes_started_later():
    stop = stopping.StopRequest()
    with stopping.on_signals(stop), stop.search():
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.reason == "SIGTERM received"
    os.kill(os.getpid(), signal.SIGTERM)  # repeated on the way out: no traceback, no exit
    child = subprocess.run([sys.executable, "-c", "import signal; print(int(signal.getsignal(signal.SIGTERM)))"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(int(signal.SIG_DFL))  # SIG_IGN would be inherited: such a run never stops


def test_a_signal_repeated_after_a_stop_stays_ignored_through_the_interpreters_shutdown():
    # Python puts SIG_DFL back for its handlers while it shuts down: a second Ctrl-C then killed a stopped run
    # (exit -2 instead of 3). The last exit handler (registered first, run last) sees what the signal's action is.
    script = """
import atexit, os, signal
atexit.register(lambda: print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True))
from kcm.checkers.explore import stopping
stop = stopping.StopRequest()
with stopping.on_signals(stop), stop.search():
    os.kill(os.getpid(), signal.SIGINT)
print(stop.reason, flush=True)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split("\n")[:2] == ["SIGINT received", "True"], done
