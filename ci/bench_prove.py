"""Benchmark of `kcm prove`: solver time of each induction proof per rule set and cluster size, and BMC per depth.

Prints figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import time

from kcm.checkers.prove.encoding import Encoding
from kcm.checkers.prove.invariants import INVARIANTS, invariant
from kcm.checkers.prove.proofs import bmc, prove
from kcm.model.tables import rule_set


def main() -> int:
    """Time every proof for 3 and 5 brokers under both rule sets, then BMC of one invariant per depth."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--brokers", type=int, nargs="+", default=[3, 5])
    p.add_argument("--bmc-depth", type=int, default=6)
    p.add_argument("--bmc-brokers", type=int, default=2)
    args = p.parse_args()
    for rules in ("seeds", "kafka"):
        for n in args.brokers:
            enc = Encoding(rule_set(rules), n)
            start = time.perf_counter()
            times = {inv.name: prove(enc, inv).seconds for inv in INVARIANTS}
            total = time.perf_counter() - start
            cells = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in times.items())
            print(f"induction rules={rules} brokers={n}: total {total:.2f} s; {cells}")
    enc = Encoding(rule_set("seeds"), args.bmc_brokers)
    for depth in range(1, args.bmc_depth + 1):
        r = bmc(enc, invariant("OneLiveLeaderPerEpoch"), depth)
        print(f"bmc OneLiveLeaderPerEpoch brokers={args.bmc_brokers} depth={depth}: {r.verdict}, {r.seconds:.2f} s")
    for bug, switch in (
        ("no-leader-epoch-bump", "bump_epoch_on_election"),
        ("no-controller-epoch-check", "brokers_check_controller_epoch"),
    ):
        name = "OneLiveLeaderPerEpoch" if switch == "bump_epoch_on_election" else "ControllerEpochMonotone"
        enc = Encoding(rule_set("seeds"), 3, **{switch: False})
        r = prove(enc, invariant(name), trace_depth=7)
        steps = len(r.counterexample.actions) if r.counterexample and r.counterexample.actions else 0
        print(f"bug {bug}: {name} {r.verdict} (trace of {steps} steps) in {r.seconds:.2f} s, brokers=3")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
