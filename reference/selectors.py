"""The four leader selectors of seed 000 (Kafka's PartitionLeaderElectionAlgorithms), as pure functions.

Each returns (leader, new ISR) or None when no replica is eligible.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

Choice = tuple[int, tuple[int, ...]] | None

OFFLINE = "offline"
REASSIGNED = "reassigned"
PREFERRED = "preferred"
CONTROLLED_SHUTDOWN = "controlled_shutdown"
NAMES = (OFFLINE, REASSIGNED, PREFERRED, CONTROLLED_SHUTDOWN)


def offline(ar: Sequence[int], isr: Collection[int], live: Collection[int], unclean: bool) -> Choice:
    """First live AR replica in the ISR (ISR := live ISR); else, if unclean, first live AR replica (ISR := [it])."""
    for b in ar:
        if b in live and b in isr:
            return b, tuple(sorted([r for r in isr if r in live]))
    if unclean:
        for b in ar:
            if b in live:
                return b, (b,)
    return None


def reassigned(rar: Sequence[int], isr: Collection[int], live: Collection[int]) -> Choice:
    """First RAR replica that is live and in the ISR; the ISR is kept."""
    for b in rar:
        if b in live and b in isr:
            return b, tuple(sorted(isr))
    return None


def preferred(ar: Sequence[int], isr: Collection[int], live: Collection[int]) -> Choice:
    """The first AR replica if it is live and in the ISR; the ISR is kept."""
    if ar and ar[0] in live and ar[0] in isr:
        return ar[0], tuple(sorted(isr))
    return None


def controlled_shutdown(ar: Sequence[int], isr: Collection[int], live: Collection[int],
                        shutting_down: Collection[int]) -> Choice:
    """First AR replica in the ISR, live and not shutting down; the ISR loses the shutting-down brokers."""
    for b in ar:
        if b in isr and b in live and b not in shutting_down:
            return b, tuple(sorted([r for r in isr if r not in shutting_down]))
    return None
