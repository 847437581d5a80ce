"""Random walks (simulation) for spaces too big to exhaust: seeded, reproducible, every property checked.

Walk i draws from its own generator, seeded from (seed, i), so a run is the same on every machine and a walk's
path does not depend on the others. Each walk starts in an initial state and takes at most `depth` steps, each
chosen uniformly among the enabled successors inside the boundary (the same successors the BFS engines expand);
it stops early in a state with none, or at its first violation. Every state and step check is the BFS's. The
shortest violating walk of each property is shrunk (`checkers.shrink`) before it is reported; the raw length is
kept alongside. A walk run proves nothing: "holds" means that no walk broke the property.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcm.checkers import shrink as shrinking
from kcm.checkers.verdicts import Exploration, state_checks, step_checks, successors

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


def walk(model: Any, walks: int, depth: int, seed: int, shrink: bool = True,
         progress: WalkProgress | None = None) -> WalkExploration:
    """Run `walks` seeded random walks of at most `depth` steps and report verdicts, counts and counterexamples."""
    if walks < 1 or depth < 0:
        raise ValueError(f"walks must be at least 1 and depth at least 0 (got {walks} walks, depth {depth})")
    props = model.properties()
    found = WalkExploration("walk", complete=False, walks=walks, max_depth=depth, seed=seed)
    start_time = last_report = time.perf_counter()
    seen: set[int] = set()
    inits = list(model.init_states())
    raw: dict[str, tuple[list[Any], Any]] = {}  # property -> (shortest violating walk, its initial state)

    def record(names: list[str], trace: list[Any], start: Any) -> None:
        for name in names:
            if name not in raw or len(trace) < len(raw[name][0]):
                raw[name] = (list(trace), start)

    for i in range(walks):
        rng = walk_rng(seed, i)
        start = state = inits[rng.randrange(len(inits))]
        seen.add(model.fingerprint(state))
        bad, reached = state_checks(model, state, props)
        found.reached.update(reached)
        record(bad, [], start)
        trace: list[Any] = []
        while not bad and len(trace) < depth:
            options = successors(model, state)
            if not options:
                break
            action, nxt, effects = options[rng.randrange(len(options))]
            found.transitions += 1
            bad_step, reached_step = step_checks(model, state, action, nxt, effects, props)
            trace.append(action)
            state = nxt
            seen.add(model.fingerprint(state))
            bad, reached = state_checks(model, state, props)
            found.reached.update(reached_step, reached)
            bad = bad_step + bad
            record(bad, trace, start)
        found.depth = max(found.depth, len(trace))
        now = time.perf_counter()
        if progress and (now - last_report >= 1.0 or i + 1 == walks):
            last_report = now
            progress(i + 1, len(seen), now - start_time)
    for name, (trace, start) in sorted(raw.items()):
        found.raw_lengths[name] = len(trace)
        found.violations[name] = shrinking.shrink(model, trace, name, start) if shrink else trace
    found.distinct_states = len(seen)
    found.seconds = time.perf_counter() - start_time
    return found


def render(summary: dict[str, Any]) -> str:
    """The people's summary of a walk run (the JSON of `WalkExploration.to_json` plus the config name)."""
    w = summary["walks"]
    rate = summary["states_per_second"] or 0
    lines = [f"kcm explore: config {summary['config']}, {w['walks']:,} random walks of at most {w['depth']} steps, "
             f"seed {w['seed']}",
             f"  distinct states seen {summary['distinct_states']:,}, transitions {summary['transitions']:,}, "
             f"longest walk {summary['depth']}, {summary['seconds']} s, {rate:,} distinct states/s",
             "  properties (a walk run proves nothing: 'holds' means no walk broke it):"]
    lines += [f"    {name:34} {verdict}" for name, verdict in summary["verdicts"].items()]
    for name, cex in summary["counterexamples"].items():
        lines.append(f"  counterexample to {name}: a walk of {cex['raw_length']} steps, shrunk to {cex['length']} "
                     "(after set-up), as a `kcm run` scenario:")
        lines += [f"    {i:2}. {json.dumps(step)}" for i, step in enumerate(cex["scenario"]["steps"])]
    return "\n".join(lines)


__all__ = ["WalkExploration", "render", "walk", "walk_rng"]
