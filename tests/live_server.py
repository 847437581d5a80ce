"""The ZooKeeper server the live tests use, started once per test process by `ci/zookeeper.sh`.

In CI (env CI=true) the server is started for the session and stopped at its end; a server that cannot start
fails the tests. Elsewhere the tests use KCM_ZOOKEEPER=HOST:PORT, or the server `bash ci/zookeeper.sh start`
left running in this checkout, and skip with that advice when there is none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "ci" / "zookeeper.sh"
HOW = ("no ZooKeeper for the live tests: start one with `bash ci/zookeeper.sh start` "
       "(or set KCM_ZOOKEEPER=HOST:PORT); CI=true starts one itself")

_started: dict[str, str] = {}  # state directory -> address, for the servers this process started


def in_ci() -> bool:
    """Whether the tests run in CI, where the live tests never skip."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _script(*args: str, state: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if state is not None:
        env["KCM_ZOOKEEPER_STATE"] = state
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600)


def zookeeper_address(request: pytest.FixtureRequest) -> str:
    """HOST:PORT of a running ZooKeeper, started for this session in CI; skips (outside CI) when none runs."""
    if os.environ.get("KCM_ZOOKEEPER"):
        return os.environ["KCM_ZOOKEEPER"]
    if in_ci():
        if not _started:
            state = tempfile.mkdtemp(prefix="kcm-zookeeper-state-")
            done = _script("start", state=state)
            if done.returncode != 0:
                pytest.fail(f"ci/zookeeper.sh start failed: {done.stderr.strip()}", pytrace=False)
            _started[state] = done.stdout.strip().splitlines()[-1]

            def stop() -> None:
                """Stop the server this session started and remove its state directory."""
                _script("stop", state=state)
                _started.pop(state, None)
                shutil.rmtree(state, ignore_errors=True)

            request.session.config.add_cleanup(stop)
        return next(iter(_started.values()))
    status = _script("status")
    if status.returncode == 0 and status.stdout.strip():
        return status.stdout.strip().splitlines()[-1]
    pytest.skip(HOW)
