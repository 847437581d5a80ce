"""The multi-process local engine (`kcm explore --workers N`): Stern and Dill's hash-partitioned owner processes.

Each of N worker processes owns the states whose fingerprint is w modulo N, and keeps their fingerprints as its
own resident visited set (a sorted uint64 array). Level by level, in step with the coordinator (this process):

1. every worker expands the frontier states it owns (the step checks run there), and routes each successor to
   its owner, batched per owner and level, already-sent fingerprints left out (they are visited by then);
2. every owner keeps, of the candidates it receives, those it has not visited, each with its least (parent
   position, action position), and runs the state checks on them;
3. the coordinator merges the owners' new fingerprints into the level (fingerprint order: the same positions
   as the single-process engine), records the parent links in its `Visited`, picks each property's least
   witness, and tells each owner the global positions of its new states.

So the counts, the verdicts and every counterexample are the single-process engine's (`checkers/bfs.py` defines
the canonical order). Checkpoints have the single-process format (the coordinator holds the whole visited set):
either engine resumes the other's.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Collection
from typing import Any

import numpy as np
from kcm.checkers.bfs import Progress, ProgressFn, checkpoint_meta, first_frontier, should_stop
from kcm.checkers.checkpoint import Checkpointer, Snapshot
from kcm.checkers.collector import rare_collections
from kcm.checkers.verdicts import Exploration, indexed_successors, state_checks, step_checks
from kcm.checkers.visited import FP, replay
from kcm.model.interface import STATE_KINDS, STEP_KINDS

SENT_CACHE = 1 << 21  # fingerprints a worker remembers having sent (then it forgets them all and starts again)


def _least(best: dict[str, tuple[int, int]], names: list[str], key: tuple[int, int]) -> None:
    for name in names:
        if best.get(name, key) >= key:
            best[name] = key


class _Worker:
    """One owner process's state: its visited fingerprints, its frontier, the candidates of the level in work."""

    def __init__(self, index: int, count: int, model: Any, inbox: Any, peers: list[Any], results: Any) -> None:
        self.index, self.count, self.model = index, count, model
        self.inbox, self.peers, self.results = inbox, peers, results
        self.seen = np.empty(0, dtype=FP)
        self.frontier: list[tuple[int, Any]] = []  # (global position in the level, state)
        self.new: list[Any] = []  # the level's new states, in the order of the fingerprints reported
        self.new_fps = np.empty(0, dtype=FP)
        self.sent: set[int] = set()
        self.buffered: list[tuple] = []
        self.step_props = [p for p in model.properties() if p.expectation in STEP_KINDS]
        self.state_props = [p for p in model.properties() if p.expectation in STATE_KINDS]

    def receive(self, kind: str) -> tuple:
        """The next message of this kind (a peer's batch may arrive before the coordinator's command)."""
        for i, msg in enumerate(self.buffered):
            if msg[0] == kind:
                return self.buffered.pop(i)
        while True:
            msg = self.inbox.get()
            if msg[0] == kind or (kind == "cmd" and msg[0] == "stop"):
                return msg
            self.buffered.append(msg)

    def run(self) -> None:
        """Serve the coordinator's commands until it says stop."""
        with rare_collections():
            while True:
                msg = self.receive("cmd")
                if msg[0] == "stop":
                    return
                _, what, payload = msg
                if what == "init":
                    self.seen, self.frontier = payload
                elif what == "expand":
                    self.results.put(self.expand())
                elif what == "positions":
                    self.frontier = list(zip(payload.tolist(), self.new, strict=True))
                    self.seen = np.sort(np.concatenate([self.seen, self.new_fps]), kind="stable")
                    self.new, self.new_fps = [], np.empty(0, dtype=FP)

    def expand(self) -> tuple:
        """Expand the owned frontier, exchange candidates with the peers, keep the new ones; the level's report."""
        model, count = self.model, self.count
        fingerprint = model.fingerprint
        out: list[dict[int, tuple[int, int, Any]]] = [{} for _ in range(count)]
        step_best: dict[str, tuple[int, int]] = {}
        reached: set[str] = set()
        transitions = 0
        sent = self.sent
        for pos, state in self.frontier:
            for aidx, action, nxt, effects in indexed_successors(model, state):
                transitions += 1
                bad_step, hit = step_checks(model, state, action, nxt, effects, self.step_props)
                if bad_step:
                    _least(step_best, bad_step, (pos, aidx))
                if hit:
                    reached.update(hit)
                fp = fingerprint(nxt)
                if fp in sent:
                    continue
                batch = out[fp % count]
                if fp not in batch:  # positions grow as the frontier is walked: the first link is the least
                    batch[fp] = (pos, aidx, nxt)
        for w in range(count):
            if w != self.index:
                sent.update(out[w])
                self.peers[w].put(("batch", self.index, list(out[w].items())))
        if len(sent) > SENT_CACHE:
            sent.clear()
        candidates = out[self.index]
        for _ in range(count - 1):
            _, _, rows = self.receive("batch")
            for fp, link in rows:
                old = candidates.get(fp)
                if old is None or (old[0], old[1]) > (link[0], link[1]):
                    candidates[fp] = link
        fps = np.fromiter(candidates, dtype=FP, count=len(candidates))
        if self.seen.size and fps.size:
            at = np.searchsorted(self.seen, fps)
            at[at == self.seen.size] = 0
            fps = fps[self.seen[at] != fps]
        fps.sort()
        state_best: dict[str, tuple[int, int]] = {}
        parents = np.empty(fps.size, dtype=np.int64)
        actions = np.empty(fps.size, dtype=np.int64)
        self.new = []
        for i, fp in enumerate(fps.tolist()):
            pos, aidx, state = candidates[fp]
            parents[i], actions[i] = pos, aidx
            self.new.append(state)
            bad, hit = state_checks(model, state, self.state_props)
            if bad:
                _least(state_best, bad, (pos, aidx))
            if hit:
                reached.update(hit)
        self.new_fps = fps
        return self.index, fps, parents, actions, step_best, state_best, reached, transitions


