"""The smallest conformance suite of a config: a few shortest scenarios that together cover what the model reaches.

`generate_suite` explores a config's whole bounded graph once, keeping each state's shortest-path link (the BFS
tree) and every transition's target. Each transition covers items: the partition and replica table edges its step
logged, its operation, the leader selectors the reference ran, the reachability goals (`Some...`) it or its target
reached, and the properties it or its target violated. For every item the first transition that covers it (at the
least depth) gives a candidate: the tree path to that transition's source, then the transition. A greedy set cover
takes candidates by most new items, the deepest first on a tie; a chosen path that is a prefix of another is
dropped. Each violated property gets its own scenario, ending at the violating step with `expect_violation`.

Each scenario is written in the scenario contract with `expect` set to the reference's own result document, and is
run through `kcm run`'s runner before it is written, so every file of the suite passes `kcm run`.

The size is reported against the graph: distinct states, transitions, and the number of maximal paths (of the
whole graph when it has no cycle; otherwise of the BFS DAG, the transitions from one level to the next).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from array import array
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore.tally import selectors_run
from kcm.model import actions as A
from kcm.model.interface import ALWAYS, SOMETIMES, SOMETIMES_STEP, STEP, UNCHANGED
from kcm.reference import selectors

LAST_ONLY = frozenset({"behaviour", "operation_edge"})  # items a path covers only with its last step
_PLURAL = {"operation_edge": "table edges by operation", "selector_branch": "selector branches",
           "no_op": "no-op steps"}
Item = tuple[str, str]  # (kind, name): ("partition_edge", "NewPartition -> OnlinePartition"), ("operation", ...)
KINDS = ("partition_edge", "replica_edge", "operation", "operation_edge", "selector", "selector_branch", "no_op",
         "goal", "violation", "behaviour")
# The whole graph is held in memory (about 0.8 KB a state on `controller`): a larger config is refused, not tried.
MAX_SUITE_STATES = 1_000_000


class SuiteError(Exception):
    """The suite cannot be generated: unknown or bad config, a graph too large, a folder that cannot be written."""


@dataclass
class SuiteReport:
    """What `generate_suite` wrote and how it compares with the graph it covers."""

    config: str
    out_dir: Path
    scenarios: list[Path] = field(default_factory=list)  # the files written, in order
    traces: list[Path] = field(default_factory=list)  # the golden traces written next to them (with traces=True)
    steps: list[int] = field(default_factory=list)  # explored steps of each scenario (its set-up not counted)
    covers: list[list[str]] = field(default_factory=list)  # items each scenario was chosen for
    distinct_states: int = 0
    transitions: int = 0
    depth: int = 0
    cyclic: bool = False
    maximal_paths: int | None = None  # of the whole graph; None when it has cycles (then infinitely many)
    dag_maximal_paths: int = 0  # of the BFS DAG (transitions from one level to the next)
    reachable: dict[str, list[str]] = field(default_factory=dict)  # kind -> every reachable item
    covered: dict[str, list[str]] = field(default_factory=dict)  # kind -> items the suite covers
    table_edges: dict[str, int] = field(default_factory=dict)  # edge kind -> edges the rule set's table allows
    seconds: float = 0.0

    def ratio(self) -> float:
        """Maximal paths (of the whole graph if acyclic, else of the BFS DAG) per scenario of the suite."""
        paths = self.maximal_paths if self.maximal_paths is not None else self.dag_maximal_paths
        return paths / max(1, len(self.scenarios))

    def coverage(self) -> dict[str, dict[str, Any]]:
        """Per kind: how many reachable items, how many covered, and the percentage."""
        out = {}
        for kind in KINDS:
            total, done = len(self.reachable.get(kind, [])), len(self.covered.get(kind, []))
            out[kind] = {"reachable": total, "covered": done, "percent": 100.0 if not total else
                         round(100.0 * done / total, 1)}
            if kind in self.table_edges:
                out[kind]["in_table"] = self.table_edges[kind]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, every reachable item listed with whether the suite covers it."""
        return {
            "config": self.config, "out": str(self.out_dir), "seconds": round(self.seconds, 2),
            "scenarios": [{"file": str(p), "steps": n, "covers": c}
                          for p, n, c in zip(self.scenarios, self.steps, self.covers, strict=True)],
            "traces": [str(p) for p in self.traces],
            "distinct_states": self.distinct_states, "transitions": self.transitions, "depth": self.depth,
            "cyclic": self.cyclic, "maximal_paths": self.maximal_paths,
            "bfs_dag_maximal_paths": self.dag_maximal_paths, "ratio": round(self.ratio(), 1),
            "coverage": self.coverage(),
            "items": {kind: [{"item": name, "covered": name in set(self.covered.get(kind, []))}
                             for name in self.reachable.get(kind, [])] for kind in KINDS},
        }

    def text(self) -> str:
        """The report for people: the suite's size against the graph, then its coverage."""
        paths = (f"maximal paths {self.maximal_paths:,}" if self.maximal_paths is not None else
                 f"maximal paths: infinite (cycles); {self.dag_maximal_paths:,} maximal paths of the BFS DAG "
                 f"(transitions from one level to the next)")
        lines = [f"kcm suite: config {self.config}: {len(self.scenarios)} scenarios ({sum(self.steps)} explored "
                 f"steps) written to {self.out_dir} in {self.seconds:.1f} s",
                 f"  graph: {self.distinct_states:,} distinct states, {self.transitions:,} transitions, "
                 f"depth {self.depth}, {paths}",
                 f"  {self.ratio():,.1f}x fewer scenarios than maximal paths"
                 + (" of the BFS DAG" if self.maximal_paths is None else "")]
        for kind, c in self.coverage().items():
            if kind == "behaviour" and not c["reachable"]:
                continue  # not asked for
            table = f"; the table has {c['in_table']}" if "in_table" in c else ""
            plural = _PLURAL.get(kind, kind.replace("_", " ") + "s")
            lines.append(f"  {plural}: {c['covered']} of {c['reachable']} reachable covered "
                         f"({c['percent']:g}%{table})")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ exploration


