"""The bounded model checker against the catalogue: every property id is encoded or excused, and each encoding
agrees with the property's Python predicate on every state and transition the explorer reaches on `tiny`."""

from __future__ import annotations

from typing import Any

import z3
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore.verdicts import successors
from kcm.checkers.prove import bounded_bmc
from kcm.checkers.prove.bounded import BoundedEncoding
from kcm.checkers.prove.vocabulary import BMC_FIELDS, Sym
from kcm.properties import catalogue


def _reachable(system: BoundedSystem) -> list:
    (init,) = system.init_states()
    seen, frontier = {init}, [init]
    while frontier:
        frontier = [nxt for state in frontier for _a, nxt, _e in successors(system, state) if nxt not in seen
                    and not seen.add(nxt)]
    return sorted(seen, key=system.fingerprint)


def _pairs(sym: Sym, values: dict[str, Any]) -> list[tuple[Any, Any]]:
    """z3.substitute pairs binding the symbolic state `sym` to the concrete `values`."""
    out = []
    for field in BMC_FIELDS:
        term = getattr(sym, field)
        terms = term if isinstance(term, tuple) else (term,)
        vals = values[field] if isinstance(values[field], tuple) else (values[field],)
        for x, v in zip(terms, vals, strict=True):
            out.append((x, z3.BoolVal(bool(v)) if z3.is_bool(x) else z3.BitVecVal(int(v), x.size())))
    return out


def _truth(formula: Any, pairs: list[tuple[Any, Any]]) -> bool:
    value = z3.simplify(z3.substitute(formula, *pairs))
    assert z3.is_true(value) or z3.is_false(value), value  # the encoding reads nothing but the state
    return z3.is_true(value)


def _step_name(action: Any) -> str:
    """The encoding's name of an explicit action (BrokerFail(1), ControllerResign, ...)."""
    kind = type(action).__name__
    return f"{kind}({action.broker})" if kind in ("BrokerFail", "BrokerStart") else kind


def test_every_property_id_is_encoded_or_excused() -> None:
    encoded = {*bounded_bmc.STATE_PROPERTIES, *bounded_bmc.STEP_PROPERTIES, *bounded_bmc.GOALS}
    wrong = catalogue.unaccounted(encoded, bounded_bmc.EXPLORER_ONLY)
    assert wrong == {"missing": [], "unknown": [], "both": [], "no reason": []}


def test_coverage_check_fails_on_an_id_without_encoding_or_reason() -> None:
    encoded = {*bounded_bmc.STATE_PROPERTIES, *bounded_bmc.STEP_PROPERTIES, *bounded_bmc.GOALS} - {"LeaderInIsrInAr"}
    assert catalogue.unaccounted(encoded, bounded_bmc.EXPLORER_ONLY)["missing"] == ["LeaderInIsrInAr"]


def test_state_encodings_agree_with_the_predicates_on_every_tiny_state() -> None:
    system = BoundedSystem(load_config("tiny"))
    enc = BoundedEncoding(system)
    s = enc.state("s")
    formulas = {**bounded_bmc.STATE_PROPERTIES, **bounded_bmc.GOALS}
    differ = []
    seen = dict.fromkeys(formulas, set())
    for state in _reachable(system):
        pairs = _pairs(s, enc.project(state))
        for name, formula in formulas.items():
            python = catalogue.by_id(name).condition(system, state)
            seen[name] = seen[name] | {python}
            if _truth(formula(s), pairs) != python:
                differ.append((name, enc.project(state)))
    assert differ == []
    assert all(seen[n] for n in formulas)


def test_step_encodings_agree_with_the_predicates_on_every_tiny_transition() -> None:
    system = BoundedSystem(load_config("tiny"))
    enc = BoundedEncoding(system)
    s, t = enc.state("s"), enc.state("t")
    steps = {name: (formula, record) for name, formula, record in enc.steps(s, t)}
    differ, judged = [], 0
    for state in _reachable(system):
        for action, nxt, effects in successors(system, state):
            formula, record = steps[_step_name(action)]
            pairs = _pairs(s, enc.project(state)) + _pairs(t, enc.project(nxt))
            assert _truth(formula, pairs), action  # the encoding admits the explorer's step under its name
            for name, prop in bounded_bmc.STEP_PROPERTIES.items():
                python = catalogue.by_id(name).condition(system, state, action, nxt, effects)
                judged += 1
                if _truth(prop(s, t, record), pairs) != python:
                    differ.append((name, str(action), enc.project(state)))
    assert differ == []
    assert judged > 0
