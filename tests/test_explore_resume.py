"""`kcm explore --checkpoint` and `--resume`: a run killed with SIGKILL, resumed, ends with the same counts."""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
import time

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
    ckpt = tmp_path / "default.ckpt"
    proc = subprocess.Popen(CLI + ["--config", "default", "--quiet", "--checkpoint", str(ckpt),
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
    resumed = subprocess.run(CLI + ["--config", "default", "--quiet", "--json", "--resume", str(ckpt)],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    whole = subprocess.run(CLI + ["--config", "default", "--quiet", "--json"], capture_output=True, text=True,
                           timeout=300)
    a, b = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}
    assert a["distinct_states"] == 18943 and a["depth"] == 12


def test_resume_refuses_a_checkpoint_of_another_config_or_a_bad_file(tmp_path, capsys):
    ckpt = tmp_path / "tiny.ckpt"
    assert main(["explore", "--config", "tiny", "--quiet", "--checkpoint", str(ckpt), "--checkpoint-every", "0"]) == 0
    capsys.readouterr()
    assert main(["explore", "--config", "default", "--quiet", "--resume", str(ckpt)]) == 2
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
    assert main(["explore", "--config", "tiny", "--engine", "spark", "--checkpoint", ckpt]) == 2
    assert "--engine local only" in capsys.readouterr().err
    assert main(["explore", "--config", "tiny", "--checkpoint", ckpt, "--checkpoint-every", "-1"]) == 2
    assert "--checkpoint-every" in capsys.readouterr().err