def _count(n: int) -> str:
    return "no" if n == 0 else "one" if n == 1 else "several"


def selector_branch(selector: str, ar: Sequence[int], isr: Collection[int], live: Collection[int],
                    shutting_down: Collection[int] = ()) -> str:
    """The class of inputs a leader selector ran on, named by what decides its choice: how many replicas it may
    pick (none, one, several: where first and last differ), and for the offline selector whether a live replica
    outside the ISR is left (which only an unclean election may take), for the preferred one why the first replica
    may or may not lead."""
    if selector == selectors.PREFERRED:
        first = ar[0] if ar else None
        why = ("the preferred replica is down" if first not in live else "the preferred replica is live, in the ISR"
               if first in isr else "the preferred replica is live, out of the ISR")
        return f"{selector}: {why}"
    barred = set(shutting_down)
    eligible = [b for b in ar if b in live and b in isr and b not in barred]
    name = f"{selector}: {_count(len(eligible))} live ISR replica{'s' * (len(eligible) != 1)} to choose from"
    if selector == selectors.OFFLINE and not eligible and any(b in live and b not in isr for b in ar):
        name += ", a live replica outside the ISR"
    return name


@contextlib.contextmanager
def _branches_run(note: Callable[[str], Any]) -> Iterator[None]:
    """Call `note` with the branch (`selector_branch`) of each leader selector the reference runs in the block: a
    probe around the four pure selectors, which get every input the branch is named by."""
    originals = {name: getattr(selectors, name) for name in selectors.NAMES}

    def probe(name: str) -> Callable[..., Any]:
        original = originals[name]

        def run(ar: Sequence[int], isr: Collection[int], live: Collection[int], *more: Any) -> Any:
            shutting = more[0] if name == selectors.CONTROLLED_SHUTDOWN and more else ()
            note(selector_branch(name, ar, isr, live, shutting))
            return original(ar, isr, live, *more)
        return run

    try:
        for name in selectors.NAMES:
            setattr(selectors, name, probe(name))
        yield
    finally:
        for name, original in originals.items():
            setattr(selectors, name, original)


