"""One run at a time writes a checkpoint file: a second is refused (or, without --checkpoint, takes another name),
and neither a finished nor a killed holder blocks the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from kcm.checkers.explore import checkpoint
from kcm.checkers.explore.checkpoint_lock import lock_path

from kcm.cli import main
from kcm.commands import explore
from tests.explored import as_explored

HOLDER = """
import sys
from pathlib import Path
from kcm.checkers.explore.checkpoint import Checkpointer
Checkpointer(sys.argv[1], 0, "any")
print("held", flush=True)
sys.stdin.readline()
"""


def _holder(path) -> subprocess.Popen:
    """Another process that writes checkpoint `path` (it holds the file until a line comes on its stdin)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _explore(path, capsys) -> tuple[int, str]:
    code = main(["explore", "--config", "tiny", "--quiet", "--checkpoint", str(path), "--checkpoint-every", "0"])
    return code, capsys.readouterr().err


def test_a_second_run_on_a_checkpoint_in_use_is_refused_and_leaves_the_first_ones_write_alone(tmp_path, capsys):
    path = tmp_path / "run.ckpt"
    holder = _holder(path)
    try:
        # The holder's write in progress: the second run's start removed it before (a stop's write then failed).
        in_progress = tmp_path / ".run.ckpt.abc123.tmp"
        in_progress.write_bytes(b"half a checkpoint")
        code, err = _explore(path, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert f"another kcm explore (pid {holder.pid}) is writing this checkpoint" in err and str(path) in err
        assert in_progress.exists() and not path.exists()
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0 and not lock_path(path).exists()  # given up, and its file removed, at exit
    code, err = _explore(path, capsys)
    assert code == 0, err
    assert not (tmp_path / ".run.ckpt.abc123.tmp").exists()  # a leftover now: cleared
    assert path.exists()


def test_a_killed_holder_blocks_nothing(tmp_path, capsys):
    path = tmp_path / "run.ckpt"
    holder = _holder(path)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=60)
    assert lock_path(path).exists()  # left behind, unlocked by the kernel
    code, err = _explore(path, capsys)
    assert code == 0, err


def test_without_checkpoint_a_run_beside_another_of_the_same_config_takes_the_next_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = explore.default_checkpoint("tiny")
    holder = _holder(first)
    try:
        writer = explore._default_checkpointer(first, "any", "local")
        assert str(writer.path) == "kcm-explore-tiny-2.ckpt"
        # This process's own second writer of the same file shares its lock (a library caller may make several).
        assert str(checkpoint.Checkpointer("kcm-explore-tiny-2.ckpt", 0, "any").path) == "kcm-explore-tiny-2.ckpt"
    finally:
        holder.communicate("\n", timeout=60)


def test_a_checkpoint_never_replaces_a_folder_a_device_or_another_file(tmp_path, capsys, monkeypatch):
    # A write renames a new file over the old one: over /dev/null, as root, that would replace the device for
    # every process (a FIFO stands for it here); over a config given by a slip, the config would be lost.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    config = tmp_path / "mine.json"
    config.write_text('{"name": "tiny"}')
    for path, why in ((fifo, "not a regular file"), (tmp_path, "a folder"),
                      (config, "not a kcm explore checkpoint")):
        code, err = _explore(path, capsys)
        assert code == 2 and err.count("\n") == 1 and why in err and str(path) in err, err
    assert config.read_text() == '{"name": "tiny"}' and fifo.is_fifo()
    assert not list(tmp_path.glob(".*"))  # no lock file, no temporary file made on the way
    # An empty file, a checkpoint of this kcm or of an older format is replaced.
    empty, old = tmp_path / "empty.ckpt", tmp_path / "old.ckpt"
    empty.touch()
    old.write_bytes(b'{"format": "kcm-explore-checkpoint/3", "kcm": "0.1"}\nbody')
    for path in (empty, old):
        code, err = _explore(path, capsys)
        assert code == 0, err
        assert checkpoint.load(path, as_explored(explore.load_config("tiny"))[1]).meta["depth"] >= 1
    # Without --checkpoint, a stray file with the default name is passed by, as a busy one is.
    monkeypatch.chdir(tmp_path)
    Path(explore.default_checkpoint("tiny")).write_text("notes")
    assert str(explore._default_checkpointer(explore.default_checkpoint("tiny"), "any", "local").path) == \
        "kcm-explore-tiny-2.ckpt"
