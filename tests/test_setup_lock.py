"""One set-up at a time in a checkout: a second `ci/setup.sh` waits for the first (two side by side made the venv
twice, and the second failed in the first one's half-made venv)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("flock") is None or not (ROOT / ".venv" / "bin" / "python").is_file(),
                    reason="needs flock(1) and the checkout's own set-up (.venv)")
def test_a_second_setup_waits_for_the_first(tmp_path):
    lock = ROOT / "build" / ".setup.lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a set-up in progress
        # The main job's set-up finds everything there (nothing is installed or built in the middle of the tests).
        setup = subprocess.Popen(["bash", str(ROOT / "ci" / "setup.sh"), "--main"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env={**os.environ, "KCM_COMPILED": "0"})
        try:
            assert setup.stderr is not None
            assert "another set-up is running in this checkout" in setup.stderr.readline()
            time.sleep(1.0)
            assert setup.poll() is None  # still waiting
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        _, err = setup.communicate(timeout=300)
    assert setup.returncode == 0, err
    assert "setup: done" in err and "already there" in err