def behaviour(before: Any, action: Any, after: Any, effects: Any, selectors: list[str]) -> str:
    """What one step did, in words that tell steps apart (one scenario per behaviour with `behaviours`): its
    operation, the table moves it logged, the selectors it ran, and what it did to the partitions' znodes, to the
    controller and to the brokers."""
    parts = [action.to_step()["op"]]
    moves = sorted({f"{c.machine[0]}:{c.from_state}->{c.to_state}" for c in effects.state_changes})
    if moves:
        parts.append(" ".join(moves))
    if selectors:
        parts.append("selectors " + ",".join(sorted(set(selectors))))
    old = dict(before.zk.partitions)
    done = set()
    for tp, lai in after.zk.partitions:
        prev = old.get(tp)
        if prev is None or prev == lai:
            continue
        if lai.leader != prev.leader:
            done.add("leader lost" if lai.leader < 0 else "leader elected" if prev.leader < 0 else "leader moved")
        elif lai.leader_epoch != prev.leader_epoch:
            done.add("leader epoch bumped")
        if set(lai.isr) < set(prev.isr):
            done.add("ISR shrank")
        elif set(lai.isr) > set(prev.isr):
            done.add("ISR grew")
        elif set(lai.isr) != set(prev.isr):
            done.add("ISR replaced")
    if after.zk.controller_epoch != before.zk.controller_epoch:
        done.add("controller elected")
    if after.zk.assignments != before.zk.assignments:
        done.add("assignment changed")
    if done:
        parts.append(", ".join(sorted(done)))
    return "; ".join(parts)


class _Successors:
    """Every state's transition targets in one flat array (states are expanded in order): `[s]` is state s's."""

    def __init__(self) -> None:
        self.starts = array("q")
        self.targets = array("i")

    def begin(self) -> None:
        """Start the next state's targets."""
        self.starts.append(len(self.targets))

    def add(self, target: int) -> None:
        """One more transition of the state begun last."""
        self.targets.append(target)

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[array]:
        return (self[s] for s in range(len(self.starts)))

    def __getitem__(self, s: int) -> array:
        end = self.starts[s + 1] if s + 1 < len(self.starts) else len(self.targets)
        return self.targets[self.starts[s]:end]


