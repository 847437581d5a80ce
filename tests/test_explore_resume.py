"""`kcm explore --checkpoint` and `--resume`: safe, checked checkpoints; a killed run resumes to the same counts."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, checkpoint

from kcm.cli import main
from tests.explored import as_explored

CLI = [sys.executable, "-c", "import sys; from kcm.cli import main; sys.exit(main(sys.argv[1:]))", "explore"]
KEYS = ("distinct_states", "transitions", "depth", "complete", "verdicts", "counterexamples", "goals")


def _checkpoint_depth(path, config: str = "controller") -> int:
    try:
        return checkpoint.load(path, as_explored(load_config(config))[1]).meta["depth"]
    except checkpoint.BadCheckpoint:
        return -1


def _summary(args: list[str]) -> dict:
    done = subprocess.run(CLI + args + ["--quiet", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_killed_run_resumes_to_the_counts_of_an_uninterrupted_run(tmp_path):
    ckpt = tmp_path / "controller.ckpt"
    proc = subprocess.Popen(CLI + ["--config", "controller", "--quiet", "--checkpoint", str(ckpt),
                                   "--checkpoint-every", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        # Wait for a checkpoint from the middle of the run (level 6 of 13), so the resumed part is real work.
        while _checkpoint_depth(ckpt) < 6:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint at level 6 within 240 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    resumed_from = _checkpoint_depth(ckpt)
    assert 6 <= resumed_from < 13
    a = _summary(["--config", "controller", "--resume", str(ckpt)])
    b = _summary(["--config", "controller"])
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}
    assert a["distinct_states"] == 27697 and a["depth"] == 13  # the dead-broker reduction's (full: 38,611, 14)


def test_a_write_killed_half_way_leaves_the_last_checkpoint_whole_and_its_temporary_file_is_cleaned(tmp_path):
    ckpt = tmp_path / "unclean.ckpt"
    model, identity = as_explored(load_config("unclean"))  # the command resumes it
    keep = checkpoint.Checkpointer(ckpt, 0, identity)
    bfs.explore(model, max_states=300, checkpoint=keep)
    before = ckpt.read_bytes()
    # What a kill -9 inside `save` leaves: the old file and a partly written temporary file beside it.
    stale = tmp_path / ".unclean.ckpt.x1y2z3.tmp"
    stale.write_bytes(before[: len(before) // 2])
    a = _summary(["--config", "unclean", "--continue", "--resume", str(ckpt), "--checkpoint", str(ckpt)])
    assert not stale.exists()
    b = _summary(["--config", "unclean", "--continue"])
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}


def _tiny_checkpoint(tmp_path, capsys) -> tuple:
    ckpt = tmp_path / "tiny.ckpt"
    assert main(["explore", "--config", "tiny", "--quiet", "--max-states", "200", "--checkpoint", str(ckpt),
                 "--checkpoint-every", "0"]) == 3  # a partial run
    capsys.readouterr()
    return ckpt, ckpt.read_bytes()


def _refused(args: list[str], capsys) -> str:
    assert main(["explore", "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_resume_refuses_a_checkpoint_of_another_config_or_a_bad_file(tmp_path, capsys):
    ckpt, _ = _tiny_checkpoint(tmp_path, capsys)
    assert "another configuration" in _refused(["--config", "controller", "--resume", str(ckpt)], capsys)
    assert "another configuration" in _refused(["--config", "tiny", "--symmetry", "--resume", str(ckpt)], capsys)
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    assert "not a kcm explore checkpoint" in _refused(["--config", "tiny", "--resume", str(junk)], capsys)
    assert "no such checkpoint file" in _refused(["--config", "tiny", "--resume", str(tmp_path / "no")], capsys)
    assert "empty file name" in _refused(["--config", "tiny", "--resume", ""], capsys)
    assert "empty file name" in _refused(["--config", "tiny", "--checkpoint", ""], capsys)


def test_a_config_that_differs_only_in_its_description_resumes(tmp_path, capsys):
    ckpt, _ = _tiny_checkpoint(tmp_path, capsys)
    cfg = dict(load_config("tiny"), description="the same cluster, described otherwise")
    path = tmp_path / "tiny-described.json"
    path.write_text(json.dumps(cfg))
    assert main(["explore", "--config", str(path), "--quiet", "--json", "--resume", str(ckpt)]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_states"] == 381


def test_every_damaged_byte_is_refused_never_resumed(tmp_path, capsys):
    ckpt, good = _tiny_checkpoint(tmp_path, capsys)
    head = good.index(b"\n") + 1
    for at in [0, 10, head - 2, head, head + 40, len(good) // 2, len(good) - 1]:
        bad = bytearray(good)
        bad[at] ^= 0x04
        ckpt.write_bytes(bytes(bad))
        _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)
    ckpt.write_bytes(good[:-10])
    assert "cut" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)


def _rewrite(ckpt, change) -> None:
    """Rewrite a checkpoint's body with `change(arrays)` and a matching header: consistent checksums, bad body."""
    good = ckpt.read_bytes()
    head = json.loads(good[: good.index(b"\n")])
    with np.load(io.BytesIO(good[good.index(b"\n") + 1:])) as archive:
        arrays = {k: archive[k] for k in archive.files}
    change(arrays)
    body = io.BytesIO()
    np.savez(body, **arrays)
    data = body.getvalue()
    head.update(body_bytes=len(data), body_sha256=hashlib.sha256(data).hexdigest())
    ckpt.write_bytes(json.dumps(head).encode() + b"\n" + data)


