"""The engine registry (`checkers/engines.py`) and the one level loop (`checkers/explore/level_loop.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from kcm.checkers import engines
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, level_loop, walk
from kcm.checkers.explore.verdicts import Exploration


def _key(found) -> tuple:
    return (found.distinct_states, found.transitions, found.depth, found.complete, found.stopped,
            sorted(found.reached), {k: [a.to_step() for a in v] for k, v in found.violations.items()},
            [n for n, _ in found.levels])


@pytest.mark.parametrize(("engine", "workers", "walks", "name"), [
    ("local", 1, False, "local"), ("local", 2, False, "workers"), ("spark", 1, False, "spark"),
    ("local", 1, True, "walks"), ("spark", 1, True, "spark-walks")])
def test_the_flags_name_one_registered_engine(engine, workers, walks, name):
    assert engines.name_of(engine, workers, walks) == name
    assert name in engines.ENGINES


def test_an_unknown_engine_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="no engine named 'gpu'; known: local, workers, spark"):
        engines.explore("gpu", BoundedSystem(load_config("tiny")), engines.Options())


def test_the_registry_runs_the_engines_the_modules_run():
    model = BoundedSystem(load_config("unclean"))
    stop_at = bfs.safety_names(model)
    local = engines.explore("local", model, engines.Options(stop_at=stop_at))
    assert _key(local) == _key(bfs.explore(model, stop_at=stop_at)) and local.violations
    shared = engines.explore("workers", model, engines.Options(stop_at=stop_at, workers=2))
    assert _key(shared) == _key(local) and shared.engine == "local, 2 workers"
    walked = engines.explore("walks", model, engines.Options(walks=3, depth=8, seed=5))
    assert walked.distinct_states == walk.walk(model, 3, 8, 5).distinct_states


def test_a_spark_that_does_not_start_is_one_engine_error(monkeypatch):
    pytest.importorskip("pyspark")
    # The engine's modules are imported before the patch: one first imported under it would keep `refuse` as its
    # own `spark_session` for the rest of the session (conftest's Spark fixture starts its session through one).
    from kcm.checkers.spark import bfs as spark_bfs  # noqa: F401
    from kcm.checkers.spark import session as spark_session

    def refuse(*args, **kwargs):
        raise OSError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(spark_session, "spark_session", refuse)
    with pytest.raises(engines.EngineError, match="^Spark did not start: Java gateway process exited"):
        engines.explore("spark", BoundedSystem(load_config("tiny")), engines.Options())


class _Counting:
    """A toy engine for the loop: every state of a level has two successors, new while the level is below 3."""

    def __init__(self) -> None:
        self.halted = False

    def begin(self, states):
        return list(range(len(states)))

    def expand(self, frontier, visited, found, tick):
        found.transitions += 2 * len(frontier)
        tick(0, 0)  # after counting: a level given up must give its transitions back
        if len(visited) > 20:
            return level_loop.Level(np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64),
                                    np.empty(0, dtype=np.int64), [])
        base = np.uint64(1 << 40) + np.uint64(len(visited))
        fps = base + np.arange(2 * len(frontier), dtype=np.uint64)
        parents = np.arange(2 * len(frontier), dtype=np.int64) // 2
        return level_loop.Level(fps, parents, np.zeros(fps.size, dtype=np.int64), list(range(fps.size)))

    def halt(self) -> None:
        self.halted = True


def test_the_loop_keeps_the_books_of_any_engine():
    model = BoundedSystem(load_config("tiny"))
    roots = len({model.fingerprint(s) for s in model.init_states()})
    found = level_loop.run(model, Exploration("toy"), _Counting())
    sizes = [n for n, _ in found.levels]
    assert sizes[:3] == [2 * roots, 4 * roots, 8 * roots] and sizes[-1] == 0
    assert found.distinct_states == roots + sum(sizes) and found.depth == len(sizes) - 1 and found.complete
    bounded = level_loop.run(model, Exploration("toy"), _Counting(), max_states=roots + 1)
    assert not bounded.complete and bounded.depth == 1


def test_a_stop_request_gives_up_the_level_and_halts_the_engine():
    from kcm.checkers.explore.stopping import StopRequest

    model = BoundedSystem(load_config("tiny"))
    stop = StopRequest()
    toy = _Counting()
    original = toy.expand

    def expand(frontier, visited, found, tick):
        if len(visited) > 3:
            stop.request("test")
        return original(frontier, visited, found, tick)

    toy.expand = expand
    found = level_loop.run(model, Exploration("toy"), toy, stop=stop)
    roots = len({model.fingerprint(s) for s in model.init_states()})
    sizes = [n for n, _ in found.levels]
    assert toy.halted and stop.acted and not found.complete and sizes
    assert found.transitions == 2 * (roots + sum(sizes[:-1]))
    assert found.distinct_states == roots + sum(sizes)


class _Lazy:
    """The toy engine made lazy: its own visited set, each new frontier left uncounted until it is expanded."""

    LAZY = True
    visited = None

    def __init__(self, stop_level: int | None = None) -> None:
        self.total, self.depth, self.counts, self.stop_level = 0, 0, 0, stop_level

    def opening(self, found, resume):
        self.total = 1
        return self, 1, level_loop.Start(None, [], [], {}, 0, [1], 0, 0.0)

    def expand(self, frontier, visited, found, tick):
        none = np.empty(0, dtype=np.uint64)
        if self.depth == self.stop_level:  # the frontier's own states break a property: nothing else counts
            return level_loop.Level(none, none, none, frontier, {"LeaderInIsrInAr": 0}, expanded=frontier, ended=True)
        found.transitions += 2 * frontier
        new = 2 * frontier if frontier and self.total <= 20 else 0
        self.total += new
        self.depth += 1
        return level_loop.Level(none, none, none, new, size=None, expanded=frontier)

    def count(self, frontier):
        self.counts += 1
        return frontier

    def judge(self, frontier, storing=False):
        return {}, {}

    def halt(self) -> None:
        pass

    def add(self, level) -> None:
        pass

    def mark(self, depth, link):
        return 0, []

    def paths(self, witnesses):
        return witnesses

    def nbytes(self) -> int:
        return 0


def test_a_lazy_engine_gets_the_counts_of_an_eager_one_and_is_counted_only_when_needed():
    model = BoundedSystem(load_config("tiny"))
    eager = level_loop.run(model, Exploration("toy"), _Counting())
    lazy, reports = _Lazy(), []
    found = level_loop.run(model, Exploration("lazy"), lazy, progress=reports.append)
    assert len({model.fingerprint(s) for s in model.init_states()}) == 1  # as the lazy toy's first frontier
    assert (found.distinct_states, found.depth, found.transitions) == (
        eager.distinct_states, eager.depth, eager.transitions)
    assert found.complete and lazy.counts == 0  # each frontier counted by its own expansion
    lines = [(p.level, p.states, p.frontier) for p in reports]
    # Each level named once, when counted; a search ended by an expansion that found the frontier empty shows
    # the last level with its size (as the Spark engine always has).
    assert len(set(lines)) == len(lines) and lines[-1][:2] == (found.depth, found.distinct_states)
    bounded = _Lazy()
    cut = level_loop.run(model, Exploration("lazy"), bounded, max_states=4)
    assert bounded.counts >= 1 and not cut.complete and cut.distinct_states == 7 and cut.depth == 2
    ended = level_loop.run(model, Exploration("lazy"), _Lazy(stop_level=2), stop_at={"LeaderInIsrInAr"})
    assert ended.stopped and not ended.complete and ended.depth == 2 and ended.distinct_states == 7
    assert "LeaderInIsrInAr" in ended.violations
