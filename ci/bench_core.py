"""Benchmark of the model core: reference next-state calls per second and fingerprints per second.

Three brokers, one topic of one partition with replication factor 3, cycling a few cheap controller
actions (preferred election, controlled shutdown and restart, controller resignation). Prints figures.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from kcm.model.actions import (
    BrokerFail,
    BrokerStart,
    ControlledShutdown,
    ControllerResign,
    CreateTopic,
    PreferredElection,
)
from kcm.model.cluster import ClusterConfig
from kcm.model.fingerprint import fingerprint
from kcm.reference import api

CYCLE = (PreferredElection(), ControlledShutdown(1), BrokerFail(1), BrokerStart(1), PreferredElection(),
         ControllerResign(2), BrokerFail(0), BrokerStart(0), ControllerResign(0))


def states(seconds: float) -> tuple[int, float, list]:
    """Run api.step over the cycle for about `seconds`; the call count, elapsed time and the states seen."""
    config = ClusterConfig((0, 1, 2))
    state, _ = api.start(config)
    state, _ = api.step(config, state, CreateTopic("t", ((0, (0, 1, 2)),)))
    seen = []
    calls = 0
    start = time.perf_counter()
    for action in itertools.cycle(CYCLE):
        state, _ = api.step(config, state, action)
        calls += 1
        if len(seen) < 1000:
            seen.append(state)
        if calls % 100 == 0 and time.perf_counter() - start >= seconds:
            break
    return calls, time.perf_counter() - start, seen


def main(argv: list[str] | None = None) -> int:
    """Measure and print next-state calls/s and fingerprint calls/s."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    args = parser.parse_args(argv)
    calls, elapsed, seen = states(args.seconds)
    print(f"next-state (api.step, 3 brokers, 1 partition RF 3): {calls / elapsed:,.0f} calls/s "
          f"({calls} calls in {elapsed:.2f} s)")
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        for s in seen:
            fingerprint(s)
        n += len(seen)
    elapsed = time.perf_counter() - start
    print(f"fingerprint (xxh64 of pickle 5) of those states: {n / elapsed:,.0f} calls/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
