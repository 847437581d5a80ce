"""A property's facts, declared once, on its predicate: its id and kind, the families it needs, the judges that
cannot judge it and why, and the helper that names its offenders.

`@rule("LeaderInIsrInAr", ALWAYS, ...)` above a predicate, with `@reads` and `@partition_local` (the parts it reads,
whether it judges each partition alone), is the whole of a property. The module's PROPERTIES list
(`declared_in`), the catalogue and every list of what a judge leaves out (`catalogue.not_judged`) are derived from
these declarations; the explorers judge every property, the other judges (`JUDGES`) judge the ones neither their
kind (`BY_KIND`) nor the property's own declaration excuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from kcm.model.interface import ALWAYS, EVENTUALLY, SOMETIMES, SOMETIMES_STEP, STEP, Property, named

F = TypeVar("F", bound=Callable[..., Any])
KINDS = (ALWAYS, STEP, SOMETIMES, SOMETIMES_STEP, EVENTUALLY)
# The judges that may leave a property out, besides the explorers (which judge every one): name -> what it is.
JUDGES: dict[str, str] = {
    "trace": "the trace oracle (kcm check-trace)",
    "log": "the state-change log rules (kcm check-log)",
    "ignored_requests": "an exploration under the reduction ignored_requests",
    "induction": "the inductive proof (kcm prove)",
    "bmc": "bounded model checking (kcm prove --bmc)",
}
_FINITE = "not a safety rule: one finite {} cannot break a reachability goal or a liveness property"
# What a judge leaves out by kind alone, with why: said here once rather than with each property.
BY_KIND: dict[str, dict[str, str]] = {
    "trace": dict.fromkeys((SOMETIMES, SOMETIMES_STEP, EVENTUALLY), _FINITE.format("trace")),
    "log": dict.fromkeys((SOMETIMES, SOMETIMES_STEP, EVENTUALLY), _FINITE.format("log")),
    "ignored_requests": {EVENTUALLY: "a liveness property reads whole runs, which the reduction shortens (it "
                                     "keeps the safety verdicts and the goals)"},
    "induction": dict.fromkeys((SOMETIMES, SOMETIMES_STEP, EVENTUALLY), "not a safety invariant: a reachability "
                               "goal or a liveness property, judged by the explorers"),
    "bmc": {EVENTUALLY: "a liveness property is judged on the explored graph's fair cycles, which bounded paths do "
                        "not show"},
}
_TRACE, _LOG = "a trace carries no ", "the state-change log does not record "
# Reasons several properties share, by judge: `@rule(..., **NO_REASSIGNMENT_STATE)`.
NO_REASSIGNMENT_STATE = {"trace": _TRACE + "reassignment state (OAR, RAR)",
                         "log": _LOG + "reassignment state (OAR, RAR)"}
NO_CONTROLLER_CACHE = {"trace": _TRACE + "separate controller cache: the trace is one view",
                       "log": _LOG + "ZooKeeper's content"}
STOPS_ANYWHERE = {"trace": "a trace may stop anywhere, with requests still to come",
                  "log": "a log may stop anywhere, with requests still to come"}
NO_DELETION_QUEUE = {"trace": _TRACE + "topic deletion events", "log": _LOG + "the topic deletion queue"}
NO_RECORDS = {"trace": _TRACE + "record contents or acknowledgements, only offsets",
              "log": _LOG + "the data plane (records, LEO, HW)"}
TRACE_NO, LOG_NO = _TRACE, _LOG
# What the Z3 encodings (checkers/prove) leave out, shared by several properties: `@rule(..., induction=...)`.
INDUCTION_NO_REQUESTS = "the encoding keeps no requests or ZooKeeper writes of a step, only their effect on the state"
INDUCTION_ONE_PARTITION = ("the encoding holds one partition and no topic, so nothing is created, deleted or "
                           "compared across")
ONE_COPY = "the encoding keeps one copy of what the controller caches from ZooKeeper and of broker liveness"
NO_DATA_PLANE_ENCODED = "the encoding has no logs (the data plane is not encoded)"
BMC_NOT_RESTATED = "it reads a step's requests and writes, which the encoding does not record"
BMC_NO_REASSIGN_OR_DELETE = "the encoded families never reassign or delete, and the encoding has no AR field"
BMC_NO_DATA_PLANE = "the encoding has no logs (no data-plane family is encoded)"
_ID = re.compile(r"(?:[A-Z][a-z0-9]*)+")


class Facts(NamedTuple):
    """What one property is, besides its predicate: declared with `@rule`, read through `catalogue.facts`."""

    name: str  # the id (PascalCase); the predicate is its snake_case
    kind: str  # ALWAYS | STEP | SOMETIMES | SOMETIMES_STEP | EVENTUALLY
    needs: frozenset[str]  # families (or "delivery:async") of which a config needs one for it to mean anything
    why_not: Mapping[str, str]  # judge -> why that judge cannot judge it (beyond what its kind says)
    offenders: Callable[[Any], list[dict[str, Any]]] | None  # state -> what breaks it, for a report's detail


def snake(name: str) -> str:
    """The predicate's name for an id: `LeaderInIsrInAr` -> `leader_in_isr_in_ar`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_DECLARED: list[Callable[..., Any]] = []  # every predicate `rule` marked, in the order they were defined


def rule(name: str, kind: str, *, needs: tuple[str, ...] = (), offenders: Callable[[Any], list[Any]] | None = None,
         **why_not: str) -> Callable[[F], F]:
    """Declare a predicate a catalogued property: its id, kind, needs, offenders helper and each judge's reason
    (keyword: a name of JUDGES) for not judging it; ValueError on a wrong or redundant declaration."""
    problems = []
    if not _ID.fullmatch(name):
        problems.append("the id is not PascalCase")
    if kind not in KINDS:
        problems.append(f"unknown kind {kind!r}")
    for judge, why in why_not.items():
        if judge not in JUDGES:
            problems.append(f"unknown judge {judge!r} (judges: {', '.join(JUDGES)})")
        elif not why.strip():
            problems.append(f"an empty reason for {judge}")
        elif kind in BY_KIND[judge]:
            problems.append(f"{judge} leaves out every {kind} property already (BY_KIND)")
    if problems:
        raise ValueError(f"rule {name}: {'; '.join(problems)}")

    def mark(fn: F) -> F:
        if fn.__name__ != snake(name):
            raise ValueError(f"rule {name}: its predicate must be called {snake(name)}, not {fn.__name__}")
        fn.facts = Facts(name, kind, frozenset(needs), dict(why_not), offenders)  # type: ignore[attr-defined]
        _DECLARED.append(fn)
        return fn

    return mark


def facts_of(condition: Any) -> Facts | None:
    """The facts a predicate was declared with, or None (a user's property, a goal's negation)."""
    return getattr(condition, "facts", None)


def declared_in(namespace: Mapping[str, Any]) -> list[Property]:
    """The properties a module declared with `rule` (pass its `globals()`), in the order it defines them."""
    mine = {id(v) for v in namespace.values()}
    return [named(fn.facts.name, fn.facts.kind, fn) for fn in _DECLARED if id(fn) in mine]


def why_not(facts: Facts, judge: str) -> str | None:
    """Why a judge cannot judge a property (its own declaration, else its kind), or None when it can."""
    return facts.why_not.get(judge) or BY_KIND[judge].get(facts.kind)
