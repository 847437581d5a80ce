"""The Spark engine: the local engine's counts, verdicts and counterexamples; masters; retries; spark-submit."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, walk
from kcm.checkers.spark.session import BadMaster, check_conf, check_master, resolve_master

from kcm.cli import main
from tests.explored import as_explored

ROOT = Path(__file__).resolve().parents[1]
IN_CI = bool(os.environ.get("CI"))
needs_java = pytest.mark.skipif(shutil.which("java") is None and not IN_CI, reason="Spark needs Java")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_masters_get_task_retries_and_bad_masters_are_refused():
    assert check_master("local") == "local[1,4]"
    assert check_master("local[2]") == "local[2,4]"
    assert check_master("local[*]") == "local[*,4]"
    assert check_master("local[2,7]") == "local[2,7]"
    for bad, words in (("local[0]", "at least 1 core"), ("local[2,0]", "at least 1 attempt"),
                       ("garbage", "not a Spark master URL"), ("spark://nohostport", "not host:port"),
                       (f"spark://127.0.0.1:{_closed_port()}", "no Spark master answers")):
        with pytest.raises(BadMaster, match=words):
            check_master(bad)
    assert check_conf(["spark.sql.shuffle.partitions=3", "spark.x=a=b"]) == {
        "spark.sql.shuffle.partitions": "3", "spark.x": "a=b"}
    for bad in ("spark.x", "foo=bar", " spark.x=1"):
        with pytest.raises(BadMaster, match="spark.KEY=VALUE"):
            check_conf([bad])


@pytest.mark.parametrize("master", ["local[0]", "garbage", "CLOSED"])
def test_a_bad_master_is_exit_2_with_one_line(master, capsys):
    if master == "CLOSED":
        master = f"spark://127.0.0.1:{_closed_port()}"
    assert main(["explore", "--config", "tiny", "--engine", "spark", "--master", master]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kcm explore: --master") and err.count("\n") == 1 and "Traceback" not in err


def test_the_master_comes_from_the_option_else_spark_defaults_else_local(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert resolve_master(None) == "local[*]"
    (tmp_path / "spark-defaults.conf").write_text("# comment\nspark.master   spark://10.0.0.1:7077\n"
                                                  "spark.driver.memory=2g\n")
    assert resolve_master(None) == "spark://10.0.0.1:7077"
    assert resolve_master("local[2]") == "local[2]"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("host_below", [0, 100])  # every level on Spark; the thin levels in the driver
def test_spark_gives_the_local_engines_counts_verdicts_and_counterexamples(spark, host_below):
    from kcm.checkers.spark import bfs as spark_bfs

    compared = 0
    where = set()
    for name, bound in (("tiny", None), ("controller", None), ("unclean", None), ("bugs/KIP-101", 3000)):
        model = BoundedSystem(load_config(name))
        local = bfs.explore(model, max_states=bound)
        levels: list = []
        distributed = spark_bfs.explore(model, spark, max_states=bound, timings=levels, host_below=host_below)
        where.update(t.where for t in levels)
        assert (distributed.distinct_states, distributed.transitions, distributed.depth, distributed.complete) == (
            local.distinct_states, local.transitions, local.depth, local.complete), name
        assert distributed.verdicts(model.properties()) == local.verdicts(model.properties()), name
        # The same counterexamples, action for action: both engines keep the first parent in fingerprint order.
        assert distributed.violations == local.violations, name
        assert sum(t.frontier for t in levels) == distributed.distinct_states or bound is not None
        compared += len(local.violations)
    assert compared >= 3, "unclean and KIP-101 break properties, so counterexamples were compared"
    assert where == ({"spark"} if host_below == 0 else {"spark", "driver"})


@pytest.mark.spark
@pytest.mark.slow
def test_levels_go_to_the_driver_and_back_as_they_thin_and_grow_with_the_same_results(spark):
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("controller"))
    local = bfs.explore(model)
    levels: list = []
    reports: list = []
    found = spark_bfs.explore(model, spark, timings=levels, host_below=1000, progress=reports.append)
    # controller's levels: 1, 10, 76, 417, 1440, ... the widest, ... 905, 230, 30, 2
    assert [t.where for t in levels[:4]] == ["driver"] * 4 and levels[4].where == "spark"
    assert levels[-1].where == "driver" and "spark" in {t.where for t in levels}
    # Progress names each level once, with the states counted through it, wherever the level ran.
    through = {t.level: t.visited + t.frontier for t in levels}
    size = {t.level: t.frontier for t in levels}
    lines = [(p.level, p.states, p.frontier) for p in reports]
    assert len(set(lines)) == len(lines) and [x[0] for x in lines] == sorted(x[0] for x in lines)
    assert all(states == through[level] and frontier in (size[level], 0) for level, states, frontier in lines)
    assert lines[-1] == (found.depth, found.distinct_states, 0)
    assert (found.distinct_states, found.transitions, found.depth, found.violations, found.reached) == (
        local.distinct_states, local.transitions, local.depth, local.violations, local.reached)


@pytest.mark.spark
@pytest.mark.slow
def test_walks_on_spark_are_the_local_walks(spark):
    from kcm.checkers.spark import walk as spark_walk

    model = BoundedSystem(load_config("unclean"))
    alone = walk.walk(model, 40, 20, seed=3)
    spread = spark_walk.walk(model, spark, 40, 20, seed=3)
    same = ("distinct_states", "transitions", "depth", "verdicts", "counterexamples", "walks")
    assert alone.violations, "the unclean config loses an acked record within 40 walks"
    assert {k: spread.to_json(model)[k] for k in same} == {k: alone.to_json(model)[k] for k in same}


@pytest.mark.spark
def test_the_drivers_jvm_compiles_with_c1_only(spark):
    # A search's many short plans: C2's compile threads would compete with the Python workers (spark_session).
    from kcm.checkers.spark.session import DRIVER_JIT

    args = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    assert DRIVER_JIT in list(args)


@pytest.mark.spark
@pytest.mark.slow
def test_a_killed_python_worker_costs_a_retry_not_the_run(spark, tmp_path):
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("tiny"))
    marker = str(tmp_path / "killed")

    class KillsOnce:
        """The model, except that the first Python worker to list actions after level 3 kills itself."""

        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            if name.startswith("__") or name == "inner":  # unpickling looks these up before `inner` is set
                raise AttributeError(name)
            return getattr(self.inner, name)

        def actions(self, state):
            from pyspark import TaskContext

            if TaskContext.get() is not None and not os.path.exists(marker) and _deep(state):
                try:
                    os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return self.inner.actions(state)
                os.kill(os.getpid(), signal.SIGKILL)
            return self.inner.actions(state)

    def _deep(state):
        return model.fingerprint(state) % 7 == 0  # some state past the first levels

    expected = bfs.explore(model)
    found = spark_bfs.explore(KillsOnce(model), spark, host_below=0)  # every level in the Python workers
    assert os.path.exists(marker), "a Python worker was killed"
    assert (found.distinct_states, found.transitions, found.depth) == (
        expected.distinct_states, expected.transitions, expected.depth)
    assert found.verdicts(model.properties()) == expected.verdicts(model.properties())


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A standalone master and a 1-core worker on 127.0.0.1 (ci/spark_standalone.sh), stopped afterwards."""
    if shutil.which("java") is None and not IN_CI:
        pytest.skip("Spark needs Java")
    state = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ, KCM_SPARK_STATE=str(state), PYTHON=sys.executable)
    script = str(ROOT / "ci" / "spark_standalone.sh")
    started = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True, timeout=300)
    try:
        assert started.returncode == 0, started.stderr
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=120)
        for role in ("master", "worker"):
            assert not (state / f"{role}.pid").exists()


