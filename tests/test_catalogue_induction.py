"""The Z3 induction against the catalogue: every property id is proved or excused, and each proved encoding
agrees with the property's Python predicate on states and transitions the explorer reaches (the whole of `tiny`,
and the first states of `controller`, which reassigns).

A concrete state maps into the one-partition encoding by the abstraction the encoding's docstring describes:
AR, leader, leader epoch and ISR from the partition znode, OAR and RAR from the controller's reassignment, the
partition and replica states from the controller's state machines, and the leader and leader epoch each
broker's replica follows from that replica (the shared view's field names, vocabulary.Sym).
"""

from __future__ import annotations

from typing import Any

import pytest
import z3
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore.verdicts import successors
from kcm.checkers.prove.encoding import NONE, PARTITION_CODES, REPLICA_CODES, Encoding, State
from kcm.checkers.prove.invariants import INVARIANTS, NOT_PROVED, proved_ids
from kcm.model.actions import Reassign
from kcm.model.interface import ALWAYS
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import rule_set
from kcm.properties import catalogue


def _explored(system: BoundedSystem, limit: int) -> list:
    """The first `limit` states in breadth-first order."""
    (init,) = system.init_states()
    seen, order, i = {init}, [init], 0
    while i < len(order) and len(order) < limit:
        for _a, nxt, _e in successors(system, order[i]):
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
        i += 1
    return order[:limit]


def _bits(brokers: Any) -> int:
    return sum(1 << b for b in brokers)


def _values(state: Any, n: int) -> dict[str, Any]:
    """The encoding's fields for a one-partition cluster whose brokers are 0..n-1."""
    ((tp, ar),) = state.zk.assignments or ((("t", 0), ()),)
    lai = dict(state.zk.partitions).get(tp)
    brokers, replicas = dict(state.brokers), dict(state.replicas)
    reassignment = dict(state.ctx.reassignments).get(tp)
    data = [replicas.get((tp[0], tp[1], b)) for b in range(n)]
    replica_states = dict(state.ctx.replica_states)
    return {
        "controller_epoch": state.zk.controller_epoch,
        "controller": state.zk.controller,
        "alive": tuple(brokers[b].alive for b in range(n)),
        "broker_controller_epoch": tuple(brokers[b].controller_epoch for b in range(n)),
        "replica_leader": tuple(NONE if d is None else d.leader for d in data),
        "replica_leader_epoch": tuple(0 if d is None else d.leader_epoch for d in data),
        "partition_state": PARTITION_CODES[dict(state.ctx.partition_states).get(tp, P.NON_EXISTENT)],
        "replica_state": tuple(REPLICA_CODES[replica_states.get((tp[0], tp[1], b), R.NON_EXISTENT)]
                               for b in range(n)),
        "leader": NONE if lai is None else lai.leader,
        "leader_epoch": 0 if lai is None else lai.leader_epoch,
        "isr": _bits(() if lai is None else lai.isr),
        "ar": _bits(ar),
        "reassigning": reassignment is not None,
        "original_replicas": _bits(reassignment.original if reassignment else ()),
        "target_replicas": _bits(reassignment.target if reassignment else ()),
    }


def _pairs(sym: State, values: dict[str, Any]) -> list[tuple[Any, Any]]:
    out = []
    for field, value in values.items():
        terms = getattr(sym, field)
        for term, v in zip(*((terms, value) if isinstance(terms, tuple) else ((terms,), (value,))), strict=True):
            if z3.is_bool(term):
                out.append((term, z3.BoolVal(bool(v))))
            elif z3.is_bv(term):
                out.append((term, z3.BitVecVal(int(v), term.size())))
            else:
                out.append((term, z3.IntVal(int(v))))
    return out


def _truth(formula: Any, pairs: list[tuple[Any, Any]]) -> bool:
    value = z3.simplify(z3.substitute(formula, *pairs))
    assert z3.is_true(value) or z3.is_false(value), value  # the conjunct reads only the mapped fields
    return z3.is_true(value)


def _encodings(name: str) -> list[Any]:
    """The conjuncts that encode a catalogue id: those named by it, else its invariant's conjuncts of its kind."""
    state_kind = catalogue.by_id(name).expectation == ALWAYS
    named = [f for inv in INVARIANTS for c, f in (inv.state if state_kind else inv.step) if c == name]
    if named:
        return named
    (inv,) = [i for i in INVARIANTS if i.name == name]
    return [f for _c, f in (inv.state if state_kind else inv.step)]


def _two_encoded_steps(state: Any, action: Any) -> bool:
    """A Reassign whose target is already in the ISR: the reference starts and completes it in one step (as
    Kafka's onPartitionReassignment does), the encoding in two (start, then completion), so the step conjuncts,
    which compare one encoded step, do not apply to it."""
    if not isinstance(action, Reassign):
        return False
    lai = dict(state.zk.partitions).get(action.tp)
    return lai is not None and set(action.replicas) <= set(lai.isr)


def test_every_property_id_is_proved_or_excused() -> None:
    wrong = catalogue.unaccounted(proved_ids(), NOT_PROVED)
    assert wrong == {"missing": [], "unknown": [], "both": [], "no reason": []}
    assert all(i.name in catalogue.ids() for i in INVARIANTS)  # every invariant is named by its property's id


def test_coverage_check_fails_on_an_id_without_proof_or_reason() -> None:
    reasons = {k: v for k, v in NOT_PROVED.items() if k != "EpochFencing"}
    assert catalogue.unaccounted(proved_ids(), reasons)["missing"] == ["EpochFencing"]
    assert catalogue.unaccounted(proved_ids(), {**reasons, "EpochFencing": " "})["no reason"] == ["EpochFencing"]


@pytest.mark.slow
@pytest.mark.parametrize(("config", "limit"), [("tiny", 10_000), ("controller", 400)])
def test_proved_encodings_agree_with_the_predicates_on_explored_states(config: str, limit: int) -> None:
    system = BoundedSystem(load_config(config))
    n = len(system.config.brokers)
    assert system.config.brokers == tuple(range(n))
    enc = Encoding(rule_set(system.config.rules), n)
    s, t = enc.state("s"), enc.state("t")
    step = enc.step(s, t)
    states = _explored(system, limit)
    ids = sorted(proved_ids())
    differ, judged = [], dict.fromkeys(ids, 0)
    for state in states:
        before = _pairs(s, _values(state, n))
        for name in ids:
            prop = catalogue.by_id(name)
            if prop.expectation == ALWAYS:
                judged[name] += 1
                z = all(_truth(f(s), before) for f in _encodings(name))
                if z != prop.condition(system, state):
                    differ.append((name, _values(state, n)))
        for action, nxt, effects in successors(system, state):
            if _two_encoded_steps(state, action):
                continue
            both = before + _pairs(t, _values(nxt, n))
            for name in ids:
                prop = catalogue.by_id(name)
                if prop.expectation != ALWAYS:
                    judged[name] += 1
                    z = all(_truth(f(s, t, step), both) for f in _encodings(name))
                    if z != prop.condition(system, state, action, nxt, effects):
                        differ.append((name, str(action), _values(state, n)))
    assert differ == []
    assert all(judged.values()), judged
