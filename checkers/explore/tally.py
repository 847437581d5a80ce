"""Transition counts an explorer process keeps for the coverage report (`coverage.py`): its own module,
so that the engines count without importing the reports (which run explorations themselves)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def selectors_run(note: Callable[[str], Any]) -> Iterator[None]:
    """Call `note` with each leader selector the reference runs while the block runs: a probe around its one
    selector dispatch (`partition_machine.choose`), removed afterwards. Coverage, the engines' tallies and the
    suite's behaviours all count selectors through it."""
    from kcm.reference import partition_machine

    original = partition_machine.choose

    def choose(t: Any, tp: tuple, selector: str, isr: tuple[int, ...]) -> Any:
        note(selector)
        return original(t, tp, selector, isr)

    partition_machine.choose = choose
    try:
        yield
    finally:
        partition_machine.choose = original


class Tally:
    """What one explorer process counted of the transitions it took: op names, table moves, selectors run.

    Every engine counts in the process that expands the states (the local engine, each `--workers` process, each
    Spark task) with `successors` in place of `verdicts.indexed_successors`, and hands its counts over with
    `take` at the end of a level; the coordinator `merge`s them like the level's other counters. A selector is
    counted each time the step of a transition taken runs it: the probe (`probing`) notes each selector run,
    and the notes are cleared before each action is tried, so the model's own questions (which actions to offer)
    and refused steps count nothing, and every engine counts the same.
    """

    __slots__ = ("ops", "edges", "selectors", "ran")

    def __init__(self) -> None:
        self.ops: dict[Any, int] = {}  # action type (op name once taken) -> transitions
        self.edges: dict[tuple[str, str, str], int] = {}  # (machine, from, to) -> times logged
        self.selectors: dict[str, int] = {}
        self.ran: list[str] = []  # the selectors the step being tried has run so far

    def successors(self, model: Any, state: Any) -> list[tuple[int, Any, Any, Any]]:
        """`verdicts.indexed_successors` (the same steps, the same order), each kept transition counted."""
        out = []
        successor = model.successor
        ran, ops, edges = self.ran, self.ops, self.edges
        for i, action in enumerate(model.actions(state)):
            ran.clear()
            found = successor(state, action)
            if found is None:
                continue
            nxt, effects = found
            out.append((i, action, nxt, effects))
            kind = type(action)
            ops[kind] = ops.get(kind, 0) + 1
            for c in effects.state_changes:
                key = (c.machine, c.from_state, c.to_state)
                edges[key] = edges.get(key, 0) + 1
            for name in ran:
                self.selectors[name] = self.selectors.get(name, 0) + 1
        return out

    def probing(self) -> contextlib.AbstractContextManager[None]:
        """Note every selector the reference runs while the block runs (the probe is removed afterwards)."""
        return selectors_run(self.ran.append)

    def take(self) -> dict[str, Any]:
        """The counts so far as JSON-ready data (op names for action types), and a fresh start."""
        ops: dict[str, int] = {}
        for kind, n in self.ops.items():
            name = _op_name(kind)
            ops[name] = ops.get(name, 0) + n
        out = {"operations": ops,
               "edges": [[m, f, t, n] for (m, f, t), n in self.edges.items()], "selectors": dict(self.selectors)}
        self.ops, self.edges, self.selectors = {}, {}, {}
        return out

    def counts(self) -> dict[str, Any]:
        """The counts so far as JSON-ready data (what `take` gives), kept here too (a checkpoint's copy)."""
        counts = self.take()
        self.merge(counts)
        return counts

    @staticmethod
    def valid(counts: Any) -> bool:
        """Whether data read from a file has the shape `take` gives (a checkpoint is hostile input)."""
        def count(v: Any) -> bool:
            return type(v) is int and v >= 0

        def names(v: Any) -> bool:
            return isinstance(v, dict) and all(isinstance(k, str) and count(n) for k, n in v.items())

        return (isinstance(counts, dict) and names(counts.get("operations")) and names(counts.get("selectors"))
                and isinstance(counts.get("edges"), list)
                and all(isinstance(e, list) and len(e) == 4 and all(isinstance(x, str) for x in e[:3]) and count(e[3])
                        for e in counts["edges"]))

    def merge(self, counts: dict[str, Any]) -> None:
        """Add counts another process `take`s (or this one's own) to these."""
        for name, n in counts["operations"].items():
            self.ops[name] = self.ops.get(name, 0) + n
        for m, f, t, n in counts["edges"]:
            self.edges[(m, f, t)] = self.edges.get((m, f, t), 0) + n
        for name, n in counts["selectors"].items():
            self.selectors[name] = self.selectors.get(name, 0) + n

    def add_to(self, cov: Any) -> None:
        """Add every count to a coverage report."""
        counts = self.counts()
        for name, n in counts["operations"].items():
            cov.operations[name] += n
        for m, f, t, n in counts["edges"]:
            (cov.partition_edges if m == "partition" else cov.replica_edges)[(f, t)] += n
        for name, n in counts["selectors"].items():
            cov.selectors[name] += n


def _op_name(kind: Any) -> str:
    """The step op of an action type (`@operation`), or the type's name for an action that has none."""
    if isinstance(kind, str):
        return kind
    from kcm.model.actions import CONTRACT_OPS, EXTENSION_OPS

    for ops in (CONTRACT_OPS, EXTENSION_OPS):
        for op, cls in ops.items():
            if cls is kind:
                return op
    return kind.__name__


__all__ = ["Tally", "selectors_run"]
