"""EVENTUALLY properties under weak fairness, judged on the explored graph, with lasso counterexamples.

A property's condition names the *settled* states. It is violated when some run can stay unsettled forever
although every fair action (`model.fair`, e.g. follower fetches and request deliveries) that stays enabled is
eventually taken. On a finite graph that happens in exactly two ways:
- a reachable unsettled state where no fair action is enabled: the run may stop there (nothing forces a step);
- a reachable strongly connected set C of unsettled states where every fair action enabled in all of C labels
  an edge inside C: a run can cycle through C forever and still be fair (Emerson and Lei's check for weak
  fairness; an action disabled somewhere in C is excused by a run that passes there).
A fair action whose step leads past the bounds counts as enabled and leaving C: what follows is not explored,
so no violation is claimed through it. The counterexample is a lasso: the shortest path to the loop's entry,
then a loop that takes every fair action C needs.

Liveness needs the whole graph (every edge, not only the BFS tree), so it is a separate pass that keeps it; it
runs only for properties a configuration names.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from kcm.checkers.explore.collector import rare_collections
from kcm.model.interface import EVENTUALLY, NEXT, OUTSIDE, Property


def eventually_properties(model: Any) -> list[Property]:
    """The model's EVENTUALLY properties."""
    return [p for p in model.properties() if p.expectation == EVENTUALLY]


@dataclass
class Graph:
    """The explored graph: per state its BFS parent, its fair actions enabled, and its edges."""

    parent: list[tuple[int, Any] | None] = field(default_factory=list)  # (parent index, action); None: initial
    depth: list[int] = field(default_factory=list)
    fair_enabled: list[frozenset] = field(default_factory=list)  # labels of fair actions enabled (next or outside)
    edges: list[list[tuple[int, Any]]] = field(default_factory=list)  # (successor index, action)
    unsettled: dict[str, list[bool]] = field(default_factory=dict)  # property -> per state


def _label(action: Any) -> tuple:
    # NamedTuple actions of different types can be equal as tuples: the type is part of the label.
    return (type(action), action)


def build_graph(model: Any, props: list[Property], max_states: int | None = None) -> Graph | None:
    """Explore every reachable state keeping every edge; None when more than max_states are reachable."""
    outcome, fair = model.outcome, model.fair
    graph = Graph(unsettled={p.name: [] for p in props})
    index: dict[int, int] = {}
    queue: deque[tuple[int, Any]] = deque()

    def add(state: Any, parent: tuple[int, Any] | None, depth: int) -> int:
        fp = model.fingerprint(state)
        at = index.get(fp)
        if at is not None:
            return at
        at = index[fp] = len(graph.parent)
        graph.parent.append(parent)
        graph.depth.append(depth)
        graph.fair_enabled.append(frozenset())
        graph.edges.append([])
        for p in props:
            graph.unsettled[p.name].append(not p.condition(model, state))
        queue.append((at, state))
        return at

    for s in model.init_states():
        add(s, None, 0)
    while queue:
        if max_states is not None and len(graph.parent) > max_states:
            return None
        at, state = queue.popleft()
        enabled = set()
        for action in model.actions(state):
            kind, found = outcome(state, action)
            if kind in (NEXT, OUTSIDE) and fair(action):
                enabled.add(_label(action))
            if kind == NEXT:
                graph.edges[at].append((add(found[0], (at, action), graph.depth[at] + 1), action))
        graph.fair_enabled[at] = frozenset(enabled)
    return graph


def sccs(nodes: list[Hashable], succ: dict[Hashable, list[Hashable]]) -> list[list[Hashable]]:
    """Strongly connected components of the graph on `nodes` (Tarjan's algorithm, iterative).

    `succ` must name every node reachable from `nodes`, with its successors.
    """
    low: dict[Hashable, int] = {}
    num: dict[Hashable, int] = {}
    on_stack: set[Hashable] = set()
    stack: list[Hashable] = []
    out: list[list[Hashable]] = []
    counter = 0
    for root in nodes:
        if root in num:
            continue
        work = [(root, iter(succ[root]))]
        num[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in num:
                    num[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on_stack:
                    low[v] = min(low[v], num[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == num[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _stem(graph: Graph, at: int) -> list[Any]:
    """The actions of the BFS path from an initial state to state `at` (a shortest path)."""
    out = []
    while graph.parent[at] is not None:
        at, action = graph.parent[at]  # type: ignore[misc]
        out.append(action)
    return out[::-1]


def _path_within(graph: Graph, comp: set[int], start: int, goal: Any) -> tuple[list[Any], int]:
    """Shortest path inside comp from start through an edge accepted by goal(src, dst, action): (actions, end)."""
    seen = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w, action in graph.edges[v]:
            if w not in comp:
                continue
            if goal(v, w, action):
                steps = [action]
                u = v
                while seen[u] is not None:
                    u, a = seen[u]
                    steps.append(a)
                return steps[::-1], w
            if w not in seen:
                seen[w] = (v, action)
                queue.append(w)
    raise AssertionError("no such path inside a strongly connected component")


def _loop(graph: Graph, comp: set[int], entry: int, needed: set) -> list[Any]:
    """A cycle from entry back to entry inside comp that takes an edge of every needed fair label."""
    steps: list[Any] = []
    at = entry
    for label in sorted(needed, key=repr):
        part, at = _path_within(graph, comp, at, lambda v, w, a, label=label: _label(a) == label)
        steps += part
    if at != entry or not steps:
        part, at = _path_within(graph, comp, at, lambda v, w, a: w == entry)
        steps += part
    return steps


def judge(graph: Graph, name: str) -> tuple[list[Any], int] | None:
    """The shortest-stem lasso (actions, loop start) violating the property, or None when it holds."""
    unsettled = graph.unsettled[name]
    best: tuple[int, list[Any], int] | None = None  # (stem length, actions, loop start)
    nodes = [i for i, u in enumerate(unsettled) if u]
    for v in nodes:
        if not graph.fair_enabled[v] and (best is None or graph.depth[v] < best[0]):
            stem = _stem(graph, v)
            best = (len(stem), stem, len(stem))  # stops here: the loop is empty (the run stutters)
    succ = {v: [w for w, _ in graph.edges[v] if unsettled[w]] for v in nodes}
    for comp in sccs(nodes, succ):
        if len(comp) < 2:
            continue  # no-op steps are not edges, so a single state is no cycle
        members = set(comp)
        inside = {_label(a) for v in comp for w, a in graph.edges[v] if w in members}
        always = frozenset.intersection(*(graph.fair_enabled[v] for v in comp))
        if not always <= inside:
            continue  # a fair action enabled throughout C is never taken inside it: no fair run stays in C
        entry = min(comp, key=lambda v: graph.depth[v])
        if best is not None and graph.depth[entry] >= best[0]:
            continue
        stem = _stem(graph, entry)
        best = (len(stem), stem + _loop(graph, members, entry, set(always)), len(stem))
    return None if best is None else (best[1], best[2])


def add_verdicts(found: Any, model: Any, max_states: int | None = None) -> None:
    """Judge the model's EVENTUALLY properties and record them in an Exploration (violations, loop starts)."""
    props = eventually_properties(model)
    if not props:
        return
    if not found.complete:
        return  # a partial graph cannot show that every run settles: the verdicts stay "not judged"
    with rare_collections():
        graph = build_graph(model, props, max_states)
    if graph is None:
        return
    for p in props:
        lasso = judge(graph, p.name)
        if lasso is not None:
            found.violations[p.name], found.loops[p.name] = lasso
        found.judged.add(p.name)
