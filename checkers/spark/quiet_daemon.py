"""PySpark's Python worker daemon, with the expected end of a cancelled task's worker kept off the terminal.

Why: when kcm stops a search (Ctrl-C, SIGTERM, --max-memory) it cancels the Spark job of the level in work. The
JVM then closes the sockets of that job's Python workers while they are still sending their output, and
PySpark 4's daemon reports each such worker's `BrokenPipeError` as a traceback on its stderr, which on a local
master is the user's terminal. That broken pipe is how a cancelled task ends, not an error: kcm has already said
it is stopping, and the checkpoint is of the last whole level. Any other failure is reported as PySpark reports it.

Spark starts this module (`spark.python.daemon.module`) instead of `pyspark.daemon`, with the same Python and
path as PySpark's own daemon, so it runs PySpark's daemon with one change: a worker whose socket the JVM has
closed ends with a non-zero code, which makes the daemon's child exit without a report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

GONE = (BrokenPipeError, ConnectionResetError)  # the JVM closed the worker's socket: its task was cancelled


def quiet(worker: Callable[..., int]) -> Callable[..., int]:
    """`worker` (PySpark's daemon's per-connection function), ending with code 1 when the JVM has closed its socket."""

    def run(*args: Any) -> int:
        try:
            return worker(*args)
        except GONE:
            return 1  # not 0: the daemon's child then stops serving this socket and exits

    return run


def main() -> None:
    """Run PySpark's daemon with `quiet` workers."""
    import pyspark.daemon as daemon

    # The daemon's manager calls `worker` through its module's globals for each forked child.
    daemon.worker = quiet(daemon.worker)
    daemon.manager()


if __name__ == "__main__":
    main()
