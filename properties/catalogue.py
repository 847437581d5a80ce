"""The one catalogue of rules: every property's id, its meaning in one sentence, its Python predicate and its facts.

Each id is PascalCase and said once, in the `@rule` declaration above its predicate (`kcm.properties.facts`), in
the modules `controller`, `dataplane` and `liveness`; the predicate is the id in snake_case. Every engine, oracle
and report reads the property list and each property's facts from here: `CATALOGUE`, `facts`, `not_judged`. The
other engines (the Z3 induction, the bounded model checking, the trace oracle, the state-change log rules) key
their own encoding by these ids, and the tests `tests/test_catalogue_*.py` hold each engine to that.
"""

from __future__ import annotations

from collections import Counter

from kcm.model.interface import Property, find
from kcm.properties import controller, dataplane, liveness
from kcm.properties.facts import JUDGES, Facts, facts_of, why_not

CATALOGUE: tuple[Property, ...] = (*controller.PROPERTIES, *dataplane.PROPERTIES, *liveness.PROPERTIES)
_TWICE = sorted(name for name, n in Counter(p.name for p in CATALOGUE).items() if n > 1)
if _TWICE:
    raise ValueError(f"catalogue: ids declared twice: {', '.join(_TWICE)}")
_FACTS: dict[str, Facts] = {p.name: facts_of(p.condition) for p in CATALOGUE}  # type: ignore[misc]


def ids() -> tuple[str, ...]:
    """Every property id, in catalogue order."""
    return tuple(p.name for p in CATALOGUE)


def by_id(name: str) -> Property:
    """The property of that id; KeyError names the known ones."""
    return find(CATALOGUE, name)


def facts(name: str) -> Facts | None:
    """The facts of a catalogued id, or None for any other name (a user's own property)."""
    return _FACTS.get(name)


def meaning(name: str) -> str:
    """The property's meaning in one sentence (the first of its predicate's docstring)."""
    return by_id(name).rule.split("\n")[0].strip()


def not_judged(judge: str) -> dict[str, str]:
    """Every id a judge of `facts.JUDGES` leaves out, with why (the property's own reason, else its kind's)."""
    if judge not in JUDGES:
        raise KeyError(f"unknown judge {judge!r}; judges: {', '.join(JUDGES)}")
    out = {}
    for name, f in _FACTS.items():
        why = why_not(f, judge)
        if why:
            out[name] = why
    return out


def unaccounted(encoded: set[str] | frozenset[str], reasons: dict[str, str]) -> dict[str, list[str]]:
    """What an engine's coverage declaration gets wrong: ids neither encoded nor excused, unknown ids, both."""
    known = set(ids())
    return {
        "missing": sorted(known - set(encoded) - set(reasons)),
        "unknown": sorted((set(encoded) | set(reasons)) - known),
        "both": sorted(set(encoded) & set(reasons)),
        "no reason": sorted(k for k, v in reasons.items() if not v.strip()),
    }
