"""`kcm explore --checkpoint` and `--resume`: a run killed with SIGKILL, resumed, ends with the same counts."""

from __future__ import annotations

import json
import pickle
import shutil
import signal
import subprocess
import sys
import time

import pytest

from kcm.cli import main

CLI = [sys.executable, "-c", "import sys; from kcm.cli import main; sys.exit(main(sys.argv[1:]))", "explore"]
KEYS = ("distinct_states", "transitions", "depth", "complete", "verdicts")


def _checkpoint_depth(path) -> int:
    try:
        with open(path, "rb") as inp:
            return pickle.load(inp)["depth"]
    except (OSError, EOFError, pickle.UnpicklingError, KeyError):
        return -1


def test_killed_run_resumes_to_the_counts_of_an_uninterrupted_run(tmp_path):
    ckpt = tmp_path / "controller.ckpt"
    proc = subprocess.Popen(CLI + ["--config", "controller", "--quiet", "--checkpoint", str(ckpt),
                                   "--checkpoint-every", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        # Wait for a checkpoint from the middle of the run (level 6 of 12), so the resumed part is real work.
        while _checkpoint_depth(ckpt) < 6:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint at level 6 within 240 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    resumed_from = _checkpoint_depth(ckpt)
    assert 6 <= resumed_from < 12
    resumed = subprocess.run(CLI + ["--config", "controller", "--quiet", "--json", "--resume", str(ckpt)],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    whole = subprocess.run(CLI + ["--config", "controller", "--quiet", "--json"], capture_output=True, text=True,
                           timeout=300)
    a, b = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}
    assert a["distinct_states"] == 34755 and a["depth"] == 14


def test_resume_refuses_a_checkpoint_of_another_config_or_a_bad_file(tmp_path, capsys):
    ckpt = tmp_path / "tiny.ckpt"
    assert main(["explore", "--config", "tiny", "--quiet", "--checkpoint", str(ckpt), "--checkpoint-every", "0"]) == 0
    capsys.readouterr()
    assert main(["explore", "--config", "controller", "--quiet", "--resume", str(ckpt)]) == 2
    assert "another configuration" in capsys.readouterr().err
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    assert main(["explore", "--config", "tiny", "--quiet", "--resume", str(junk)]) == 2
    assert "not a kcm explore checkpoint" in capsys.readouterr().err
    assert main(["explore", "--config", "tiny", "--quiet", "--resume", str(tmp_path / "missing")]) == 2
    assert "no checkpoint file" in capsys.readouterr().err


def test_resume_of_a_finished_tiny_run_gives_the_same_summary(tmp_path, capsys):
    ckpt = tmp_path / "tiny.ckpt"
    assert main(["explore", "--config", "tiny", "--quiet", "--json", "--checkpoint", str(ckpt),
                 "--checkpoint-every", "0"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["explore", "--config", "tiny", "--quiet", "--json", "--resume", str(ckpt)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: again[k] for k in KEYS} == {k: whole[k] for k in KEYS}


def test_checkpoint_options_are_checked(tmp_path, capsys):
    ckpt = str(tmp_path / "x.ckpt")
    assert main(["explore", "--config", "tiny", "--checkpoint", str(tmp_path), "--checkpoint-every", "0"]) == 2
    assert "kcm explore:" in capsys.readouterr().err  # a folder is not a file to write: an error, no traceback
    assert main(["explore", "--config", "tiny", "--checkpoint", ckpt, "--checkpoint-every", "-1"]) == 2
    assert "--checkpoint-every" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_spark_run_resumed_from_a_middle_round_ends_with_the_same_counts(tmp_path, capsys):
    from kcm.checkers import bfs, spark_bfs
    from kcm.checkers.checkpoint import FORMAT, BadCheckpoint, Checkpointer
    from kcm.reference.bounded import BoundedSystem, load_config

    class Keep(Checkpointer):
        """Keeps every snapshot (as a resumed run would read it back) instead of only the last one."""

        snapshots: list = []

        def write(self, snapshot):
            self.snapshots.append(pickle.loads(pickle.dumps(dict(snapshot, format=FORMAT, key=self.key))))

    model = BoundedSystem(load_config("controller"))
    spark = spark_bfs.spark_session("local[2]")
    try:
        keep = Keep(tmp_path / "unused", 0, model.cfg)
        whole = spark_bfs.explore(model, spark, checkpoint=keep)
        assert len(keep.snapshots) > 3
        middle = keep.snapshots[len(keep.snapshots) // 2]
        resumed = spark_bfs.explore(model, spark, resume=middle)
        assert (resumed.distinct_states, resumed.transitions, resumed.depth) == (
            whole.distinct_states, whole.transitions, whole.depth) == (34755, 55520, 14)
        assert resumed.verdicts(model.properties()) == whole.verdicts(model.properties())
        with pytest.raises(BadCheckpoint):
            bfs.explore(model, resume=middle)  # a Spark checkpoint is not the local engine's
        with pytest.raises(BadCheckpoint):
            spark_bfs.explore(model, spark, max_states=100, resume=middle)
    finally:
        spark.stop()
