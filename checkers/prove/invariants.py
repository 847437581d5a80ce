"""The named safety invariants over the symbolic state, and the auxiliary invariants that make them inductive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import z3
from kcm.checkers.prove.encoding import NONE, PARTITION_CODES, Encoding, State
from kcm.model.states import PartitionState as P

StateFormula = Callable[[Encoding, State], Any]
StepFormula = Callable[[Encoding, State, State], Any]


class Invariant(NamedTuple):
    """A named invariant: state conjuncts, step conjuncts (over s, s') and the auxiliary invariants it needs."""

    name: str
    description: str
    state: tuple[tuple[str, StateFormula], ...] = ()
    step: tuple[tuple[str, StepFormula], ...] = ()
    strengthening: tuple[tuple[str, StateFormula], ...] = ()


def _one_leader_per_epoch(enc: Encoding, s: State) -> Any:
    n = enc.n
    return z3.And(
        [
            z3.Not(
                z3.And(s.believes_leader[i], s.believes_leader[j], s.broker_leader_epoch[i] == s.broker_leader_epoch[j])
            )
            for i in range(n)
            for j in range(i + 1, n)
        ]
    )


def _believed_leaders_were_elected(enc: Encoding, s: State) -> Any:
    return z3.And(
        [
            z3.Implies(
                s.believes_leader[b],
                z3.And(s.elected[s.broker_leader_epoch[b]] == b, s.broker_leader_epoch[b] <= s.leader_epoch),
            )
            for b in range(enc.n)
        ]
    )


def _leader_in_isr(enc: Encoding, s: State) -> Any:
    return z3.Implies(s.leader != NONE, enc.has_id(s.isr, s.leader))


def _isr_in_ar(enc: Encoding, s: State) -> Any:
    # Kafka's exception (properties.controller.leader_in_isr_in_ar): a leaderless partition's one ISR member may
    # have left AR, dropped by a replaced reassignment while the controller never empties the ISR.
    single = z3.And(s.isr != enc.empty(), s.isr & (s.isr - 1) == enc.empty())
    return z3.Or(enc.subset(s.isr, s.ar), z3.And(s.leader == NONE, single))


def _no_broker_ahead(enc: Encoding, s: State) -> Any:
    return z3.And([s.seen_epoch[b] <= s.controller_epoch for b in range(enc.n)])


def _controller_epoch_monotone(enc: Encoding, s: State, t: State) -> Any:
    return t.controller_epoch >= s.controller_epoch


def _brokers_never_go_back(enc: Encoding, s: State, t: State) -> Any:
    # A live broker's accepted controller epoch never decreases: it refused every older one.
    return z3.And(
        [z3.Implies(z3.And(s.alive[b], t.alive[b]), t.seen_epoch[b] >= s.seen_epoch[b]) for b in range(enc.n)]
    )


def _ar_shrinks_last(enc: Encoding, s: State, t: State) -> Any:
    # A replica of the original assignment (OAR, or AR when nothing is being reassigned) leaves AR only in the last
    # step of a reassignment; a replica only in an abandoned target leaves it when the reassignment is replaced.
    lost = s.ar & ~t.ar
    original = z3.If(s.reassigning, s.oar, s.ar)
    deleted = t.partition_state == PARTITION_CODES[P.NON_EXISTENT]
    last_step = z3.And(s.reassigning, z3.Not(t.reassigning), t.ar == s.rar, enc.subset(s.rar, t.isr))
    replaced = z3.And(s.reassigning, t.ar == s.oar | z3.If(t.reassigning, t.rar, s.oar),
                      z3.If(t.reassigning, t.oar == s.oar, z3.BoolVal(True)))
    return z3.And(
        z3.Implies(z3.And(lost & original != enc.empty(), z3.Not(deleted)), last_step),
        z3.Implies(z3.And(lost != enc.empty(), lost & original == enc.empty(), z3.Not(deleted)),
                   z3.Or(last_step, replaced)),
    )


def _reassignment_ar_is_union(enc: Encoding, s: State) -> Any:
    return z3.If(s.reassigning, s.ar == s.oar | s.rar, z3.And(s.oar == enc.empty(), s.rar == enc.empty()))


def _absent_partitions_do_not_move(enc: Encoding, s: State) -> Any:
    return z3.Implies(s.partition_state == PARTITION_CODES[P.NON_EXISTENT], z3.Not(s.reassigning))


def _partition_moves_in_table(enc: Encoding, s: State, t: State) -> Any:
    return z3.Implies(
        t.partition_state != s.partition_state, enc.partition_allows(s.partition_state, t.partition_state)
    )


def _replica_moves_in_table(enc: Encoding, s: State, t: State) -> Any:
    return z3.And(
        [
            z3.Implies(
                t.replica_state[b] != s.replica_state[b], enc.replica_allows(s.replica_state[b], t.replica_state[b])
            )
            for b in range(enc.n)
        ]
    )


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "OneLiveLeaderPerEpoch",
        "no two brokers believe they lead the partition with the same leader epoch",
        state=(("OneLiveLeaderPerEpoch", _one_leader_per_epoch),),
        strengthening=(
            (
                "believed-leaders-were-elected: a broker that believes it leads with epoch e was written as "
                "leader with e (elected[e] = it) and e <= the leader epoch in ZooKeeper",
                _believed_leaders_were_elected,
            ),
        ),
    ),
    Invariant(
        "LeaderInIsrInAr",
        "the leader is in the ISR and the ISR is a subset of AR",
        state=(("leader-in-isr", _leader_in_isr), ("isr-in-ar", _isr_in_ar)),
        strengthening=(
            (
                "ReassignmentArIsUnion: during a reassignment AR = OAR + RAR, otherwise OAR = RAR = {} (the "
                "reassignment selector elects in RAR, so in AR; needed since ISR may keep a replica outside AR)",
                _reassignment_ar_is_union,
            ),
            (
                "absent-partitions-are-not-reassigned: a NonExistentPartition has no reassignment in progress",
                _absent_partitions_do_not_move,
            ),
        ),
    ),
    Invariant(
        "ControllerEpochMonotone",
        "the controller epoch only grows, no broker is ahead of it, no live broker accepts an older one",
        state=(("NoBrokerAheadOfZk", _no_broker_ahead),),
        step=(
            ("ControllerEpochMonotone", _controller_epoch_monotone),
            ("brokers-refuse-older-controller-epochs", _brokers_never_go_back),
        ),
    ),
    Invariant(
        "ArShrinksLast",
        "a replica of the original assignment leaves AR only in the step completing a reassignment (AR := RAR, RAR "
        "in ISR) or on deletion; a replica only in an abandoned target leaves it when the reassignment is replaced",
        state=(("ReassignmentArIsUnion", _reassignment_ar_is_union),),
        step=(("ArShrinksLast", _ar_shrinks_last),),
        strengthening=(
            (
                "absent-partitions-are-not-reassigned: a NonExistentPartition has no reassignment in progress "
                "(creation would otherwise overwrite AR under a reassignment)",
                _absent_partitions_do_not_move,
            ),
        ),
    ),
    Invariant(
        "ValidTransition",
        "every partition and replica state change is a move of the rule set's table",
        step=(
            ("partition-moves-in-table", _partition_moves_in_table),
            ("replica-moves-in-table", _replica_moves_in_table),
        ),
    ),
)


