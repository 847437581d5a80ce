"""Benchmark of the explorer's hot path on one bounded config: next states, fingerprints, property checks.

Collects the first states of a breadth-first walk of the config, then times, over that fixed sample, every
enabled action's next state (`model.step`, and `model.successor` as the explorer calls it), the fingerprint of
every state, and every state and step property; finally the whole local exploration. Prints the current figures
only.

    python ci/bench_hotpath.py [--config default] [--sample 3000] [--seconds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore.bfs import explore
from kcm.checkers.explore.verdicts import state_checks, step_checks, successors
from kcm.model.canonical import relative_zk_versions
from kcm.model.errors import KcmError
from kcm.model.fingerprint import fingerprint


def sample_states(model: BoundedSystem, n: int) -> list[Any]:
    """The first n distinct states of a breadth-first walk (by fingerprint), in visiting order."""
    seen: set[int] = set()
    out: list[Any] = []
    frontier = []
    for s in model.init_states():
        seen.add(model.fingerprint(s))
        out.append(s)
        frontier.append(s)
    while frontier and len(out) < n:
        nxt = []
        for s in frontier:
            for _action, t, _effects in successors(model, s):
                fp = model.fingerprint(t)
                if fp not in seen:
                    seen.add(fp)
                    out.append(t)
                    nxt.append(t)
        frontier = nxt
    return out[:n]


def rate(work: Any, seconds: float) -> tuple[float, int]:
    """Repeat work() (which returns how many items it did) for about `seconds`; items per second and items."""
    done = 0
    start = time.perf_counter()
    while True:
        done += work()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed, done


def main(argv: list[str] | None = None) -> int:
    """Measure and print steps/s, fingerprints/s, property checks/s and exploration states/s."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="default", help="a config name from specs/configs/ or a path")
    parser.add_argument("--sample", type=int, default=3000, help="states in the timed sample (default 3000)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    parser.add_argument("--no-explore", action="store_true", help="skip the whole exploration")
    args = parser.parse_args(argv)
    try:
        model = BoundedSystem(load_config(args.config))
    except BadConfig as err:
        print(f"bench_hotpath: {err}", file=sys.stderr)
        return 2
    states = sample_states(model, args.sample)
    pairs = [(s, a) for s in states for a in model.actions(s)]

    def steps() -> int:
        for s, a in pairs:
            try:
                model.step(s, a)
            except KcmError:
                pass
        return len(pairs)

    def explorer_steps() -> int:
        for s, a in pairs:
            model.successor(s, a)
        return len(pairs)

    transitions = [(s, a, t, e) for s in states for a, t, e in successors(model, s)]

    def fingerprints() -> int:
        # As in a search: each successor is fingerprinted once, after its parent; the part memo starts empty.
        model.part_fingerprints.clear()
        for s in states:
            model.fingerprint(s)
        for _s, _a, t, _e in transitions:
            model.fingerprint(t)
        return len(states) + len(transitions)

    def whole_state_fingerprints() -> int:
        # The same states, each pickled whole (what a fingerprint cost before parts were memoized).
        canonical = relative_zk_versions if "data_plane" in model.families else (lambda s: s)
        for s in states:
            fingerprint(canonical(s))
        for _s, _a, t, _e in transitions:
            fingerprint(canonical(t))
        return len(states) + len(transitions)
    props = model.properties()

    def checks() -> int:
        for s in states:
            state_checks(model, s, props)
        for s, a, t, e in transitions:
            step_checks(model, s, a, t, e, props)
        return len(states) + len(transitions)

    print(f"config {args.config}: sample of {len(states)} states, {len(pairs)} (state, action) pairs, "
          f"{len(transitions)} transitions")
    per_s, n = rate(steps, args.seconds)
    print(f"  next state (model.step):       {per_s:>10,.0f} steps/s ({n} steps)")
    per_s, n = rate(explorer_steps, args.seconds)
    print(f"  explorer step (model.successor): {per_s:>8,.0f} steps/s ({n} steps; stops at the epoch bounds)")
    per_s, n = rate(fingerprints, args.seconds)
    print(f"  fingerprint (model.fingerprint): {per_s:>8,.0f} fingerprints/s ({n} fingerprints)")
    per_s, n = rate(whole_state_fingerprints, args.seconds)
    print(f"  fingerprint of the whole state:  {per_s:>8,.0f} fingerprints/s (pickled whole, for comparison)")
    per_s, n = rate(checks, args.seconds)
    print(f"  properties (state + step):     {per_s:>10,.0f} checks/s ({len(props)} properties each)")
    if not args.no_explore:
        found = explore(model)
        print(f"  explore (local engine):        {found.distinct_states / found.seconds:>10,.0f} states/s "
              f"({found.distinct_states} states, {found.transitions} transitions, depth {found.depth}, "
              f"{found.seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
