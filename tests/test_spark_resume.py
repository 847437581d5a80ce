"""Spark checkpoints: the local engine's file format, resumed by either engine; a killed Spark run resumes exactly."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, checkpoint
from kcm.checkers.explore.stopping import StopRequest
from kcm.checkers.spark.checkpoint import NO_PARENT, Links, as_longs

from tests.explored import as_explored

IN_CI = bool(os.environ.get("CI"))
needs_java = pytest.mark.skipif(shutil.which("java") is None and not IN_CI, reason="Spark needs Java")
CLI = [sys.executable, "-c", "import sys; from kcm.cli import main; sys.exit(main(sys.argv[1:]))", "explore"]
KEYS = ("distinct_states", "transitions", "depth", "complete", "verdicts", "counterexamples", "goals")
SPARK = ["--engine", "spark", "--master", "local[2]"]


def _key(found) -> tuple:
    return (found.distinct_states, found.transitions, found.depth, found.complete, found.violations, found.reached,
            found.goals)


def test_parent_links_by_fingerprint_become_the_local_engines_levels_and_paths():
    model = BoundedSystem(load_config("unclean"))
    local = bfs.explore(model)
    visited = local.visited
    # The local engine's tree as (fp, parent fp, action) rows, the way the Spark engine holds it: levels replayed.
    levels: list[np.ndarray] = []
    from kcm.checkers.explore.visited import replay_levels

    replay_levels(model, visited, lambda _, states: levels.append(
        np.array([model.fingerprint(s) for s in states], dtype=np.uint64)))
    fps, parents, aidxs = [], [], []
    for level, mine in enumerate(levels):
        fps += as_longs(mine).tolist()
        if level == 0:
            parents += [NO_PARENT] * mine.size
            aidxs += visited.parents[0].tolist()
        else:
            parents += as_longs(levels[level - 1][visited.parents[level].astype(np.int64)]).tolist()
            aidxs += visited.actions[level].tolist()
    order = np.random.default_rng(7).permutation(len(fps))  # the JVM keeps them in no particular order
    links = Links.of(np.array(fps)[order], np.array(parents)[order], np.array(aidxs)[order])
    again = links.visited()
    assert np.array_equal(again.seen, visited.seen)
    assert all(np.array_equal(a, b) for a, b in zip(again.parents, visited.parents, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(again.actions[1:], visited.actions[1:], strict=True))
    assert links.sizes() == [p.size for p in visited.parents]
    deep = int(as_longs(levels[-1][:1])[0])
    assert links.path(deep) == visited.path(len(levels) - 1, 0)
    with pytest.raises(ValueError, match="not visited"):
        Links.of(np.array([1, 2]), np.array([NO_PARENT, 5]), np.array([0, 0]))
    with pytest.raises(ValueError, match="reach no initial state"):
        Links.of(np.array([1, 2]), np.array([2, 1]), np.array([0, 0]))


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("host_below", [0, 2000])
def test_a_checkpoint_of_either_engine_resumes_on_the_other_to_the_same_results(spark, tmp_path, host_below):
    from kcm.checkers.spark import bfs as spark_bfs

    for name in ("tiny", "unclean"):
        model = BoundedSystem(load_config(name))
        identity = checkpoint.config_identity(model.cfg)
        for stop_at in (None, bfs.safety_names(model)):
            whole = bfs.explore(model, stop_at=stop_at)
            ckpt = tmp_path / f"{name}.spark.ckpt"
            keep = checkpoint.Checkpointer(ckpt, 0, identity, engine="spark")
            spark_bfs.explore(model, spark, max_states=whole.distinct_states // 3, checkpoint=keep,
                              host_below=host_below)
            assert keep.written >= 2 and checkpoint.load(ckpt, identity).engine == "spark"
            on_local = bfs.explore(model, resume=checkpoint.load(ckpt, identity), stop_at=stop_at)
            on_spark = spark_bfs.explore(model, spark, resume=checkpoint.load(ckpt, identity), stop_at=stop_at,
                                         host_below=host_below)
            assert _key(on_local) == _key(whole) == _key(on_spark), (name, stop_at)
            ckpt = tmp_path / f"{name}.local.ckpt"
            bfs.explore(model, max_states=whole.distinct_states // 3,
                        checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
            back = spark_bfs.explore(model, spark, resume=checkpoint.load(ckpt, identity), stop_at=stop_at,
                                     host_below=host_below)
            assert _key(back) == _key(whole), (name, stop_at)


@pytest.mark.spark
# The frontier in Spark, in the driver; files of the other engines.
@pytest.mark.parametrize("host_below, writer", [(0, "spark"), (100_000, "spark"), (0, "local"), (0, "workers")])
def test_a_checkpoint_with_the_frontier_and_the_levels_resumes_on_spark_without_replaying(spark, tmp_path,
                                                                                         monkeypatch, host_below,
                                                                                         writer):
    from kcm.checkers.explore import level_loop, workers
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    ckpt = tmp_path / "unclean.ckpt"
    keep = checkpoint.Checkpointer(ckpt, 0, identity, engine="spark" if writer == "spark" else "local")
    if writer == "spark":
        spark_bfs.explore(model, spark, max_states=whole.distinct_states // 3, host_below=host_below, checkpoint=keep)
    elif writer == "local":
        bfs.explore(model, max_states=whole.distinct_states // 3, checkpoint=keep)
    else:
        workers.explore(model, 2, max_states=whole.distinct_states // 3, checkpoint=keep)
    snap = checkpoint.load(ckpt, identity)
    assert {"states.data", "states.ends", "levels"} <= snap.arrays.keys()
    assert np.bincount(snap.arrays["levels"]).tolist() == snap.meta["sizes"]

    def no_replay(*_args, **_kwargs):
        raise AssertionError("a resume from stored states replayed the levels")

    monkeypatch.setattr(level_loop, "replay_levels", no_replay)
    monkeypatch.setattr(spark_bfs, "RESUME_PIECE", 7)  # a frontier resumed on Spark goes over in many pieces
    on_spark = spark_bfs.explore(model, spark, resume=snap, host_below=host_below)
    on_local = bfs.explore(model, resume=checkpoint.load(ckpt, identity))
    assert _key(on_spark) == _key(whole) == _key(on_local)
    # A level mark that does not fit is refused: the visited fingerprints are read by level, not replayed.
    levels = snap.arrays["levels"].copy()
    levels[np.flatnonzero(levels == 1)[0]] = 2
    snap.arrays["levels"] = levels
    with pytest.raises(checkpoint.BadCheckpoint, match="levels"):
        spark_bfs.explore(model, spark, resume=snap, host_below=host_below)


@pytest.mark.spark
@pytest.mark.slow
def test_a_checkpoint_past_a_violation_resumed_to_stop_at_it_stops_at_once_on_either_engine(spark, tmp_path):
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "unclean.ckpt"
    # Explored on with --continue past the level-3 violation, then resumed without it.
    spark_bfs.explore(model, spark, max_states=300, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity, "spark"))
    assert checkpoint.load(ckpt, identity).meta["witnesses"]
    stop_at = bfs.safety_names(model)
    on_local = bfs.explore(model, resume=checkpoint.load(ckpt, identity), stop_at=stop_at)
    on_spark = spark_bfs.explore(model, spark, resume=checkpoint.load(ckpt, identity), stop_at=stop_at)
    assert _key(on_spark) == _key(on_local) and on_spark.stopped and on_local.stopped
    assert on_local.distinct_states == len(checkpoint.load(ckpt, identity).arrays["seen"])


@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_checkpoint_before_a_level_whose_states_break_a_property_stops_there(spark, tmp_path):
    from kcm.checkers.spark import bfs as spark_bfs

    # unclean: a state of level 3 breaks AckedRecordsSurvive, so the local engine stops after making level 3 and
    # never checkpoints it; the Spark engine, which checks a level's states as it expands them, must stop too.
    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    stop_at = bfs.safety_names(model)
    local = bfs.explore(model, stop_at=stop_at)
    ckpt = tmp_path / "unclean.ckpt"
    keep = checkpoint.Checkpointer(ckpt, 0, identity, engine="spark")
    found = spark_bfs.explore(model, spark, stop_at=stop_at, checkpoint=keep, host_below=0)
    assert _key(found) == _key(local) and found.stopped
    assert checkpoint.load(ckpt, identity).meta["depth"] < local.depth


def _depth(path, identity) -> int:
    try:
        return checkpoint.load(path, identity).meta["depth"]
    except checkpoint.BadCheckpoint:
        return -1


def _summary(args: list[str]) -> dict:
    done = subprocess.run(CLI + args + ["--quiet", "--json"], capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@needs_java
@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_run_killed_mid_run_resumes_to_the_counts_of_an_uninterrupted_run(tmp_path):
    identity = as_explored(load_config("controller"))[1]  # the command writes it
    ckpt = tmp_path / "controller.ckpt"
    proc = subprocess.Popen(CLI + ["--config", "controller", "--quiet", "--checkpoint", str(ckpt),
                                   "--checkpoint-every", "0"] + SPARK,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        # Level 6 of 13 is past the levels the driver expands: the kill hits the Spark part of the search.
        while _depth(ckpt, identity) < 6:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint at level 6 within 600 s"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM (and the JVM's Python workers) at once
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert 6 <= _depth(ckpt, identity) < 13
    a = _summary(["--config", "controller", "--resume", str(ckpt)] + SPARK)
    b = _summary(["--config", "controller"])  # the local engine, uninterrupted
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}
    assert a["distinct_states"] == 27697 and a["depth"] == 13


# Runs `kcm explore`, except that its 4th checkpoint write is killed (SIGKILL, the driver's whole process group)
# half-way through the temporary file: what a kill -9 during a write leaves behind.
KILLED_WRITE = r'''
import os, signal, sys, tempfile
from kcm.checkers.explore import checkpoint
from kcm.cli import main
real, writes = checkpoint.save, []
def save(path, header, body):
    writes.append(path)
    if len(writes) < 4:
        return real(path, header, body)
    fd, _ = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    data = header + body
    os.write(fd, data[: len(data) // 2])
    os.fsync(fd)
    os.killpg(os.getpgrp(), signal.SIGKILL)
checkpoint.save = save
sys.exit(main(sys.argv[1:]))
'''


@needs_java
@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_run_killed_during_a_checkpoint_write_resumes_from_the_last_whole_one(tmp_path):
    identity = as_explored(load_config("controller"))[1]  # the command writes it
    ckpt = tmp_path / "controller.ckpt"
    args = ["explore", "--config", "controller", "--quiet", "--checkpoint", str(ckpt), "--checkpoint-every", "0",
            "--driver-below", "0"] + SPARK
    done = subprocess.run([sys.executable, "-c", KILLED_WRITE] + args, capture_output=True, text=True,
                          timeout=900, start_new_session=True)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    stale = list(tmp_path.glob(".controller.ckpt.*.tmp"))
    assert len(stale) == 1 and _depth(ckpt, identity) == 2  # the 3rd write (level 2) is the last whole one
    a = _summary(["--config", "controller", "--resume", str(ckpt), "--checkpoint", str(ckpt),
                  "--checkpoint-every", "600", "--driver-below", "0"] + SPARK)
    assert not stale[0].exists()
    b = _summary(["--config", "controller"])
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}


@pytest.mark.spark
def test_a_checkpoint_that_stores_the_frontier_judges_it_on_the_storing_pass(spark, tmp_path, monkeypatch):
    # Judging the frontier and encoding its states for the checkpoint were two passes over it, each decoding
    # every state (on `large`, decoding is the dearest part of a stop): one pass does both now.
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    real_mapped, real_encode = spark_bfs._Search.mapped, spark_bfs._Search.encode
    passes: list[int | None] = []

    def mapped(self, frontier, level, successors=True):
        assert successors, "the frontier was judged on a pass of its own"
        return real_mapped(self, frontier, level, successors)

    def encode(self, frontier, key):
        passes.append(key)
        return real_encode(self, frontier, key)

    stop, real_add = StopRequest(), spark_bfs._Search.add

    def add(self, level):
        real_add(self, level)
        if self.depth == 5:
            stop.request("a test")  # a stop's checkpoint after the periodic ones

    monkeypatch.setattr(spark_bfs._Search, "mapped", mapped)
    monkeypatch.setattr(spark_bfs._Search, "encode", encode)
    monkeypatch.setattr(spark_bfs._Search, "add", add)
    ckpt = tmp_path / "unclean.ckpt"
    found = spark_bfs.explore(model, spark, host_below=0, stop=stop,
                              checkpoint=checkpoint.Checkpointer(ckpt, 0, identity, engine="spark"))
    assert stop.acted and len(passes) >= 2 and None not in passes  # each checkpoint judged on its storing pass
    snap = checkpoint.load(ckpt, identity)
    assert "states.ends" in snap.arrays and snap.meta["depth"] == found.depth
    # The frontier's own verdicts are in the file: the local engine resumes it to the whole run's results.
    assert _key(bfs.explore(model, resume=snap)) == _key(whole)


@pytest.mark.spark
@pytest.mark.parametrize("host_below", [0, 2000])
def test_a_checkpoint_written_before_its_frontier_was_judged_is_judged_on_a_spark_resume(spark, tmp_path,
                                                                                         host_below):
    from kcm.checkers.spark import bfs as spark_bfs

    from tests.explored import unjudged_checkpoint

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "unjudged.ckpt"
    unjudged_checkpoint(model, identity, ckpt)
    again = spark_bfs.explore(model, spark, resume=checkpoint.load(ckpt, identity), host_below=host_below)
    assert _key(again) == _key(bfs.explore(model))
