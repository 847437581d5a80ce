"""The Spark session of the distributed explorer: which master, which settings, how quiet, how resilient.

The master comes from `--master` when given; else from spark-submit (which runs kcm with a JVM already started,
its master and `spark-defaults.conf` already read); else from `spark-defaults.conf` (in `SPARK_CONF_DIR`, or
`conf/` under the Spark home); else `local[*]`. A local master gets task retries (`local[N]` becomes
`local[N,R]`: in local mode Spark ignores `spark.task.maxFailures`), so a Python worker that dies costs a retried
task, not the run. A master URL that cannot work is refused before any JVM starts (BadMaster), and a standalone
master that does not answer on its port is refused after a short connection attempt instead of Spark's minute of
retries.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_MEMORY = "4g"
LOCAL_RETRIES = 4  # attempts per task on a local master (Spark's spark.task.maxFailures default on a cluster)
CONNECT_TIMEOUT = 3.0  # seconds to wait for a standalone master's port to answer
QUIET_DAEMON = "kcm.checkers.spark.quiet_daemon"  # PySpark's daemon, quiet about cancelled tasks' workers
LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"  # the JVM's warnings on stderr, not stdout (`spark_session`)
DRIVER_JIT = "-XX:TieredStopAtLevel=1"  # the driver JVM compiles with C1 only (why: in `spark_session` below)

_LOCAL = re.compile(r"local(?:\[(?P<n>\*|\d+)(?:,(?P<r>\d+))?\])?")
_STANDALONE = re.compile(r"spark://(?P<hosts>[^/\s]+)")
_OTHER = re.compile(r"(yarn|k8s://\S+|local-cluster\[\d+,\d+,\d+\])")
_MEMORY = re.compile(r"\d+[kmgt]?b?", re.IGNORECASE)


class BadMaster(ValueError):
    """A Spark master or setting kcm cannot use; the message says why, in one line."""


def check_master(master: str) -> str:
    """The master URL to use for `master`: local masters with task retries; BadMaster if it cannot work."""
    local = _LOCAL.fullmatch(master)
    if local:
        cores, retries = local.group("n") or "1", local.group("r")
        if cores == "0":
            raise BadMaster(f"--master {master}: local[0] runs no task; give at least 1 core (local[N] or local[*])")
        if retries is not None and int(retries) < 1:
            raise BadMaster(f"--master {master}: a task needs at least 1 attempt")
        return f"local[{cores},{retries or LOCAL_RETRIES}]"
    standalone = _STANDALONE.fullmatch(master)
    if standalone:
        for hostport in standalone.group("hosts").split(","):
            host, _, port = hostport.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise BadMaster(f"--master {master}: {hostport!r} is not host:port")
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
            except OSError as err:
                raise BadMaster(f"--master {master}: no Spark master answers at {hostport} "
                                f"({err.strerror or err.__class__.__name__})") from None
        return master
    if _OTHER.fullmatch(master):
        return master
    raise BadMaster(f"--master {master!r}: not a Spark master URL (local, local[N], local[*], local[N,R], "
                    f"spark://HOST:PORT, yarn, k8s://URL)")


def check_conf(pairs: list[str]) -> dict[str, str]:
    """`--conf k=v` options as a dict; BadMaster naming the first one that is not `spark.KEY=VALUE`."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.startswith("spark.") or key != key.strip():
            raise BadMaster(f"--conf {pair!r}: expected spark.KEY=VALUE")
        out[key] = value
    return out