def test_an_inconsistent_body_with_a_matching_checksum_is_refused(tmp_path, capsys):
    ckpt, good = _tiny_checkpoint(tmp_path, capsys)
    _rewrite(ckpt, lambda a: a.update(frontier=a["frontier"][:-3]))  # a cut frontier
    assert "frontier" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)
    ckpt.write_bytes(good)

    def lose_level(a):
        last = max(int(k.split(".")[1]) for k in a if k.startswith("parents."))
        del a[f"parents.{last}"], a[f"actions.{last}"]
    _rewrite(ckpt, lose_level)
    _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)
    ckpt.write_bytes(good)

    def wrong_action(a):
        a["actions.2"] = a["actions.2"] + np.uint16(7)
    _rewrite(ckpt, wrong_action)
    _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)
    ckpt.write_bytes(good)
    _rewrite(ckpt, lambda a: a.update(meta=np.frombuffer(b'{"depth": "x"}', dtype=np.uint8)))
    assert "counters" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)


class _Boom:
    def __reduce__(self):
        return (open, ("/dev/null/never", "w"))  # what a crafted pickle would run on load


def test_a_crafted_pickle_or_object_array_is_never_loaded(tmp_path, capsys):
    ckpt, good = _tiny_checkpoint(tmp_path, capsys)
    ckpt.write_bytes(pickle.dumps({"format": checkpoint.FORMAT, "boom": _Boom()}))
    assert "not a kcm explore checkpoint" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)
    ckpt.write_bytes(good)
    _rewrite(ckpt, lambda a: a.update(frontier=np.array([_Boom()], dtype=object)))
    assert "not an array archive" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)