class _Graph:
    """The whole reachable graph of a bounded model, with each state's BFS-tree link and the items it covers."""

    def __init__(self, model: BoundedSystem, max_states: int, behaviours: bool = False) -> None:
        self.model = model
        self.behaviours = behaviours
        self.ids: dict[Item, int] = {}  # item -> small id
        self.items: list[Item] = []
        # Per state, kept compact (the graph is held whole): machine-int arrays, one shared object per distinct
        # item set (a few dozen on `controller` for tens of thousands of states), successors in one flat array.
        self.parent = array("i")  # BFS tree: the state a state was first reached from (-1: the initial state)
        self.action: list[Any] = []  # ... and the action that reached it (the model's shared action objects)
        self.depth = array("i")
        self.tree_items: list[frozenset[int]] = []  # items of the tree transition into a state
        self._item_sets: dict[frozenset[int], frozenset[int]] = {}
        self.succ = _Successors()  # every transition's target, one entry per transition
        # item -> (source, action, items, target if the transition is the target's tree link else -1), first seen
        self.first: dict[int, tuple[int, Any, frozenset[int], int]] = {}
        self.setup: frozenset[int] = frozenset()
        self.transitions = 0
        self._explore(max_states)

    def _id(self, item: Item) -> int:
        found = self.ids.get(item)
        if found is None:
            found = self.ids[item] = len(self.items)
            self.items.append(item)
        return found

    def _effect_items(self, effects: Any, op: str) -> set[int]:
        """The table edges a step logged, each also with the operation that made it: the same move is a different
        code path in another operation (a replica taken offline by a controlled shutdown, by a failure)."""
        out = set()
        for c in effects.state_changes:
            edge = f"{c.machine[0]}: {c.from_state} -> {c.to_state}"
            out.add(self._id((f"{c.machine}_edge", f"{c.from_state} -> {c.to_state}")))
            out.add(self._id(("operation_edge", f"{op} {edge}")))
        return out

    def _explore(self, max_states: int) -> None:
        from kcm.checkers.explore.coverage import Coverage, run_steps

        model = self.model
        props = model.properties()
        state_props = [p for p in props if p.expectation in (ALWAYS, SOMETIMES)]
        step_props = [p for p in props if p.expectation in (STEP, SOMETIMES_STEP)]
        setup = Coverage(model.config.rules)
        run_steps(model.config, model.scenario([])["steps"], setup)  # the set-up every scenario starts with
        init = model.init_states()[0]
        base = {self._id(("partition_edge", f"{f} -> {t}")) for f, t in setup.partition_edges}
        base |= {self._id(("replica_edge", f"{f} -> {t}")) for f, t in setup.replica_edges}
        base |= {self._id(("operation", op)) for op in setup.operations}
        base |= {self._id(("selector", s)) for s in setup.selectors}
        base |= self._state_items(init, state_props)
        self.setup = frozenset(base)
        index = {model.fingerprint(init): 0}
        states = [init]
        self.parent.append(-1)
        self.action.append(None)
        self.depth.append(0)
        self.tree_items.append(frozenset())
        ran: list[str] = []
        branches: list[str] = []
        # A preferred election that would change nothing is never offered (it is no transition), yet it is a step
        # a controller must get right: its selector runs and must leave the partition be. Tried in every state.
        idle_preferred = A.PreferredElection() if "preferred" in getattr(model, "families", ()) else None
        with selectors_run(ran.append), _branches_run(branches.append):
            pos = 0
            while pos < len(states):
                state, d = states[pos], self.depth[pos]
                self.succ.begin()  # states are expanded in the order they are numbered
                offered = model.actions(state)
                for action in offered:
                    ran.clear()
                    branches.clear()
                    found = model.successor(state, action)
                    if found is None:
                        continue
                    nxt, effects = found
                    self.transitions += 1
                    op = action.to_step()["op"]
                    items = self._effect_items(effects, op)
                    items.add(self._id(("operation", op)))
                    if self.behaviours:
                        items.add(self._id(("behaviour", behaviour(state, action, nxt, effects, ran))))
                    items |= {self._id(("selector", s)) for s in ran}
                    items |= {self._id(("selector_branch", b)) for b in branches}
                    for p in step_props:
                        holds = p.condition(model, state, action, nxt, effects)
                        if p.expectation == STEP and not holds:
                            items.add(self._id(("violation", p.name)))
                        elif p.expectation == SOMETIMES_STEP and holds:
                            items.add(self._id(("goal", p.name)))
                    fp = model.fingerprint(nxt)
                    target = index.get(fp)
                    tree = target is None
                    if target is None:
                        if len(states) >= max_states:
                            raise SuiteError(f"the graph has more than {max_states:,} states (--max-states; the "
                                             "whole graph is held in memory, about 0.8 KB a state)")
                        target = index[fp] = len(states)
                        states.append(nxt)
                        # the target's own items (goals reached and properties violated in it) go with the
                        # transition that first reaches it: the tree transition
                        items |= self._state_items(nxt, state_props)
                        frozen = self._interned(items)
                        self.parent.append(pos)
                        self.action.append(action)
                        self.depth.append(d + 1)
                        self.tree_items.append(frozen)
                    else:
                        frozen = self._interned(items)
                    self.succ.add(target)
                    for item in frozen:
                        if item not in self.first and item not in self.setup:
                            self.first[item] = (pos, action, frozen, target if tree else -1)
                if idle_preferred is not None and not any(type(a) is A.PreferredElection for a in offered):
                    self._no_op(pos, state, idle_preferred, branches)
                states[pos] = None  # a state's successors are known: only its links are kept
                pos += 1

    def _interned(self, items: set[int]) -> frozenset[int]:
        frozen = frozenset(items)
        return self._item_sets.setdefault(frozen, frozen)

    def _no_op(self, pos: int, state: Any, action: Any, branches: list[str]) -> None:
        """Cover a step the explorer does not offer because it changes nothing: its branches and itself (`no_op`),
        as a path's last step (it leads nowhere new). A step the reference refuses is not a no-op."""
        branches.clear()
        kind, _ = self.model.outcome(state, action)
        if kind != UNCHANGED:
            return
        items = frozenset({self._id(("no_op", action.to_step()["op"]))}
                          | {self._id(("selector_branch", b)) for b in branches})
        for item in items:
            if item not in self.first and item not in self.setup:
                self.first[item] = (pos, action, items, -1)

    def _state_items(self, state: Any, props: list[Any]) -> set[int]:
        out = set()
        for p in props:
            holds = p.condition(self.model, state)
            if p.expectation == ALWAYS and not holds:
                out.add(self._id(("violation", p.name)))
            elif p.expectation == SOMETIMES and holds:
                out.add(self._id(("goal", p.name)))
        return out

    # -------------------------------------------------------------------------------------------- paths

    def tree_path(self, state: int) -> list[int]:
        """The states of the BFS tree path to `state`, the initial state excluded."""
        out = []
        while state > 0:
            out.append(state)
            state = self.parent[state]
        return out[::-1]

    def candidate(self, item: int) -> tuple[tuple[Any, ...], frozenset[int], list[Any]]:
        """(path key, items it covers, its actions): the tree path to the item's first transition, then that one."""
        source, action, last, target = self.first[item]
        states = self.tree_path(source)
        covered = set(self.setup) | last
        for s in states:
            covered |= self.tree_items[s]
        # A behaviour, or a table edge of an operation, counts only as the path's last step: a conforming run is
        # compared with the reference's result at its end, and later steps could undo what a wrong step did before
        # it is seen (a broker that a controlled shutdown wrongly kept in the ISR leaves it when it then fails).
        covered -= {i for s in states for i in self.tree_items[s] if self.items[i][0] in LAST_ONLY and i not in last}
        # A path is named by its transitions: a tree link by its target, another transition by its source and step.
        end = target if target >= 0 else ("x", source, json.dumps(action.to_step(), sort_keys=True))
        return tuple(states) + (end,), frozenset(covered), [self.action[s] for s in states] + [action]

    def maximal_paths(self) -> tuple[int | None, int]:
        """(maximal paths of the whole graph or None when it has a cycle, maximal paths of the BFS DAG)."""
        n = len(self.succ)
        dag = [0] * n  # paths from a state to the end of the BFS DAG
        for s in range(n - 1, -1, -1):  # states are numbered in BFS order: deeper ones last
            nxt = [t for t in self.succ[s] if self.depth[t] == self.depth[s] + 1]
            dag[s] = sum(dag[t] for t in nxt) if nxt else 1
        indegree = [0] * n
        for targets in self.succ:
            for t in targets:
                indegree[t] += 1
        order, ready = [], [s for s in range(n) if not indegree[s]]
        while ready:
            s = ready.pop()
            order.append(s)
            for t in self.succ[s]:
                indegree[t] -= 1
                if not indegree[t]:
                    ready.append(t)
        if len(order) < n:
            return None, dag[0]
        whole = [0] * n
        for s in reversed(order):
            whole[s] = sum(whole[t] for t in self.succ[s]) if self.succ[s] else 1
        return whole[0], dag[0]