def under_spark_submit() -> bool:
    """Whether spark-submit started this process (its JVM is already running and configured)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_defaults() -> dict[str, str]:
    """The settings of spark-defaults.conf, read as spark-submit reads it (`key value` or `key=value` lines)."""
    folder = os.environ.get("SPARK_CONF_DIR")
    if folder is None:
        home = os.environ.get("SPARK_HOME")
        if home is None:
            try:
                import pyspark
            except ImportError:
                return {}
            home = str(Path(pyspark.__file__).parent)
        folder = os.path.join(home, "conf")
    out: dict[str, str] = {}
    try:
        text = Path(folder, "spark-defaults.conf").read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = re.split(r"[\s=]+", line, maxsplit=1)
        if len(parts) == 2:
            out[parts[0]] = parts[1].strip()
    return out


def resolve_master(master: str | None) -> str:
    """The master before checking: --master, else spark-submit's, else spark-defaults.conf's, else local[*]."""
    if master is not None:
        return master
    if under_spark_submit():
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()  # joins spark-submit's JVM, whose conf holds its master and defaults
        return SparkConf().get("spark.master", "local[*]")
    return spark_defaults().get("spark.master", "local[*]")


def quiet_daemon_fits(url: str, conf: dict[str, str]) -> bool:
    """Whether Spark should start its Python workers through `quiet_daemon`: on a local master whose workers run
    this very Python (which has kcm). A cluster's executors may get kcm only with their tasks (`--py-files`), too
    late for the daemon, and their daemon's stderr goes to the executor's log, not to the user's terminal."""
    return url.startswith("local") and os.environ.get("PYSPARK_PYTHON") == sys.executable \
        and conf.get("spark.pyspark.python", sys.executable) == sys.executable


def _scratch() -> str:
    """A scratch directory for Spark's blocks and the JVM's temporary files, removed when this process exits.

    Spark removes its own block directories at a clean stop, but not the root it was given, nor what the JVM
    unpacks there (native libraries); without the removal every run left a few MB in the system's temporary
    directory. It is removed at exit rather than at the session's stop: the JVM outlives the session in this
    process, and a later session here reuses both (SPARK_LOCAL_DIRS is read once, when the JVM starts).
    """
    tmp = tempfile.mkdtemp(prefix="kcm-spark-")
    os.environ["SPARK_LOCAL_DIRS"] = tmp
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


def spark_session(master: str | None = "local[*]", memory: str | None = None,
                  conf: dict[str, str] | None = None, spark_log: bool = False) -> Any:
    """A Spark session for the explorer, started on the resolved master; BadMaster if it cannot work.

    `memory` is the JVM heap of the driver (in local mode the executors live in it, so it holds every cached
    block and each level's shuffle; Spark's default 1g runs out on large spaces) and of each executor. Without
    it the driver kcm starts gets DEFAULT_MEMORY unless spark-defaults.conf sets one. Under spark-submit the
    driver's JVM is already running: its heap is spark-submit's `--driver-memory`, and only the executors' is set
    here. `conf` goes to Spark as given, after kcm's own settings (so it wins).
    """
    url = check_master(resolve_master(master))
    if memory is not None and not _MEMORY.fullmatch(memory):
        raise BadMaster(f"--spark-memory {memory!r}: not a JVM memory size (like 512m or 4g)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tmp = os.environ.get("SPARK_LOCAL_DIRS") or _scratch()
    # The JVM's own warnings (a GC under heap pressure, say) go to stderr: by default they go to stdout, where
    # on a local master they land in the middle of `kcm explore --json`'s output.
    java = f"-Djava.io.tmpdir={tmp} {JVM_LOG}"
    if not spark_log:
        java += f" -Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    # The driver's JVM (on a local master, the executors' too) compiles with C1 only: a search runs many short
    # plans, a new one each level, and on `default` on 2 cores C2 took 14.5 of the JVM's 30 CPU seconds, in
    # threads that compete with the Python workers; with C1 only the JVM took 20 s and the run 5% less wall time
    # (docs/spark-scale-out.md). A cluster's executors keep the JVM's default.
    driver_java = f"{java} {DRIVER_JIT}"
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(url).appName("kcm-explore")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", driver_java)
               .config("spark.executor.extraJavaOptions", java)
               .config("spark.task.maxFailures", str(LOCAL_RETRIES)))
    if quiet_daemon_fits(url, conf or {}):
        builder = builder.config("spark.python.daemon.module", QUIET_DAEMON)
    if memory is not None:
        builder = builder.config("spark.executor.memory", memory)
    if not under_spark_submit() and (memory is not None or "spark.driver.memory" not in spark_defaults()):
        builder = builder.config("spark.driver.memory", memory or DEFAULT_MEMORY)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not spark_log:
        spark.sparkContext.setLogLevel("ERROR")
    return spark

