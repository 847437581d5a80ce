"""The engines `kcm explore` runs, in one registry: each explores a model under `Options` to an `Exploration`.

| name | what runs |
|---|---|
| `local` | breadth-first search in this process (`checkers/explore/bfs.py`) |
| `workers` | breadth-first search in owner processes (`checkers/explore/workers.py`, `--workers N`) |
| `spark` | breadth-first search on Spark (`checkers/spark/bfs.py`), the session started and stopped here |
| `walks` | seeded random walks in this process (`checkers/explore/walk.py`) |
| `spark-walks` | the same walks as Spark tasks (`checkers/spark/walk.py`) |

All three breadth-first engines run the one level loop (`checkers/explore/level_loop.py`), each supplying how a level is
expanded and where its visited set lives (this process, owner processes, or Spark's JVM), so each gives the same
counts, verdicts and counterexamples and resumes any other's checkpoint. A failure the user can act on (Spark
missing or not starting, a bad master, a failed job) is an `EngineError` whose message is one line; the engines
import their own dependencies (NumPy, pyspark) only when run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol


class EngineError(Exception):
    """An engine could not run, or failed, for a reason told in one line."""


@dataclass
class Options:
    """How to explore: every engine reads the options it knows and leaves the others."""

    max_states: int | None = None
    progress: Callable[[Any], None] | None = None  # breadth-first progress (level_loop.Progress)
    checkpoint: Any = None  # a checkpoint.Checkpointer
    resume: Any = None  # a checkpoint.Snapshot of any engine
    stop_at: Collection[str] | None = None
    coverage: bool = False
    stop: Any = None  # a stopping.StopRequest (breadth-first engines only)
    workers: int = 2
    walks: int = 1
    depth: int = 100
    seed: int = 0
    walk_progress: Callable[[int, int, float], None] | None = None
    master: str | None = None
    spark_memory: str | None = None
    conf: list[str] = field(default_factory=list)
    spark_log: bool = False
    driver_below: int | None = None  # None: spark_bfs.HOST_BELOW


class Engine(Protocol):
    """An exploration engine: a model and the options in, the exploration out."""

    def explore(self, model: Any, options: Options) -> Any:
        """Explore `model` under `options`; an `Exploration` (a `WalkExploration` for walks)."""


def _searching(options: Options) -> Any:
    """The span in which a signal only asks the search to stop (none without a stop request)."""
    import contextlib

    return options.stop.search() if options.stop is not None else contextlib.nullcontext()


class Local:
    """Breadth-first search in this process."""

    def explore(self, model: Any, options: Options) -> Any:
        """`bfs.explore` under `options`."""
        from kcm.checkers.explore import bfs

        with _searching(options):
            return bfs.explore(model, options.max_states, options.progress, options.checkpoint, options.resume,
                               stop_at=options.stop_at, coverage=options.coverage, stop=options.stop)


class Workers:
    """Breadth-first search in `options.workers` owner processes."""

    def explore(self, model: Any, options: Options) -> Any:
        """`workers.explore` under `options`."""
        from kcm.checkers.explore import workers

        with _searching(options):
            return workers.explore(model, options.workers, options.max_states, options.progress, options.checkpoint,
                                   options.resume, stop_at=options.stop_at, coverage=options.coverage,
                                   stop=options.stop)


class Walks:
    """Seeded random walks in this process."""

    def explore(self, model: Any, options: Options) -> Any:
        """`walk.walk` under `options`."""
        from kcm.checkers.explore import walk

        return walk.walk(model, options.walks, options.depth, options.seed, progress=options.walk_progress)


class Spark:
    """An engine on Spark: its session started for the run and stopped after it, its failures in one line."""

    def __init__(self, walks: bool) -> None:
        self.walks = walks

    def explore(self, model: Any, options: Options) -> Any:
        """Start the session, run the walks or the breadth-first search on it, stop the session."""
        from kcm.checkers.explore.checkpoint import BadCheckpoint

        try:
            from kcm.checkers.explore import stopping
            from kcm.checkers.spark import bfs as spark_bfs
            from kcm.checkers.spark import walk as spark_walk
            from kcm.checkers.spark.session import BadMaster, check_conf, spark_session
            from py4j.protocol import Py4JError
            from pyspark.errors import PySparkException
        except ImportError as err:
            raise EngineError(f"the spark engine needs pyspark and pyarrow ({err})") from None
        try:
            spark = spark_session(options.master, options.spark_memory, check_conf(options.conf), options.spark_log)
        except BadMaster as err:
            raise EngineError(str(err)) from None
        except (Py4JError, PySparkException, OSError) as err:
            raise EngineError(f"Spark did not start: {first_line(err)}") from None
        if options.stop is not None:
            stopping.reinstall(options.stop)  # PySpark's context put its own SIGINT handler in place
        try:
            if self.walks:
                return spark_walk.walk(model, spark, options.walks, options.depth, options.seed,
                                       progress=options.walk_progress)
            below = spark_bfs.HOST_BELOW if options.driver_below is None else options.driver_below
            with _searching(options):
                return spark_bfs.explore(model, spark, options.max_states, options.progress,
                                         checkpoint=options.checkpoint, resume=options.resume,
                                         stop_at=options.stop_at, host_below=below, coverage=options.coverage,
                                         stop=options.stop)
        except (OSError, BadCheckpoint, RuntimeError) as err:
            raise EngineError(str(err)) from None
        except (Py4JError, PySparkException) as err:
            # The JVM failed, or a task failed more often than its retries allow; Spark's own log says more.
            raise EngineError(f"the Spark job failed: {first_line(err)} (if the JVM ran out of heap, raise "
                              f"--spark-memory; --spark-log shows Spark's log)") from None
        finally:
            try:
                spark.stop()
            except Py4JError:
                pass  # the JVM is already gone


ENGINES: dict[str, Engine] = {"local": Local(), "workers": Workers(), "spark": Spark(walks=False),
                              "walks": Walks(), "spark-walks": Spark(walks=True)}


def name_of(engine: str, workers: int = 1, walks: bool = False) -> str:
    """The registry's name of what `kcm explore --engine ENGINE [--workers N] [--walks N]` runs."""
    if walks:
        return "spark-walks" if engine == "spark" else "walks"
    return "workers" if engine == "local" and workers > 1 else engine


def explore(name: str, model: Any, options: Options) -> Any:
    """Run the engine registered as `name` (ValueError for an unknown name)."""
    engine = ENGINES.get(name)
    if engine is None:
        raise ValueError(f"no engine named {name!r}; known: {', '.join(ENGINES)}")
    return engine.explore(model, options)


def first_line(err: BaseException) -> str:
    """The telling line of a Spark error, cut short: its Python exception if it carries one, else its first line.

    Spark's messages carry whole stack traces (the JVM's and the Python worker's); the worker's own exception
    line ("ModuleNotFoundError: No module named 'kcm'") is what says what happened.
    """
    text = str(err).strip().splitlines()
    causes = [line.strip() for line in text[:400] if re.match(r"\s*[\w.]+(Error|Exception|Exit): ", line)]
    line = causes[-1] if causes else (text[0] if text else err.__class__.__name__)
    return line if len(line) <= 300 else line[:300] + "..."
