"""Items taken a batch at a time (Python 3.12's `itertools.batched`, as lists, for 3.11)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """The items in lists of `size`, in order (the last one shorter)."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
