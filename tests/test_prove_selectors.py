"""The symbolic selectors choose exactly what the reference selectors choose under some order of the replicas.

The encoding writes the selectors symbolically ("any eligible replica"); Kafka's pick the first eligible one in
AR (or RAR) order. On every concrete AR / ISR / live set of three brokers, the Z3 relation's elections must be
exactly the reference selector's choices over all orders of the replica list, with the same new ISR.
"""

from __future__ import annotations

from itertools import combinations, permutations

import pytest
import z3
from kcm.checkers.prove.encoding import NONE, PARTITION_CODES, REPLICA_CODES, Encoding, State
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import rule_set
from kcm.reference import selectors

N = 3
BROKERS = tuple(range(N))


def _subsets(of: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [c for k in range(len(of) + 1) for c in combinations(of, k)]


def _bits(members: tuple[int, ...]) -> int:
    return sum(1 << b for b in members)


def _concrete(enc: Encoding, s: State, ar, isr, live, leader, rar=()) -> list:
    controller = min(live)
    return [
        s.controller_epoch == 1,
        s.controller == controller,
        s.partition_state == PARTITION_CODES[P.OFFLINE if leader == NONE else P.ONLINE],
        s.leader == leader,
        s.leader_epoch == 1,
        s.isr == _bits(isr),
        s.ar == _bits(ar),
        s.reassigning == bool(rar),
        s.original_replicas == (_bits(tuple(b for b in ar if b not in rar)) if rar else 0),
        s.target_replicas == _bits(rar),
        *[s.alive[b] == (b in live) for b in BROKERS],
        *[s.replica_state[b] == REPLICA_CODES[R.ONLINE if b in ar else R.NON_EXISTENT] for b in BROKERS],
        *[
            z3.And(s.broker_controller_epoch[b] == 1, s.replica_leader[b] == NONE, s.replica_leader_epoch[b] == NONE)
            for b in BROKERS
        ],
    ]


class Elections:
    """One solver holding a selector's election actions; concrete states are pushed and popped."""

    def __init__(self, enc: Encoding, selector: str) -> None:
        self.enc, self.s, self.t = enc, enc.state("s"), enc.state("t")
        prefix = f"ElectLeader(selector={selector},"
        self.solver = z3.Solver()
        self.solver.add(z3.Or([a.formula for a in enc.actions(self.s, self.t) if a.name.startswith(prefix)]))

    def choices(self, *args, **kw) -> set[tuple[int, tuple[int, ...]]]:
        """Every (new leader, new ISR) the relation allows from the concrete state."""
        solver, t = self.solver, self.t
        solver.push()
        solver.add(*_concrete(self.enc, self.s, *args, **kw))
        found = set()
        while solver.check() == z3.sat:
            m = solver.model()
            leader, isr = m.eval(t.leader).as_long(), m.eval(t.isr).as_long()
            found.add((leader, tuple(b for b in BROKERS if isr >> b & 1)))
            solver.add(z3.Not(z3.And(t.leader == leader, t.isr == isr)))
        solver.pop()
        return found


def _ordered(choices) -> set:
    return {c for c in choices if c is not None}


@pytest.mark.parametrize("unclean", [False, True])
def test_offline_selector_agrees(unclean: bool) -> None:
    elections = Elections(Encoding(rule_set("kafka"), N, unclean_leader_election=unclean), "offline")
    for ar in _subsets(BROKERS)[1:]:
        for isr in _subsets(ar):
            for live in _subsets(BROKERS)[1:]:
                expected = _ordered(selectors.offline(order, isr, live, unclean) for order in permutations(ar))
                assert elections.choices(ar, isr, live, NONE) == expected, (ar, isr, live)


def test_preferred_reassigned_and_controlled_shutdown_selectors_agree() -> None:
    enc = Encoding(rule_set("seeds"), N)
    pref_elections, down_elections = Elections(enc, "preferred"), Elections(enc, "controlled_shutdown")
    reassign_elections = Elections(enc, "reassign")
    for ar in _subsets(BROKERS)[1:]:
        for isr in _subsets(ar)[1:]:
            for live in _subsets(BROKERS)[1:]:
                for leader in isr:
                    orders = list(permutations(ar))
                    # The controller skips a preferred election whose choice already leads.
                    pref = {c for c in _ordered(selectors.preferred(o, isr, live) for o in orders) if c[0] != leader}
                    assert pref_elections.choices(ar, isr, live, leader) == pref, (ar, isr, live, leader)
                    down = {
                        c
                        for c in _ordered(selectors.controlled_shutdown(o, isr, live, (leader,)) for o in orders)
                        if c[0] != leader
                    }
                    assert down_elections.choices(ar, isr, live, leader) == down, (ar, isr, live, leader)
    for ar in _subsets(BROKERS)[2:]:
        for rar in _subsets(ar)[1:]:
            isr, live = ar, BROKERS
            expected = _ordered(selectors.reassigned(o, isr, live) for o in permutations(rar))
            assert reassign_elections.choices(ar, isr, live, ar[0], rar) == expected, (ar, rar)
