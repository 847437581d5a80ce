"""The one catalogue of rules: every property's id, its meaning in one sentence and its Python predicate.

Each id is PascalCase and said once, here (through the lists of `controller`, `dataplane` and `liveness`).
Every other engine (the Z3 induction, the bounded model checking, the trace oracle, the state-change log rules)
keys its own encoding by these ids, and lists the ids it does not encode with a reason; the tests
`tests/test_catalogue_*.py` hold each engine to that.
"""

from __future__ import annotations

from kcm.model.interface import Property, find
from kcm.properties import controller, dataplane, liveness

CATALOGUE: tuple[Property, ...] = (*controller.PROPERTIES, *dataplane.PROPERTIES, *liveness.PROPERTIES)


def ids() -> tuple[str, ...]:
    """Every property id, in catalogue order."""
    return tuple(p.name for p in CATALOGUE)


def by_id(name: str) -> Property:
    """The property of that id; KeyError names the known ones."""
    return find(CATALOGUE, name)


def meaning(name: str) -> str:
    """The property's meaning in one sentence (the first of its predicate's docstring)."""
    return by_id(name).rule.split("\n")[0].strip()


def unaccounted(encoded: set[str] | frozenset[str], reasons: dict[str, str]) -> dict[str, list[str]]:
    """What an engine's coverage declaration gets wrong: ids neither encoded nor excused, unknown ids, both."""
    known = set(ids())
    return {
        "missing": sorted(known - set(encoded) - set(reasons)),
        "unknown": sorted((set(encoded) | set(reasons)) - known),
        "both": sorted(set(encoded) & set(reasons)),
        "no reason": sorted(k for k, v in reasons.items() if not v.strip()),
    }
