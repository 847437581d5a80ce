"""The quiet PySpark daemon: a cancelled level's Python workers end without a traceback on the terminal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from kcm.checkers.spark.quiet_daemon import quiet
from kcm.checkers.spark.session import QUIET_DAEMON


def test_a_worker_whose_socket_is_closed_ends_with_code_one_and_other_failures_still_raise():
    def closed(*_args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def reset(*_args: object) -> int:
        raise ConnectionResetError(104, "Connection reset by peer")

    def broken(*_args: object) -> int:
        raise ValueError("a bug in a worker")

    assert quiet(closed)(None, True) == 1
    assert quiet(reset)(None, False) == 1
    assert quiet(lambda sock, authenticated: 0)(None, True) == 0
    with pytest.raises(ValueError, match="a bug in a worker"):
        quiet(broken)(None, True)


def test_the_quiet_daemon_is_used_only_on_a_local_master_whose_workers_run_this_python(monkeypatch):
    from kcm.checkers.spark.session import quiet_daemon_fits

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert quiet_daemon_fits("local[2,4]", {})
    assert not quiet_daemon_fits("spark://127.0.0.1:7077", {})  # executors may get kcm by --py-files only
    assert not quiet_daemon_fits("local[2,4]", {"spark.pyspark.python": "/opt/other/python"})
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/python")
    assert not quiet_daemon_fits("local[2,4]", {})


# A driver that cancels a job whose Python tasks are still streaming Arrow batches to the JVM, as a stop request
# cancels a level's expansion; its stderr is the JVM's and the daemon's too.
CANCEL = textwrap.dedent("""
    import os, sys, threading, time
    import pyarrow as pa
    from kcm.checkers.spark.session import spark_session

    daemon, mark = sys.argv[1], sys.argv[2]
    spark = spark_session("local[2]", conf={"spark.python.daemon.module": daemon})
    sc = spark.sparkContext

    def endless(batches):
        open(mark, "a").close()
        for _ in batches:
            while True:
                yield pa.RecordBatch.from_pydict({"v": [b"x" * 100] * 4000})

    def job():
        sc.setJobGroup("level", "a level's expansion", True)
        try:
            spark.range(0, 4, 1, 2).mapInArrow(endless, "v binary").write.format("noop").mode("overwrite").save()
        except Exception:
            pass

    thread = threading.Thread(target=job)
    thread.start()
    while not os.path.exists(mark):
        time.sleep(0.1)
    time.sleep(1)
    sc.cancelJobGroup("level")
    thread.join()
    time.sleep(2)  # the daemon's children report after the job has ended
    spark.stop()
    print("cancelled")
""")


@pytest.mark.spark
@pytest.mark.parametrize("daemon, traceback", [("pyspark.daemon", True), (QUIET_DAEMON, False)])
def test_cancelling_a_level_prints_no_traceback_with_the_quiet_daemon(tmp_path, daemon, traceback):
    # PySpark's own daemon is the control: it shows that the cancellation does break the workers' pipes.
    if shutil.which("java") is None and not os.environ.get("CI"):
        pytest.skip("Spark needs Java")
    pytest.importorskip("pyspark")
    scratch = tmp_path / "tmp"  # the system's temporary directory, for this run: kcm's scratch goes there
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_DIRS"} | {"TMPDIR": str(scratch)}
    done = subprocess.run([sys.executable, "-c", CANCEL, daemon, str(tmp_path / "started")], capture_output=True,
                          text=True, timeout=240, cwd=tmp_path, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "cancelled", done.stderr
    assert not list(scratch.glob("kcm-spark-*")), "the Spark scratch directory outlived the process"
    assert ("BrokenPipeError" in done.stderr) is traceback, done.stderr
    assert ("Traceback" in done.stderr) is traceback, done.stderr
