"""Each property's Z3 formula, written once over the shared symbolic view (vocabulary.Sym), keyed by its id.

The induction (invariants.py) and bounded model checking (bounded_bmc.py) take their formulas from here by
property id; neither writes a property again. A state formula reads one Sym, a step formula reads two and the
step's record (vocabulary.Step: its logged moves and LeaderAndIsr deliveries), a goal reads one Sym.
tests/test_catalogue_induction.py and tests/test_catalogue_bmc.py evaluate them against the Python predicates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3
from kcm.checkers.prove.vocabulary import (
    NONE,
    PARTITION_CODES,
    REPLICA_CODES,
    Step,
    Sym,
    partition_allows,
    replica_allows,
)
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R

StateFormula = Callable[[Sym], Any]
StepFormula = Callable[[Sym, Sym, Step], Any]


def leader_in_isr_in_ar(s: Sym) -> Any:
    """LeaderInIsrInAr: no leader or one in the ISR, and the ISR within AR except a leaderless one-member ISR."""
    # Kafka's exception (see the predicate): a leaderless partition's one ISR member may have left AR, dropped by a
    # replaced reassignment while the controller never empties the ISR.
    leader_in_isr = z3.Or(s.leader == NONE, s.has_id(s.isr, s.leader))
    return z3.And(leader_in_isr, z3.Or(s.subset(s.isr, s.ar), z3.And(s.leader == NONE, s.single(s.isr))))


def elected_leader_recorded(s: Sym) -> Any:
    """ElectedLeaderRecorded: the znode's leader is the one the ghost recorded for its leader epoch (if any)."""
    recorded = s.elected_at(s.leader_epoch)
    return z3.Implies(s.leader != NONE, z3.Or(recorded == NONE, recorded == s.leader))


def one_live_leader_per_epoch(s: Sym) -> Any:
    """OneLiveLeaderPerEpoch: no two live brokers act as leader with the same leader epoch."""
    n = len(s.ids)
    return z3.And([
        z3.Not(z3.And(s.leads(i), s.leads(j), s.replica_leader_epoch[i] == s.replica_leader_epoch[j]))
        for i in range(n) for j in range(i + 1, n)
    ])


def no_broker_ahead_of_zk(s: Sym) -> Any:
    """NoBrokerAheadOfZk: no broker accepted a controller epoch /controller_epoch never reached."""
    return z3.And([x <= s.controller_epoch for x in s.broker_controller_epoch])


def reassignment_ar_is_union(s: Sym) -> Any:
    """ReassignmentArIsUnion: during a reassignment AR = OAR + RAR, otherwise OAR = RAR = {}."""
    return z3.If(s.reassigning, s.ar == s.original_replicas | s.target_replicas,
                 z3.And(s.original_replicas == s.empty(), s.target_replicas == s.empty()))


def deletion_states_only_while_deleting(s: Sym) -> Any:
    """DeletionStatesOnlyWhileDeleting, for a view that queues no topic for deletion: no replica in a deletion state."""
    return z3.And([z3.And([x != REPLICA_CODES[d] for d in R.DELETION]) for x in s.replica_state])


def controller_epoch_monotone(s: Sym, t: Sym, step: Step) -> Any:
    """ControllerEpochMonotone: /controller_epoch never decreases, nor a live broker's accepted controller epoch."""
    # A broker that restarts may start over (Kafka keeps the epoch in memory); an encoding that keeps it across a
    # restart never lowers it, so there the guard changes nothing.
    brokers = [z3.Implies(z3.And(a, b), y >= x) for a, b, x, y in
               zip(s.alive, t.alive, s.broker_controller_epoch, t.broker_controller_epoch, strict=True)]
    return z3.And(t.controller_epoch >= s.controller_epoch, *brokers)


def one_leader_per_epoch(s: Sym, t: Sym, step: Step) -> Any:
    """OneLeaderPerEpoch: a leader epoch given to a leader is never given to another (a tuple ghost only)."""
    return z3.And([z3.Implies(a != NONE, b == a) for a, b in zip(s.elected, t.elected, strict=True)])


def leader_epoch_monotone(s: Sym, t: Sym, step: Step) -> Any:
    """LeaderEpochMonotone: the znode's leader epoch never decreases."""
    return t.leader_epoch >= s.leader_epoch


def epoch_fencing(s: Sym, t: Sym, step: Step) -> Any:
    """EpochFencing: no broker applies a LeaderAndIsr older than the controller epoch it has accepted."""
    return z3.And([z3.Implies(d.applied, d.sender_epoch >= d.broker_epoch) for d in step.deliveries])


def valid_transition(s: Sym, t: Sym, step: Step) -> Any:
    """ValidTransition: every partition and replica state-machine move of the step is a move of the table."""
    allows = {"partition": partition_allows, "replica": replica_allows}
    return z3.And([z3.Implies(m.guard, allows[m.machine](step.rules, m.from_code, m.to)) for m in step.moves])


def ar_shrinks_last(s: Sym, t: Sym, step: Step) -> Any:
    """ArShrinksLast: an original replica leaves AR only in a reassignment's last step (or on deletion); one only
    in an abandoned target leaves it when the reassignment is replaced."""
    lost = s.ar & ~t.ar
    original = z3.If(s.reassigning, s.original_replicas, s.ar)
    deleted = t.partition_state == PARTITION_CODES[P.NON_EXISTENT]
    last_step = z3.And(s.reassigning, z3.Not(t.reassigning), t.ar == s.target_replicas,
                       s.subset(s.target_replicas, t.isr))
    replaced = z3.And(s.reassigning,
                      t.ar == s.original_replicas | z3.If(t.reassigning, t.target_replicas, s.original_replicas),
                      z3.If(t.reassigning, t.original_replicas == s.original_replicas, z3.BoolVal(True)))
    return z3.And(
        z3.Implies(z3.And(lost & original != s.empty(), z3.Not(deleted)), last_step),
        z3.Implies(z3.And(lost != s.empty(), lost & original == s.empty(), z3.Not(deleted)),
                   z3.Or(last_step, replaced)),
    )


STATE: dict[str, StateFormula] = {
    "LeaderInIsrInAr": leader_in_isr_in_ar,
    "ElectedLeaderRecorded": elected_leader_recorded,
    "OneLiveLeaderPerEpoch": one_live_leader_per_epoch,
    "NoBrokerAheadOfZk": no_broker_ahead_of_zk,
    "ReassignmentArIsUnion": reassignment_ar_is_union,
    "DeletionStatesOnlyWhileDeleting": deletion_states_only_while_deleting,
}
STEP: dict[str, StepFormula] = {
    "OneLeaderPerEpoch": one_leader_per_epoch,
    "LeaderEpochMonotone": leader_epoch_monotone,
    "ControllerEpochMonotone": controller_epoch_monotone,
    "EpochFencing": epoch_fencing,
    "ValidTransition": valid_transition,
    "ArShrinksLast": ar_shrinks_last,
}
GOALS: dict[str, StateFormula] = {
    "SomeLeaderMoved": lambda s: s.leader_epoch > 0,
    "SomePartitionOffline": lambda s: s.partition_state == PARTITION_CODES[P.OFFLINE],
    "SomeControllerFailover": lambda s: s.controller_epoch > 1,
}
