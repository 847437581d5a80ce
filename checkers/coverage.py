"""Transition coverage (TLC's -coverage, for kcm): which table edges, operations and selectors a run exercised.

A coverage report is kept per rule set: the partition and replica table edges (from the state changes each step
logs, each trace event or each state-change.log line), the operations (scenario ops, explored actions, trace event
types, log message kinds) and the leader selectors the reference ran. Edges a table does not allow are listed
apart ("outside the table"), since a checker flags them.

Selectors are recorded by a probe around the reference's one selector dispatch (`partition_machine.choose`)
while kcm runs the steps, so no rule is restated here.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcm.model.tables import RuleSet, rule_set


@dataclass
class Coverage:
    """What one rule set's runs exercised, with how often."""

    rules: str
    sources: list[str] = field(default_factory=list)
    partition_edges: Counter = field(default_factory=Counter)  # (from, to) -> times
    replica_edges: Counter = field(default_factory=Counter)
    operations: Counter = field(default_factory=Counter)
    selectors: Counter = field(default_factory=Counter)

    def add_change(self, machine: str, frm: str, to: str) -> None:
        """Count one logged state change."""
        (self.partition_edges if machine == "partition" else self.replica_edges)[(frm, to)] += 1

    def add_effects(self, effects: Any) -> None:
        """Count the state changes a step's Effects logged."""
        for c in effects.state_changes:
            self.add_change(c.machine, c.from_state, c.to_state)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data: every table edge with its count (0: not covered)."""
        table = rule_set(self.rules)
        out: dict[str, Any] = {"rules": self.rules, "sources": self.sources}
        for machine, counts in (("partition", self.partition_edges), ("replica", self.replica_edges)):
            edges = table_edges(table, machine)
            covered = [e for e in edges if counts[e]]
            out[f"{machine}_edges"] = {
                "covered": len(covered), "total": len(edges),
                "edges": [{"from": f, "to": t, "count": counts[(f, t)]} for f, t in edges],
                "outside_table": [{"from": f, "to": t, "count": n} for (f, t), n in sorted(counts.items())
                                  if (f, t) not in edges]}
        out["operations"] = dict(sorted(self.operations.items()))
        from kcm.reference import selectors as sel

        out["selectors"] = {name: self.selectors[name] for name in sel.NAMES}
        return out


def table_edges(table: RuleSet, machine: str) -> list[tuple[str, str]]:
    """Every (from, to) move a rule set's partition or replica table allows, in the table's state order."""
    moves = table.partition if machine == "partition" else table.replica
    states = table.partition_states() if machine == "partition" else table.replica_states()
    order = {s: i for i, s in enumerate(states)}
    return sorted(((f, t) for t, froms in moves.items() for f in froms),
                  key=lambda e: (order.get(e[0], 99), order.get(e[1], 99)))


@contextlib.contextmanager
def selector_probe(cov: Coverage) -> Iterator[None]:
    """Count every selector the reference runs while the block runs (the probe is removed afterwards)."""
    from kcm.reference import partition_machine

    original = partition_machine.choose

    def choose(t: Any, tp: tuple, selector: str, isr: tuple[int, ...]) -> Any:
        cov.selectors[selector] += 1
        return original(t, tp, selector, isr)

    partition_machine.choose = choose
    try:
        yield
    finally:
        partition_machine.choose = original


def of_scenarios(paths: Iterable[Path]) -> dict[str, Coverage]:
    """Coverage of scenario files run through the reference, one report per rule set the scenarios use."""
    from kcm.checkers.scenario import InvalidScenario, cluster_config, parse_text

    out: dict[str, Coverage] = {}
    for path in paths:
        try:
            doc = parse_text(Path(path).read_bytes())
        except (InvalidScenario, OSError):
            continue  # `kcm run` and the gate report those; coverage counts what runs
        config = cluster_config(doc)
        cov = out.setdefault(config.rules, Coverage(config.rules))
        cov.sources.append(str(path))
        run_steps(cluster_config(doc), doc["steps"], cov)
    return out


def run_steps(config: Any, steps: list[dict[str, Any]], cov: Coverage) -> None:
    """Run scenario steps through the reference from the start, counting their ops, moves and selectors."""
    from kcm.model.actions import from_step
    from kcm.model.errors import KcmError
    from kcm.reference import api

    with selector_probe(cov):
        state, effects = api.start(config)
        cov.add_effects(effects)
        for step in steps:
            cov.operations[step["op"]] += 1
            try:
                state, effects = api.step(config, state, from_step(step))
            except KcmError:
                continue
            cov.add_effects(effects)


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

    @contextlib.contextmanager
    def probing(self) -> Iterator[None]:
        """Note every selector the reference runs while the block runs (the probe is removed afterwards)."""
        from kcm.reference import partition_machine

        original = partition_machine.choose
        ran = self.ran

        def choose(t: Any, tp: tuple, selector: str, isr: tuple[int, ...]) -> Any:
            ran.append(selector)
            return original(t, tp, selector, isr)

        partition_machine.choose = choose
        try:
            yield
        finally:
            partition_machine.choose = original

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

    def add_to(self, cov: Coverage) -> None:
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


def of_run(model: Any, tally: Tally, name: str | None = None) -> Coverage:
    """The coverage of an exploration: the set-up that makes the initial state, then what the run's engine
    counted (`Tally`) over every transition it took."""
    cov = Coverage(model.config.rules, [f"explore {name or model.cfg.get('name', 'config')}"])
    run_steps(model.config, model.scenario([])["steps"], cov)
    tally.add_to(cov)
    return cov


def of_exploration(model: Any, max_states: int | None = None) -> Coverage:
    """Coverage of an exhaustive local exploration of a bounded model: every transition it takes is counted."""
    from kcm.checkers import bfs

    found = bfs.explore(model, max_states, coverage=True)
    return of_run(model, found.tally)


def of_traces(paths: Iterable[str], rules: str) -> Coverage:
    """Coverage of JSONL traces: the state changes and event types they hold (read as check-trace reads them)."""
    from kcm.checkers.oracle_trace import parse_line

    cov = Coverage(rules)
    for path in paths:
        cov.sources.append(str(path))
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                for text in fh:
                    ev, _ = parse_line(text) if text.strip() else (None, "")
                    if ev is None:
                        continue
                    cov.operations[ev["type"]] += 1
                    if ev["type"] in ("partition_state_change", "replica_state_change"):
                        cov.add_change(ev["type"].split("_")[0], ev["from"], ev["to"])
        except OSError:
            continue
    return cov


def of_log(path: str, kafka_version: str, rules: str) -> Coverage:
    """Coverage of a Kafka state-change.log: the moves and message kinds its lines hold."""
    from kcm.checkers import statechange_log as scl

    cov = Coverage(rules, [path])
    with open(path, "rb") as fh:
        for ev in scl.read_events(scl.decode_lines(fh), scl.ReadStats()):
            cov.operations[ev.kind] += 1
            if ev.kind in (scl.PARTITION_CHANGE, scl.REPLICA_CHANGE) and ev.from_state and ev.to_state:
                cov.add_change("partition" if ev.kind == scl.PARTITION_CHANGE else "replica", ev.from_state,
                               ev.to_state)
    return cov


def text(cov: Coverage) -> str:
    """The report for people: per machine the covered edges out of the table's, the missed ones named."""
    d = cov.to_dict()
    lines = [f"coverage, rules {d['rules']} ({len(d['sources'])} source{'s' * (len(d['sources']) != 1)})"]
    for machine in ("partition", "replica"):
        m = d[f"{machine}_edges"]
        lines.append(f"  {machine} table: {m['covered']} of {m['total']} edges")
        missed = [f"{e['from']} -> {e['to']}" for e in m["edges"] if not e["count"]]
        if missed:
            lines.append("    not covered: " + "; ".join(missed))
        if m["outside_table"]:
            lines.append("    outside the table: " + "; ".join(f"{e['from']} -> {e['to']} x{e['count']}"
                                                              for e in m["outside_table"]))
    ops = d["operations"]
    lines.append(f"  operations ({len(ops)}): " + ", ".join(f"{k} x{v}" for k, v in ops.items()))
    sel = d["selectors"]
    lines.append("  selectors: " + ", ".join(f"{k} x{v}" for k, v in sel.items())
                 + ("" if all(sel.values()) else "  (not run: " + ", ".join(k for k, v in sel.items() if not v) + ")"))
    return "\n".join(lines)


__all__ = ["Coverage", "Tally", "of_exploration", "of_log", "of_run", "of_scenarios", "of_traces", "selector_probe",
           "text"]
