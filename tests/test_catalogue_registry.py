"""The catalogue is the one registry: every property is declared once, with `@rule` on its predicate, and every list
of properties or of what a judge leaves out is derived from those declarations.

These tests fail when a property is added in one place only: a predicate without its declaration, a declaration
in a module the catalogue does not read, a property listed by hand, a predicate named otherwise than its id, a
family its `needs` names that no config has, or a judge's list kept apart from the declarations.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import kcm.properties as package
import pytest
from kcm.checkers.core import bounded
from kcm.checkers.core.evidence import witness
from kcm.checkers.oracle import log_rules, oracle_trace
from kcm.model.interface import ALWAYS, EVENTUALLY, SOMETIMES, SOMETIMES_STEP, STEP, named
from kcm.properties import catalogue, facts
from kcm.properties.facts import JUDGES, rule, snake

STATE_PARAMS = ["model", "state"]
STEP_PARAMS = ["model", "before", "action", "after", "effects"]


def _predicates() -> list[tuple[str, Any]]:
    """Every function of every properties module shaped as a property's predicate, with its module's name."""
    out = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for fn in vars(module).values():
            # Not inspect.isfunction: in the compiled build the predicates are Cython functions.
            if (not callable(fn) or isinstance(fn, type) or getattr(fn, "__module__", None) != module.__name__
                    or fn.__name__.startswith("_")):
                continue
            if list(inspect.signature(fn).parameters) in (STATE_PARAMS, STEP_PARAMS):
                out.append((info.name, fn))
    return out


def test_every_predicate_in_the_properties_modules_is_declared_and_catalogued() -> None:
    catalogued = {p.condition for p in catalogue.CATALOGUE}
    found = _predicates()
    assert len(found) == len(catalogue.CATALOGUE) >= 39
    undeclared = [f"{m}.{fn.__name__}" for m, fn in found if facts.facts_of(fn) is None]
    assert undeclared == []
    assert [f"{m}.{fn.__name__}" for m, fn in found if fn not in catalogued] == []


def test_each_catalogued_property_is_its_declaration() -> None:
    for p in catalogue.CATALOGUE:
        f = facts.facts_of(p.condition)
        assert f is not None, f"{p.name} is listed without @rule"
        assert (f.name, f.kind) == (p.name, p.expectation)
        assert p.condition.__name__ == snake(p.name), p.name
        assert p.rule and p.rule == (p.condition.__doc__ or "").strip(), p.name
        params = STEP_PARAMS if p.expectation in (STEP, SOMETIMES_STEP) else STATE_PARAMS
        assert list(inspect.signature(p.condition).parameters) == params, p.name
        assert catalogue.facts(p.name) is f
    assert len(set(catalogue.ids())) == len(catalogue.ids())


def test_needs_name_families_a_config_can_have() -> None:
    known = set(bounded.FAMILIES) | {"delivery:sync", "delivery:async"}
    needing = {n: catalogue.facts(n).needs for n in catalogue.ids() if catalogue.facts(n).needs}
    assert set(needing) >= {"SomeReassignmentCompletes", "SomeTopicDeletionCompletes", "SomeStaleRequestRefused",
                            "SomeRecordAcked", "SomeRecordConsumed", "ReassignmentsFinish", "ProducesResolve"}
    assert all(needs <= known for needs in needing.values()), needing


def test_every_judges_list_is_derived_from_the_declarations() -> None:
    assert oracle_trace.NOT_JUDGED == catalogue.not_judged("trace")
    assert log_rules.NOT_JUDGED == catalogue.not_judged("log")
    for judge in JUDGES:
        left_out = catalogue.not_judged(judge)
        assert all(why.strip() for why in left_out.values())
        # A judge leaves out every kind it cannot judge, each for the one reason said in BY_KIND.
        for p in catalogue.CATALOGUE:
            if p.expectation in facts.BY_KIND[judge]:
                assert left_out[p.name] == facts.BY_KIND[judge][p.expectation]
    # The reachability goals and liveness properties are left out by kind: no property repeats it.
    goals = [n for n in catalogue.ids() if catalogue.facts(n).kind in (SOMETIMES, SOMETIMES_STEP, EVENTUALLY)]
    assert len(goals) >= 12
    assert all(not set(catalogue.facts(n).why_not) & {"trace", "log"} for n in goals)
    assert set(catalogue.not_judged("ignored_requests")) >= {
        "SomeStaleRequestRefused", "ReassignmentsFinish", "DeletionsFinish", "ProducesResolve", "ReplicasLearnLeaders"}
    with pytest.raises(KeyError, match="unknown judge"):
        catalogue.not_judged("spark")


def test_a_reduced_config_names_why_it_cannot_judge_a_property() -> None:
    cfg = {"brokers": [0, 1], "topics": {"t": {"0": [0, 1]}}, "families": ["controller_failover"],
           "delivery": "async", "reductions": ["ignored_requests"], "properties": ["SomeStaleRequestRefused"]}
    with pytest.raises(bounded.BadConfig, match="SomeStaleRequestRefused cannot be judged under reductions "
                                                "ignored_requests: it judges the very deliveries"):
        bounded.validate_config(cfg)


@pytest.mark.parametrize("args, kwargs, name, problem", [
    (("NewRule", ALWAYS), {}, "new_rules", "must be called new_rule"),
    (("newRule", ALWAYS), {}, "new_rule", "not PascalCase"),
    (("NewRule", "ALWAYZ"), {}, "new_rule", "unknown kind"),
    (("NewRule", ALWAYS), {"spark": "why"}, "new_rule", "unknown judge 'spark'"),
    (("NewRule", ALWAYS), {"trace": " "}, "new_rule", "an empty reason for trace"),
    (("NewRule", SOMETIMES), {"log": "why"}, "new_rule", "log leaves out every sometimes property already"),
])
def test_a_wrong_declaration_is_refused_at_import(args: tuple, kwargs: dict, name: str, problem: str) -> None:
    def predicate(model: Any, state: Any) -> bool:
        return True

    predicate.__name__ = name
    with pytest.raises(ValueError, match=problem):
        rule(*args, **kwargs)(predicate)


def test_a_declared_helper_names_the_offenders_in_the_evidence() -> None:
    with_helper = {n for n in catalogue.ids() if catalogue.facts(n).offenders is not None}
    assert with_helper >= {"AckedRecordsSurvive", "ConsumedRecordsSurvive", "LogsAgreeBelowHw"}

    def lost(state: Any) -> list[dict[str, Any]]:
        return [{"lost": state}]

    def never_zero(model: Any, state: Any) -> bool:
        """The state is never zero."""
        return state != 0

    # A property declared outside the catalogue's modules: its facts travel on its predicate all the same.
    prop = named("NeverZero", ALWAYS, rule("NeverZero", ALWAYS, offenders=lost)(never_zero))
    found = witness(prop, None, 1, "step", 0, None)
    assert found["detail"] == [{"lost": 0}]
    assert facts.declared_in({"never_zero": never_zero}) == [prop]