# ------------------------------------------------------------------------------------------------ the cover


def _choose(graph: _Graph) -> list[tuple[list[Any], frozenset[int], list[Item], str | None]]:
    """The chosen paths: (actions, items covered, items chosen for, violated property to expect or None)."""
    chosen: list[tuple[tuple[Any, ...], list[Any], frozenset[int], list[Item], str | None]] = []
    uncovered = set(graph.first)
    for item in sorted(graph.first, key=lambda i: graph.items[i]):
        kind, name = graph.items[item]
        if kind == "violation":  # one scenario per violated property, ending where it first breaks
            key, covered, actions = graph.candidate(item)
            chosen.append((key, actions, covered, [graph.items[item]], name))
            uncovered -= covered
    candidates: dict[tuple[Any, ...], tuple[frozenset[int], list[Any]]] = {}
    for item in graph.first:
        if graph.items[item][0] != "violation":
            key, covered, actions = graph.candidate(item)
            candidates.setdefault(key, (covered - {i for i in covered if graph.items[i][0] == "violation"},
                                        actions))
    while uncovered:
        key = max(candidates, key=lambda k: (len(candidates[k][0] & uncovered), len(k)))
        covered, actions = candidates.pop(key)
        new = covered & uncovered
        if not new:
            break  # items left are violations only reachable as such (their own scenarios cover them)
        chosen.append((key, actions, covered, sorted(graph.items[i] for i in new), None))
        uncovered -= covered
    # A path that is a prefix of another chosen path covers nothing the longer one does not (a violation's own
    # scenario is kept: it is the one that says where the property breaks).
    longer: dict[int, list[Item]] = {}  # chosen index -> the items of the prefixes it replaces
    dropped = set()
    for i, (key, _, _, why, prop) in enumerate(chosen):
        if prop is not None or any(kind in LAST_ONLY for kind, _ in why):
            continue  # a violation's scenario ends where it breaks; a behaviour's ends with it (see candidate)
        ext = [j for j, (other, *_rest) in enumerate(chosen) if len(other) > len(key) and other[:len(key)] == key]
        if ext:
            dropped.add(i)
            longer.setdefault(max(ext, key=lambda j: len(chosen[j][0])), []).extend(why)
    return [(actions, covered, sorted(set(why) | set(longer.get(i, []))), prop)
            for i, (_, actions, covered, why, prop) in enumerate(chosen) if i not in dropped]