def test_resume_of_a_finished_tiny_run_gives_the_same_summary(tmp_path, capsys):
    ckpt = tmp_path / "tiny.ckpt"
    assert main(["explore", "--config", "tiny", "--quiet", "--json", "--checkpoint", str(ckpt),
                 "--checkpoint-every", "0"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["explore", "--config", "tiny", "--quiet", "--json", "--resume", str(ckpt)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: again[k] for k in KEYS} == {k: whole[k] for k in KEYS}


def test_a_violation_found_before_the_checkpoint_is_kept_on_resume(tmp_path, capsys):
    whole = _summary(["--config", "unclean", "--continue"])
    ckpt = tmp_path / "unclean.ckpt"
    model, identity = as_explored(load_config("unclean"))  # the command resumes it
    keep = checkpoint.Checkpointer(ckpt, 0, identity)
    partial = bfs.explore(model, max_states=500, checkpoint=keep)
    assert partial.violations and not partial.complete
    again = _summary(["--config", "unclean", "--continue", "--resume", str(ckpt)])
    assert {k: again[k] for k in KEYS} == {k: whole[k] for k in KEYS}


def test_checkpoint_options_are_checked(tmp_path, capsys):
    ckpt = str(tmp_path / "x.ckpt")
    assert main(["explore", "--config", "tiny", "--checkpoint", str(tmp_path), "--checkpoint-every", "0"]) == 2
    assert "kcm explore:" in capsys.readouterr().err  # a folder is not a file to write: an error, no traceback
    assert main(["explore", "--config", "tiny", "--checkpoint", ckpt, "--checkpoint-every", "-1"]) == 2
    assert "--checkpoint-every" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_random_walks_refuse_checkpoint_options_and_an_unknown_engines_file_is_refused(tmp_path, capsys):
    assert main(["explore", "--walks", "5", "--config", "tiny", "--checkpoint", str(tmp_path / "x")]) == 2
    assert "not --walks" in capsys.readouterr().err
    model = BoundedSystem(load_config("tiny"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "tiny.ckpt"
    bfs.explore(model, max_states=100, checkpoint=checkpoint.Checkpointer(ckpt, 0, identity))
    head, _, body = ckpt.read_bytes().partition(b"\n")
    ckpt.write_bytes(json.dumps({**json.loads(head), "engine": "quantum"}).encode() + b"\n" + body)
    with pytest.raises(checkpoint.BadCheckpoint, match="does not know"):
        checkpoint.load(ckpt, identity)


@pytest.mark.parametrize("engine", ["local", "workers"])
def test_a_checkpoint_written_before_its_frontier_was_judged_is_judged_on_resume(tmp_path, engine):
    from kcm.checkers.explore import workers

    from tests.explored import unjudged_checkpoint

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    whole = bfs.explore(model)
    ckpt = tmp_path / "unjudged.ckpt"
    depth = unjudged_checkpoint(model, identity, ckpt)
    snap = checkpoint.load(ckpt, identity)
    assert snap.meta["unjudged"] and snap.meta["depth"] == depth

    def resumed(snapshot):
        if engine == "local":
            return bfs.explore(model, resume=snapshot)
        return workers.explore(model, 2, resume=snapshot)

    again = resumed(snap)
    assert (again.violations, again.goals, again.reached, again.distinct_states, again.transitions) == \
        (whole.violations, whole.goals, whole.reached, whole.distinct_states, whole.transitions)
    # Unmarked, the same file resumes to other counterexamples: the frontier's own violations are never seen.
    unmarked = tmp_path / "unmarked.ckpt"
    unjudged_checkpoint(model, identity, unmarked, marked=False)
    assert resumed(checkpoint.load(unmarked, identity)).violations != whole.violations


def test_an_unjudged_mark_that_is_not_a_boolean_is_refused(tmp_path, capsys):
    from tests.explored import unjudged_checkpoint

    model = BoundedSystem(load_config("unclean"))
    identity = checkpoint.config_identity(model.cfg)
    ckpt = tmp_path / "unjudged.ckpt"
    unjudged_checkpoint(model, identity, ckpt)
    snap = checkpoint.load(ckpt, identity)
    meta = dict(snap.meta, unjudged=1)
    from kcm.checkers.explore.visited import Visited

    checkpoint.Checkpointer(ckpt, 0, identity).write(Visited.from_arrays(snap.arrays),
                                                       snap.arrays["frontier"].tolist(), meta)
    with pytest.raises(checkpoint.BadCheckpoint, match="counters are malformed"):
        checkpoint.load(ckpt, identity)
