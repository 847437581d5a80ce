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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcm.checkers.explore.tally import Tally, selectors_run
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


def selector_probe(cov: Coverage) -> contextlib.AbstractContextManager[None]:
    """Count every selector the reference runs while the block runs (the probe is removed afterwards)."""

    def count(selector: str) -> None:
        cov.selectors[selector] += 1

    return selectors_run(count)


def of_scenarios(paths: Iterable[Path]) -> dict[str, Coverage]:
    """Coverage of scenario files run through the reference, one report per rule set the scenarios use."""
    from kcm.checkers.core.scenario import InvalidScenario, cluster_config, parse_text

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


def of_run(model: Any, tally: Tally, name: str | None = None) -> Coverage:
    """The coverage of an exploration: the set-up that makes the initial state, then what the run's engine
    counted (`Tally`) over every transition it took."""
    cov = Coverage(model.config.rules, [f"explore {name or model.cfg.get('name', 'config')}"])
    run_steps(model.config, model.scenario([])["steps"], cov)
    tally.add_to(cov)
    return cov


def of_exploration(model: Any, max_states: int | None = None) -> Coverage:
    """Coverage of an exhaustive local exploration of a bounded model: every transition it takes is counted."""
    from kcm.checkers.explore import bfs

    found = bfs.explore(model, max_states, coverage=True)
    return of_run(model, found.tally)


def of_traces(paths: Iterable[str], rules: str) -> Coverage:
    """Coverage of JSONL traces: the state changes and event types they hold (read as check-trace reads them)."""
    from kcm.checkers.oracle.oracle_trace import parse_line

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
    from kcm.checkers.oracle import statechange_log as scl

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