_SLUG = re.compile(r"[^A-Za-z0-9]+")
_OWN_FILE = re.compile(r"[0-9]{3}-[A-Za-z0-9-]+(\.trace\.jsonl|\.json)")  # the names `generate_suite` writes


def _slug(item: Item) -> str:
    kind, name = item
    short = {"partition_edge": "p", "replica_edge": "r", "operation": "op", "operation_edge": "op-edge",
             "selector": "sel", "selector_branch": "branch", "no_op": "noop", "goal": "goal", "violation": "violates",
             "behaviour": "b"}[kind]
    return (short + "-" + _SLUG.sub("-", name.replace(" -> ", "-to-"))).strip("-")[:80]


# ------------------------------------------------------------------------------------------------ writing


def _scenario(model: BoundedSystem, config: str, number: int, actions: list[Any], why: list[Item],
              prop: str | None) -> dict[str, Any]:
    """The scenario document of one chosen path, its `expect` the reference's own result (checked by a run)."""
    from kcm.checkers.core.scenario import InvalidScenario, run, validate

    steps = model.expand(actions)  # the reference's own steps (a reduction may fold some into one)
    doc = model.scenario(steps)
    shown = ", ".join(f"{kind.replace('_', ' ')} {name}" for kind, name in why[:4])
    more = f" and {len(why) - 4} more" if len(why) > 4 else ""
    doc["name"] = f"suite of config {config}, scenario {number}: {shown}{more}"
    if prop is not None:
        doc["expect_violation"] = {"property": prop, "step": len(doc["steps"]) - 1}
    outcome = run(doc)
    doc["expect"] = outcome.result
    try:
        validate(doc)
    except InvalidScenario as err:  # the model wrote a step the contract refuses: a bug of kcm, said plainly
        raise SuiteError(f"scenario {number} is not a valid scenario: {err}") from None
    again = run(doc)
    if again.mismatches:
        raise SuiteError(f"scenario {number} does not pass `kcm run`: {again.mismatches[0]}")
    return doc


