"""The induction's invariants: property ids whose formulas (formulas.py) are proved together, and the lemmas
(strengthenings) that make them inductive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import z3
from kcm.checkers.prove import formulas
from kcm.checkers.prove.formulas import StateFormula, StepFormula
from kcm.checkers.prove.vocabulary import PARTITION_CODES, Sym
from kcm.model.states import PartitionState as P
from kcm.properties import catalogue


class Invariant(NamedTuple):
    """A named invariant: state conjuncts, step conjuncts (over s, s' and the step) and the lemmas it needs.

    Each conjunct is a property id and its formula from formulas.py; each strengthening is a lemma of the proof
    (not a catalogue property): its name and meaning, and its formula.
    """

    name: str
    description: str
    state: tuple[tuple[str, StateFormula], ...] = ()
    step: tuple[tuple[str, StepFormula], ...] = ()
    strengthening: tuple[tuple[str, StateFormula], ...] = ()


def _believed_leaders_were_elected(s: Sym) -> Any:
    return z3.And([
        z3.Implies(
            s.replica_leader[i] == b,
            z3.And(s.elected_at(s.replica_leader_epoch[i]) == b, s.replica_leader_epoch[i] <= s.leader_epoch),
        )
        for i, b in enumerate(s.ids)
    ])


def _absent_partitions_are_not_reassigned(s: Sym) -> Any:
    return z3.Implies(s.partition_state == PARTITION_CODES[P.NON_EXISTENT], z3.Not(s.reassigning))


def _state(*ids: str) -> tuple[tuple[str, StateFormula], ...]:
    return tuple((i, formulas.STATE[i]) for i in ids)


def _step(*ids: str) -> tuple[tuple[str, StepFormula], ...]:
    return tuple((i, formulas.STEP[i]) for i in ids)


_ELECTED = ("BelievedLeadersWereElected: a broker whose replica leads with epoch e was written as leader with e "
            "(elected[e] = it) and e <= the leader epoch in ZooKeeper", _believed_leaders_were_elected)
_ABSENT = "AbsentPartitionsAreNotReassigned: a NonExistentPartition has no reassignment in progress"
_UNION: Callable[[Sym], Any] = formulas.STATE["ReassignmentArIsUnion"]

INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "OneLiveLeaderPerEpoch",
        "no two live brokers act as leader of the partition with the same leader epoch",
        state=_state("OneLiveLeaderPerEpoch"),
        strengthening=(_ELECTED,),
    ),
    Invariant(
        "LeaderInIsrInAr",
        "the leader is in the ISR and the ISR is a subset of AR",
        state=_state("LeaderInIsrInAr"),
        strengthening=(
            (
                "ReassignmentArIsUnion: during a reassignment AR = OAR + RAR, otherwise OAR = RAR = {} (the "
                "reassignment selector elects in RAR, so in AR; needed since ISR may keep a replica outside AR)",
                _UNION,
            ),
            (_ABSENT, _absent_partitions_are_not_reassigned),
        ),
    ),
    Invariant(
        "ControllerEpochMonotone",
        "the controller epoch only grows, no broker is ahead of it, no live broker accepts an older one",
        state=_state("NoBrokerAheadOfZk"),
        step=_step("ControllerEpochMonotone"),
    ),
    Invariant(
        "ArShrinksLast",
        "a replica of the original assignment leaves AR only in the step completing a reassignment (AR := RAR, RAR "
        "in ISR) or on deletion; a replica only in an abandoned target leaves it when the reassignment is replaced",
        state=_state("ReassignmentArIsUnion"),
        step=_step("ArShrinksLast"),
        strengthening=(
            (_ABSENT + " (creation would otherwise overwrite AR under a reassignment)",
             _absent_partitions_are_not_reassigned),
        ),
    ),
    Invariant(
        "ValidTransition",
        "every partition and replica state change is a move of the rule set's table",
        step=_step("ValidTransition"),
    ),
)


def proved_ids() -> frozenset[str]:
    """The catalogue ids the induction proves: each invariant's name and its conjuncts' ids."""
    return frozenset(n for inv in INVARIANTS for n in (inv.name, *(c for c, _ in (*inv.state, *inv.step))))


# Every catalogue id the induction does not prove, with the reason: declared on each property
# (`@rule(..., induction=...)`, or its kind); tests/test_catalogue_induction.py holds it and proved_ids() to the
# catalogue.
NOT_PROVED: dict[str, str] = catalogue.not_judged("induction")


def invariant(name: str) -> Invariant:
    """The invariant of that name; a KeyError names the known ones."""
    for inv in INVARIANTS:
        if inv.name == name:
            return inv
    raise KeyError(f"unknown invariant {name!r}; known: {', '.join(i.name for i in INVARIANTS)}")