def _python_without_kcm(folder: Path) -> str:
    """A Python whose path has kcm's dependencies but not kcm: an executor that lacks it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = str(folder / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # A plain path line: the dependencies' folder joins sys.path, but its .pth files (kcm's editable hook) do not run.
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([python, "-c", "import kcm"], cwd=folder, capture_output=True)
    assert probe.returncode != 0, "the executors' Python must not find kcm on its own"
    return python


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_to_a_loopback_standalone_cluster_ships_kcm_and_gives_the_local_counts(standalone, tmp_path):
    zipped = subprocess.run(["bash", str(ROOT / "ci" / "kcm_pyfiles.sh"), str(tmp_path / "dist")],
                            capture_output=True, text=True, timeout=600)
    assert zipped.returncode == 0, zipped.stderr
    archive = zipped.stdout.strip()
    executors = _python_without_kcm(tmp_path / "executor-python")
    submit = str(Path(sys.executable).with_name("spark-submit"))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([submit, "--master", standalone, "--conf", f"spark.pyspark.python={executors}",
                           "--py-files", archive, str(ROOT / "kcm" / "__main__.py"),
                           "explore", "--config", "tiny", "--engine", "spark", "--quiet", "--json"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["engine"] == f"spark {standalone}"  # spark-submit's master, not local[*]
    model = BoundedSystem(load_config("tiny"))
    local = bfs.explore(as_explored(model.cfg)[0]).to_json(model)  # the reductions the command applies
    for key in ("distinct_states", "transitions", "depth", "complete", "verdicts", "counterexamples"):
        assert summary[key] == local[key], key


def test_a_spark_error_is_told_by_its_python_exception_line():
    from kcm.checkers.engines import first_line as _first_line

    worker = RuntimeError("An exception was thrown from the Python worker: Traceback (most recent call last):\n"
                          '  File "worker.py", line 1, in main\n'
                          "ModuleNotFoundError: No module named 'kcm'\n SQLSTATE: 38000\n\tat org.apache.spark.X")
    assert _first_line(worker) == "ModuleNotFoundError: No module named 'kcm'"
    assert _first_line(RuntimeError("x" * 1000)) == "x" * 300 + "..."


def test_fingerprints_keep_their_unsigned_order_as_spark_longs():
    from kcm.checkers.spark.expand import order_key, to_fp, to_long

    fps = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 5, (1 << 64) - 1]
    longs = [to_long(fp) for fp in fps]
    assert all(-(1 << 63) <= v < (1 << 63) for v in longs)
    assert [to_fp(v) for v in longs] == fps
    assert sorted(longs, key=order_key) == longs  # signed order of the key is the fingerprints' unsigned order


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("host_below", [0, 2000])
def test_stopping_at_the_first_violation_ends_where_the_local_engine_bounded_at_that_level_ends(spark, host_below):
    from kcm.checkers.spark import bfs as spark_bfs

    for name, props in (("unclean", None), ("bugs/KIP-101", ["LogsAgreeBelowHw"]),
                        ("bugs/KIP-101", ["AckedRecordsSurvive"])):
        model = BoundedSystem(load_config(name))
        full = bfs.explore(model, max_states=3000)
        stop_at = props or sorted(full.violations)
        depth = min(len(full.violations[p]) for p in stop_at)  # the level after which the search stops
        through = sum(len(level) for level in full.visited.parents[:depth + 1])
        bounded = bfs.explore(model, max_states=through)  # stops after the same level
        stopped = spark_bfs.explore(model, spark, stop_at=stop_at, host_below=host_below)
        assert (stopped.distinct_states, stopped.transitions, stopped.depth, stopped.complete) == (
            bounded.distinct_states, bounded.transitions, bounded.depth, False), (name, stop_at)
        assert stopped.stopped
        assert stopped.violations == bounded.violations and stopped.reached == bounded.reached, (name, stop_at)
        assert all(stopped.violations[p] == full.violations[p] for p in stop_at if p in stopped.violations)


@pytest.mark.spark
def test_the_jvm_writes_its_warnings_to_stderr_not_into_the_json_on_stdout(spark):
    # A GC warning under heap pressure once landed in the middle of `kcm explore --engine spark --json`'s output:
    # the JVM's unified logging writes warnings to stdout unless told otherwise.
    jvm = spark.sparkContext._jvm
    jcmd = Path(jvm.java.lang.System.getProperty("java.home")) / "bin" / "jcmd"
    if jcmd.is_file():  # the JVM's own word on where its log goes
        pid = jvm.java.lang.ProcessHandle.current().pid()
        told = subprocess.run([str(jcmd), str(pid), "VM.log", "list"], capture_output=True, text=True, timeout=60)
        outputs = [line.split()[1:3] for line in told.stdout.splitlines() if line.strip().startswith("#")]
        assert ["stdout", "all=off"] in outputs and ["stderr", "all=warning"] in outputs, told.stdout
    else:  # a runtime without the JDK's tools: the options it was started with
        args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
        assert args.index("-Xlog:disable") < args.index("-Xlog:all=warning:stderr")