def generate_suite(config_name: str, out_dir: Path, traces: bool = False,
                   max_states: int = MAX_SUITE_STATES, behaviours: bool = False) -> SuiteReport:
    """Explore the config's whole graph, choose the covering paths, write each as a scenario under `out_dir`.

    With `behaviours`, every distinct behaviour of a step (`behaviour`: its operation, moves, selectors and what it
    did to the znodes) is an item to cover as well: a larger suite that exercises each kind of step at least once.

    With `traces`, each scenario's golden trace (the reference's own run in the trace format) is written next to it
    as NAME.trace.jsonl. SuiteError on a bad config, a graph larger than `max_states` or an unwritable folder.
    """
    start = time.perf_counter()
    try:
        model = BoundedSystem(load_config(config_name))
    except (BadConfig, ValueError) as err:
        raise SuiteError(str(err)) from None
    name = model.cfg.get("name", config_name)
    graph = _Graph(model, max_states, behaviours)
    chosen = _choose(graph)
    report = SuiteReport(name, Path(out_dir), distinct_states=len(graph.succ), transitions=graph.transitions,
                         depth=max(graph.depth))
    report.maximal_paths, report.dag_maximal_paths = graph.maximal_paths()
    from kcm.checkers.explore.coverage import table_edges
    from kcm.model.tables import rule_set

    table = rule_set(model.config.rules)
    report.table_edges = {f"{m}_edge": len(table_edges(table, m)) for m in ("partition", "replica")}
    report.cyclic = report.maximal_paths is None
    reachable = set(graph.first) | graph.setup
    covered: set[int] = set()
    for _, cov, _, _ in chosen:
        covered |= cov
    for kind in KINDS:
        report.reachable[kind] = sorted(n for i in reachable for k, n in [graph.items[i]] if k == kind)
        report.covered[kind] = sorted(n for i in covered for k, n in [graph.items[i]] if k == kind)
    docs = [_scenario(model, name, n, actions, why, prop) for n, (actions, _, why, prop) in enumerate(chosen, 1)]
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():  # a previous suite's files, which a smaller suite would leave behind
            if _OWN_FILE.fullmatch(old.name) and old.is_file():
                old.unlink()
        for n, (doc, (actions, _, why, _)) in enumerate(zip(docs, chosen, strict=True), 1):
            path = folder / f"{n:03d}-{_slug(why[0])}.json"
            path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            report.scenarios.append(path)
            report.steps.append(len(actions))
            report.covers.append([f"{k}: {v}" for k, v in why])
            if traces:
                from kcm.checkers.oracle.oracle_inputs import scenario_trace

                trace = path.with_suffix(".trace.jsonl")
                trace.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in scenario_trace(doc)),
                                 encoding="utf-8")
                report.traces.append(trace)
    except OSError as err:
        raise SuiteError(f"cannot write {err.filename or folder}: {err.strerror or err}") from None
    report.seconds = time.perf_counter() - start
    return report


__all__ = ["KINDS", "SuiteError", "SuiteReport", "behaviour", "generate_suite"]
