"""Immutable maps as sorted tuples of (key, value) pairs: hashable, canonical, cheap to pickle.

Equal maps are equal tuples, so a state's fingerprint never depends on insertion order or on
Python's per-process string hashing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

FMap = tuple  # tuple[tuple[K, V], ...], sorted by key

EMPTY: FMap = ()


def freeze(d: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> FMap:
    """The canonical frozen map of a dict or of (key, value) pairs."""
    items = d.items() if isinstance(d, Mapping) else d
    return tuple(sorted(items))


def thaw(m: FMap) -> dict[Any, Any]:
    """A mutable dict copy of a frozen map."""
    return dict(m)


def get(m: FMap, key: Any, default: Any = None) -> Any:
    """The value under key, or default."""
    for k, v in m:
        if k == key:
            return v
    return default


def search(m: FMap, key: Any, default: Any = None) -> Any:
    """The value under key, or default, found by bisection: `get` for a map that may hold many pairs."""
    i = bisect_left(m, (key,))  # (key,) sorts just before (key, value)
    if i < len(m) and m[i][0] == key:
        return m[i][1]
    return default


def put(m: FMap, key: Any, value: Any) -> FMap:
    """A copy of m with key set to value."""
    d = dict(m)
    d[key] = value
    return tuple(sorted(d.items()))


def remove(m: FMap, key: Any) -> FMap:
    """A copy of m without key."""
    return tuple(kv for kv in m if kv[0] != key)


def keys(m: FMap) -> tuple[Any, ...]:
    """The keys of m, sorted."""
    return tuple(k for k, _ in m)
