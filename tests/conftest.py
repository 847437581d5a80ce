"""Suite-wide settings that keep every verdict the same from run to run.

Every Hypothesis test without settings of its own runs derandomized (the same examples each run), with no
deadline (a busy machine must not turn a slow example into a failure) and no example database (a failure found
once on one machine must not change what a later run tries). Also the one Spark session fixture the Spark test
modules share, and the signal dispositions put back after every test.
"""

from __future__ import annotations

import os
import shutil
import signal

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "kcm-suite",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("kcm-suite")


@pytest.fixture(autouse=True)
def _signal_dispositions():
    """SIGINT's and SIGTERM's handlers as they were before the test. A test that stops an in-process search with a
    signal leaves the signal ignored (`stopping.on_signals` does so once a stop was asked for, as the process is
    ending), and every process the test worker starts later inherits SIG_IGN: a `kcm explore` started then kept
    the signal ignored and never stopped (`test_workers_spill`'s signal test, in the full suite only)."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in kept.items():
        if handler is not None:
            signal.signal(sig, handler)


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for a module's in-process Spark tests (its start-up is the slow part)."""
    if shutil.which("java") is None and not os.environ.get("CI"):
        pytest.skip("Spark needs Java")
    from kcm.checkers.spark import bfs as spark_bfs

    session = spark_bfs.spark_session("local[2]")
    yield session
    session.stop()