def _serve(index: int, count: int, model: Any, inboxes: list[Any], results: Any) -> None:
    _Worker(index, count, model, inboxes[index], inboxes, results).run()


def explore(model: Any, workers: int, max_states: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Checkpointer | None = None, resume: Snapshot | None = None,
            stop_at: Collection[str] | None = None) -> Exploration:
    """Explore the boundary with `workers` owner processes; the same result as `bfs.explore` (see the module)."""
    ctx = multiprocessing.get_context("fork")  # the workers inherit the model as it is
    inboxes = [ctx.Queue() for _ in range(workers)]
    results = ctx.Queue()
    procs = [ctx.Process(target=_serve, args=(w, workers, model, inboxes, results), daemon=True)
             for w in range(workers)]
    for proc in procs:
        proc.start()
    try:
        return _coordinate(model, workers, inboxes, results, procs, max_states, progress, checkpoint, resume,
                           stop_at)
    finally:
        for box in inboxes:
            box.put(("stop",))
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


def _gather(results: Any, procs: list[Any], workers: int) -> list[tuple]:
    """One report from every worker (RuntimeError if a worker died)."""
    out = []
    while len(out) < workers:
        try:
            out.append(results.get(timeout=5))
        except queue.Empty:  # check that every worker is still there
            dead = [p for p in procs if not p.is_alive()]
            if dead:
                raise RuntimeError(f"worker process {dead[0].pid} died (exit {dead[0].exitcode})") from None
    return sorted(out, key=lambda r: r[0])


def _coordinate(model: Any, workers: int, inboxes: list[Any], results: Any, procs: list[Any],
                max_states: int | None, progress: ProgressFn | None, checkpoint: Checkpointer | None,
                resume: Snapshot | None, stop_at: Collection[str] | None) -> Exploration:
    """The coordinator's level loop (the same bookkeeping as `bfs.search`)."""
    found = Exploration(f"local, {workers} workers")
    start = time.perf_counter()
    props = [p for p in model.properties() if p.expectation in STATE_KINDS]
    visited, frontier_fps, states, witnesses, depth, sizes, expanded, spent = first_frontier(
        model, props, found, resume)
    owner = np.asarray(frontier_fps, dtype=FP) % np.uint64(workers)
    for w in range(workers):
        mine = visited.seen[visited.seen % np.uint64(workers) == np.uint64(w)]
        inboxes[w].put(("cmd", "init", (mine, [(p, s) for p, s in enumerate(states) if owner[p] == w])))
    del states
    frontier = len(frontier_fps)

    def stop_now() -> bool:
        return should_stop(stop_at, witnesses)

    stopped = stop_now()
    while frontier and not stopped:
        if checkpoint is not None and checkpoint.due():
            checkpoint.write(visited, frontier_fps, checkpoint_meta(found, witnesses, depth, sizes, expanded,
                                                                    spent + time.perf_counter() - start))
        level_start = time.perf_counter()
        for box in inboxes:
            box.put(("cmd", "expand", None))
        reports = _gather(results, procs, workers)
        best: dict[str, tuple[int, int]] = {}
        for _, _, _, _, step_best, state_best, reached, transitions in reports:
            found.transitions += transitions
            found.reached.update(reached)
            for table in (step_best, state_best):
                for name, key in table.items():
                    if name not in witnesses:
                        _least(best, [name], key)
        for name, (parent, aidx) in best.items():
            root, steps = visited.path(depth, parent)
            witnesses[name] = (root, steps + [aidx])
        fps = np.concatenate([r[1] for r in reports])
        parents = np.concatenate([r[2] for r in reports])
        actions = np.concatenate([r[3] for r in reports])
        order = np.argsort(fps, kind="stable")
        positions = np.empty(fps.size, dtype=np.int64)
        positions[order] = np.arange(fps.size, dtype=np.int64)
        at = 0
        for (_, part, *_), box in zip(reports, inboxes, strict=True):
            box.put(("cmd", "positions", positions[at:at + part.size]))
            at += part.size
        if fps.size:
            visited.add_level(fps[order], parents[order], actions[order])
        expanded += frontier
        frontier = int(fps.size)
        frontier_fps = fps[order].tolist()
        found.levels.append((frontier, time.perf_counter() - level_start))
        if frontier:
            depth += 1
            sizes.append(frontier)
        if progress is not None:
            seconds = spent + time.perf_counter() - start
            progress(Progress(depth, len(visited), frontier, seconds, len(visited) / seconds if seconds else 0.0,
                              None))
        stopped = stop_now()
        if max_states is not None and len(visited) >= max_states and frontier:
            found.complete = False
            break
    if stopped and frontier:
        found.complete = False
        found.stopped = True
    found.violations = {name: replay(model, root, steps) for name, (root, steps) in sorted(witnesses.items())}
    found.distinct_states = len(visited)
    found.depth = depth
    found.seconds = spent + time.perf_counter() - start
    # The coordinator's visited set plus the workers' resident fingerprints (8 bytes a state).
    found.bytes_per_state = visited.nbytes() / max(1, len(visited)) + FP(0).nbytes
    found.visited = visited
    return found
