"""A stable 64-bit fingerprint and a compact canonical encoding of any model state.

States hold only tuples, ints, strs, bools, None and NamedTuples of them, so pickle protocol 5 is
canonical for them (no sets, no dicts, no per-process hashing). xxh64 of those bytes is the same
value in every process and on every machine, unlike Python's `hash`.
"""

from __future__ import annotations

import io
import pickle
import zlib
from array import array
from collections.abc import Sequence
from typing import Any

import xxhash

_PROTOCOL = 5
_dumps = pickle.dumps
_xxh64 = xxhash.xxh64_intdigest


def encode(state: Any) -> bytes:
    """The canonical bytes of a state (what is shipped to Spark workers and checkpointed)."""
    return _dumps(state, _PROTOCOL)


def decode(data: bytes) -> Any:
    """The state encoded by `encode` (trusted input only: kcm's own checkpoints and workers)."""
    return pickle.loads(data)


def canonical_bytes(state: Any) -> bytes:
    """Pickle bytes that depend only on the state's value, not on which sub-values share one object.

    Plain pickling memoizes objects met twice, so two equal states whose tuples are shared differently would
    pickle (and hash) differently; with the memo off (`fast` mode) the bytes are a function of the value alone.
    """
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, _PROTOCOL)
    pickler.fast = True
    pickler.dump(state)
    return buf.getvalue()


def fingerprint(state: Any) -> int:
    """The 64-bit fingerprint of a state: equal states, equal fingerprints, in every process."""
    return _xxh64(canonical_bytes(state))


def combine(fingerprints: Sequence[int]) -> int:
    """One 64-bit fingerprint of a sequence of 64-bit fingerprints (order matters)."""
    return _xxh64(array("Q", fingerprints).tobytes())


class PartFingerprints:
    """Fingerprints of a record's parts, memoized by value, and the record's fingerprint combined from them.

    An explorer's successive states share most of their parts (operations copy on write), so most part
    fingerprints are one dictionary lookup; only the parts a step changed are pickled. The record's fingerprint
    is `combine` of its parts' `fingerprint`s: a function of the value alone (stable in every process), but not
    the same number as `fingerprint(record)`. The memo is dropped when it grows past `limit` entries per part
    and is never pickled (a model shipped to Spark workers takes none of it along).
    """

    def __init__(self, parts: int, limit: int = 1 << 16) -> None:
        self.memos: list[dict[Any, int]] = [{} for _ in range(parts)]
        self.limit = limit

    def __getstate__(self) -> dict[str, Any]:
        return {"memos": [{} for _ in self.memos], "limit": self.limit}

    def clear(self) -> None:
        """Forget every memoized part fingerprint."""
        for memo in self.memos:
            memo.clear()

    def store(self, index: int, key: Any, part: Any) -> int:
        """Fingerprint `part` and remember it as part `index` under `key` (callers look in `memos` first)."""
        memo = self.memos[index]
        if len(memo) >= self.limit:
            memo.clear()
        fp = memo[key] = fingerprint(part)
        return fp


def encode_compressed(state: Any) -> bytes:
    """The canonical encoding, deflated, for storage where bytes matter more than CPU."""
    return zlib.compress(encode(state), 1)


def decode_compressed(data: bytes) -> Any:
    """Inverse of `encode_compressed`."""
    return decode(zlib.decompress(data))
