"""Which parts of a Cluster each state property reads, declared next to its predicate, and which to judge again.

A state predicate is a function of the parts of the Cluster it reads (and of the model's fixed config). A step
hands back every part it left unchanged as the very same object (`Txn.commit`), so a state whose read parts are
all the very objects of its parent's gets the parent's verdict: an explorer that already judged the parent need
not judge it again. `@reads("zk.partitions", "brokers")` declares the parts: a Cluster field, or one field of its
Zk, ControllerContext or Ghost record. A predicate with no declaration is always judged.
`tests/test_property_reads.py` runs every predicate on recorded states and fails on a read it does not declare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kcm.model.cluster import Cluster, ControllerContext, Ghost, Zk

F = TypeVar("F", bound=Callable[..., Any])
# The records whose fields are declared one by one; the other parts (brokers, replicas, inflight, zombie) whole.
RECORDS: dict[str, tuple[str, ...]] = {"zk": Zk._fields, "ctx": ControllerContext._fields, "ghost": Ghost._fields}
ALL = -1  # the mask of a predicate that declares nothing: every change counts


def _bits() -> dict[str, int]:
    """One bit per declarable part: each field of a record, each other Cluster field."""
    out: dict[str, int] = {}
    for part in Cluster._fields:
        for path in ([f"{part}.{f}" for f in RECORDS[part]] if part in RECORDS else [part]):
            out[path] = 1 << len(out)
    for part, fields in RECORDS.items():
        out[part] = sum(out[f"{part}.{f}"] for f in fields)
    return out


BITS = _bits()
# (position in Cluster, bit of the whole part, ((position in the record, bit), ...) or None), for `changed`.
_LAYOUT = tuple((i, BITS[part], tuple((j, BITS[f"{part}.{f}"]) for j, f in enumerate(RECORDS[part]))
                 if part in RECORDS else None) for i, part in enumerate(Cluster._fields))


def reads(*paths: str) -> Callable[[F], F]:
    """Declare the Cluster parts a state predicate reads ("brokers", "zk", "zk.partitions", ...)."""
    unknown = [p for p in paths if p not in BITS]
    if unknown or not paths:
        raise ValueError(f"reads: unknown parts {unknown} (known: {', '.join(BITS)})")

    def mark(fn: F) -> F:
        fn.reads = tuple(paths)  # type: ignore[attr-defined]
        return fn

    return mark


def partition_local(*unless: str) -> Callable[[F], F]:
    """Declare a predicate partition-local: it judges a state (a step) as it judges each partition's own part.

    A state predicate holds exactly when it holds on every partition's restriction of the state (each map keyed by
    partition cut down to that partition's entries), and a reachability goal is reached exactly when one
    restriction reaches it; a step predicate judges a step that touches one partition by that partition's part.
    `unless` names config families under which the claim does not hold (a topic-wide rule with deletion on).
    Partial-order reduction (`checkers/reductions/por.py`) relies on it; `tests/test_por.py` checks it on explored
    states.
    """

    def mark(fn: F) -> F:
        fn.partition_local = tuple(unless)  # type: ignore[attr-defined]
        return fn

    return mark


def is_partition_local(condition: Callable[..., Any], families: Sequence[str] | set[str] = ()) -> bool:
    """Whether a predicate is declared partition-local for a config with these families."""
    unless = getattr(condition, "partition_local", None)
    return unless is not None and not set(unless) & set(families)


def declared(condition: Callable[..., Any]) -> tuple[str, ...] | None:
    """The parts a predicate declares it reads, or None when it declares nothing."""
    return getattr(condition, "reads", None)


def mask(condition: Callable[..., Any]) -> int:
    """The bits of the parts a predicate reads (ALL when undeclared)."""
    paths = declared(condition)
    if paths is None:
        return ALL
    out = 0
    for p in paths:
        out |= BITS[p]
    return out


def changed(before: Cluster, after: Cluster) -> int:
    """The bits of the parts of `after` that are not the very objects of `before`'s."""
    if after is before:
        return 0
    out = 0
    for i, whole, fields in _LAYOUT:
        a, b = after[i], before[i]
        if a is b:
            continue
        if fields is None or a is None or b is None:
            out |= whole
            continue
        for j, bit in fields:
            if a[j] is not b[j]:
                out |= bit
    return out


class Rechecks:
    """The state properties worth judging in a state reached in one step from a parent that was judged already."""

    def __init__(self, props: Sequence[Any]) -> None:
        self.props = list(props)
        self._masks = [(p, mask(p.condition)) for p in self.props]
        self._memo: dict[int, list[Any]] = {}  # changed bits -> the properties that read one of them

    def after_step(self, before: Any, after: Any) -> list[Any]:
        """The properties that read a part the step changed (every one when the states are not Clusters)."""
        if type(after) is not Cluster or type(before) is not Cluster:
            return self.props
        bits = changed(before, after)
        out = self._memo.get(bits)
        if out is None:
            out = self._memo[bits] = [p for p, m in self._masks if m & bits]
        return out