def proved_ids() -> frozenset[str]:
    """The catalogue ids the induction proves: each invariant's name and its conjuncts named by a catalogue id."""
    return frozenset(n for inv in INVARIANTS for n in (inv.name, *(c for c, _ in (*inv.state, *inv.step)))
                     if n[:1].isupper())


_ONE_PARTITION = "the encoding holds one partition and no topic, so nothing is created, deleted or compared across"
_NO_REQUESTS = "the encoding keeps no requests or ZooKeeper writes of a step, only their effect on the state"
_ONE_COPY = "the encoding keeps one copy of what the controller caches from ZooKeeper and of broker liveness"
_NO_DATA_PLANE = "the encoding has no logs (the data plane is not encoded)"
_NOT_SAFETY = "not a safety invariant: a reachability goal or a liveness property, judged by the explorers"
# Every catalogue id the induction does not prove, with the reason; tests/test_catalogue_induction.py holds this
# list and proved_ids() to the catalogue.
NOT_PROVED: dict[str, str] = {
    "ElectedLeaderRecorded": "the encoding writes the ghost `elected` with the znode in the same step, so it holds "
                             "by construction (believed-leaders-were-elected states what brokers act on instead)",
    "OneLeaderPerEpoch": "the encoding's ghost `elected` is an array indexed by leader epoch, one leader per epoch "
                         "by construction; what brokers believe is proved instead (OneLiveLeaderPerEpoch)",
    "LeaderEpochMonotone": "an election writes the next leader epoch by construction (the seeded bug switch "
                           "bump_epoch_on_election=False breaks OneLiveLeaderPerEpoch instead)",
    "EpochFencing": _NO_REQUESTS + " (what it guards, brokers never going back, is ControllerEpochMonotone's step "
                                   "conjunct brokers-refuse-older-controller-epochs)",
    "ZkEpochFencing": _NO_REQUESTS,
    "CleanElection": _NO_REQUESTS,
    "ControllerActive": _NO_REQUESTS,
    "ReassignmentEndsComplete": _NO_REQUESTS,
    "DeletionStatesOnlyWhileDeleting": _ONE_PARTITION,
    "DeletedTopicsLeaveNothing": _ONE_PARTITION,
    "DeletionProgress": _ONE_PARTITION,
    "ReassignmentsTracked": _ONE_COPY,
    "ControllerCacheMatchesZk": _ONE_COPY,
    "LivenessView": _ONE_COPY,
    "ReplicasFollowZk": _ONE_COPY,
    "AckedRecordsSurvive": _NO_DATA_PLANE,
    "ConsumedRecordsSurvive": _NO_DATA_PLANE,
    "LogsAgreeBelowHw": _NO_DATA_PLANE,
    "LeaderHwMonotone": _NO_DATA_PLANE,
    "IsrJoinsReachEpochStart": _NO_DATA_PLANE,
    **dict.fromkeys(("SomeLeaderMoved", "SomePartitionOffline", "SomeControllerFailover", "SomeReassignmentCompletes",
                     "SomeTopicDeletionCompletes", "SomeStaleRequestRefused", "SomeRecordAcked", "SomeRecordConsumed",
                     "ReassignmentsFinish", "DeletionsFinish", "ProducesResolve", "ReplicasLearnLeaders"),
                    _NOT_SAFETY),
}


def invariant(name: str) -> Invariant:
    """The invariant of that name; a KeyError names the known ones."""
    for inv in INVARIANTS:
        if inv.name == name:
            return inv
    raise KeyError(f"unknown invariant {name!r}; known: {', '.join(i.name for i in INVARIANTS)}")
