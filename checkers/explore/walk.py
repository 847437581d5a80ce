"""Random walks (simulation) for spaces too big to exhaust: seeded, reproducible, every property checked.

Walk i draws from its own generator, seeded from (seed, i), so a run is the same on every machine and a walk's
path does not depend on the others. Each walk starts in an initial state and takes at most `depth` steps, each
chosen uniformly among the enabled successors inside the boundary (the same successors the BFS engines expand);
it stops early in a state with none, or at its first violation. Every state and step check is the BFS's. The
shortest violating walk of each property is shrunk (`checkers.shrink`) before it is reported; the raw length is
kept alongside. A walk run proves nothing: its verdicts say "not violated within N states", never "holds".
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kcm.checkers.explore import shrink as shrinking
from kcm.checkers.explore.verdicts import Exploration, state_checks, step_checks, successors

WalkProgress = Callable[[int, int, float], None]  # (walks done, distinct states, seconds)


@dataclass
class WalkExploration(Exploration):
    """What a random-walk run found: an Exploration plus the walk parameters and each raw counterexample length."""

    walks: int = 0
    max_depth: int = 0
    seed: int = 0
    raw_lengths: dict[str, int] = field(default_factory=dict)  # property -> length of the walk that broke it

    def to_json(self, model: Any) -> dict[str, Any]:
        """The machine-readable summary, with the walk parameters and raw and shrunk counterexample lengths."""
        out = super().to_json(model)
        out["walks"] = {"walks": self.walks, "depth": self.max_depth, "seed": self.seed}
        for name, cex in out["counterexamples"].items():
            cex["raw_length"] = self.raw_lengths.get(name, cex["length"])
        return out


def walk_rng(seed: int, index: int) -> random.Random:
    """The generator of walk `index` of a run seeded with `seed` (string seeds hash the same in every process)."""
    return random.Random(f"kcm-walk:{seed}:{index}")


@dataclass
class WalkBatch:
    """What a batch of walks found; batches run anywhere (this process, Spark workers) and merge in any order."""

    seen: set[int] = field(default_factory=set)
    transitions: int = 0
    depth: int = 0
    reached: set[str] = field(default_factory=set)
    # property -> (length, walk index, initial-state position, actions) of its shortest violating walk
    raw: dict[str, tuple[int, int, int, list[Any]]] = field(default_factory=dict)

    def merge(self, other: WalkBatch) -> WalkBatch:
        """Fold another batch into this one; the shortest walk wins, ties to the lowest walk index."""
        self.seen |= other.seen
        self.transitions += other.transitions
        self.depth = max(self.depth, other.depth)
        self.reached |= other.reached
        for name, entry in other.raw.items():
            if name not in self.raw or entry[:2] < self.raw[name][:2]:
                self.raw[name] = entry
        return self


def run_walks(model: Any, indices: Iterable[int], depth: int, seed: int,
              done: Callable[[int, int], None] | None = None) -> WalkBatch:
    """Run the walks numbered `indices` of a run seeded with `seed`; `done(walks, states)` after each one."""
    props = model.properties()
    batch = WalkBatch()
    inits = list(model.init_states())
    count = 0
    for i in indices:
        rng = walk_rng(seed, i)
        root = rng.randrange(len(inits))
        state = inits[root]
        batch.seen.add(model.fingerprint(state))
        bad, reached = state_checks(model, state, props)
        batch.reached.update(reached)
        trace: list[Any] = []
        _record(batch, bad, trace, i, root)
        while not bad and len(trace) < depth:
            options = successors(model, state)
            if not options:
                break
            action, nxt, effects = options[rng.randrange(len(options))]
            batch.transitions += 1
            bad_step, reached_step = step_checks(model, state, action, nxt, effects, props)
            trace.append(action)
            state = nxt
            batch.seen.add(model.fingerprint(state))
            bad, reached = state_checks(model, state, props)
            batch.reached.update(reached_step, reached)
            bad = bad_step + bad
            _record(batch, bad, trace, i, root)
        batch.depth = max(batch.depth, len(trace))
        count += 1
        if done is not None:
            done(count, len(batch.seen))
    return batch


def _record(batch: WalkBatch, names: list[str], trace: list[Any], index: int, root: int) -> None:
    for name in names:
        if name not in batch.raw or (len(trace), index) < batch.raw[name][:2]:
            batch.raw[name] = (len(trace), index, root, list(trace))


def check_walk_numbers(walks: int, depth: int) -> None:
    """Refuse a walk run that cannot be: ValueError names the numbers."""
    if walks < 1 or depth < 0:
        raise ValueError(f"walks must be at least 1 and depth at least 0 (got {walks} walks, depth {depth})")


def report(model: Any, batch: WalkBatch, walks: int, depth: int, seed: int, seconds: float, engine: str = "walk",
           shrink: bool = True) -> WalkExploration:
    """The run's verdicts from its merged batches: each property's shortest walk, shrunk unless told not to."""
    found = WalkExploration(engine, complete=False, walks=walks, max_depth=depth, seed=seed)
    found.transitions, found.depth, found.reached = batch.transitions, batch.depth, set(batch.reached)
    inits = list(model.init_states())
    for name, (length, _, root, trace) in sorted(batch.raw.items()):
        found.raw_lengths[name] = length
        found.violations[name] = shrinking.shrink(model, trace, name, inits[root]) if shrink else trace
    found.distinct_states = len(batch.seen)
    found.seconds = seconds
    return found


def walk(model: Any, walks: int, depth: int, seed: int, shrink: bool = True,
         progress: WalkProgress | None = None) -> WalkExploration:
    """Run `walks` seeded random walks of at most `depth` steps and report verdicts, counts and counterexamples."""
    check_walk_numbers(walks, depth)
    start = last = time.perf_counter()

    def done(count: int, states: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if progress and (now - last >= 1.0 or count == walks):
            last = now
            progress(count, states, now - start)

    batch = run_walks(model, range(walks), depth, seed, done)
    return report(model, batch, walks, depth, seed, time.perf_counter() - start, shrink=shrink)


def render(summary: dict[str, Any]) -> str:
    """The people's summary of a walk run (the JSON of `WalkExploration.to_json` plus the config name)."""
    w = summary["walks"]
    rate = summary["states_per_second"] or 0
    lines = [f"kcm explore: config {summary['config']}, {w['walks']:,} random walks of at most {w['depth']} steps, "
             f"seed {w['seed']}",
             f"  distinct states seen {summary['distinct_states']:,}, transitions {summary['transitions']:,}, "
             f"longest walk {summary['depth']}, {summary['seconds']} s, {rate:,} distinct states/s",
             "  properties (a walk run proves nothing: no walk broke those 'not violated'):"]
    lines += [f"    {name:34} {verdict}" for name, verdict in summary["verdicts"].items()]
    for name, cex in summary["counterexamples"].items():
        lines.append(f"  counterexample to {name}: a walk of {cex['raw_length']} steps, shrunk to {cex['length']} "
                     "(after set-up), as a `kcm run` scenario:")
        lines += [f"    {i:2}. {json.dumps(step)}" for i, step in enumerate(cex["scenario"]["steps"])]
        if "error" in cex["evidence"]:  # a user's predicate that failed at the end of the walk
            lines += [f"    the predicate of {name} failed there, with:"]
            lines += ["    | " + line for line in cex["evidence"]["error"].splitlines()]
    return "\n".join(lines)


__all__ = ["WalkBatch", "WalkExploration", "render", "report", "run_walks", "walk", "walk_rng"]
