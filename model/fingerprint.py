"""A stable 64-bit fingerprint and a compact canonical encoding of any model state.

States hold only tuples, ints, strs, bools, None and NamedTuples of them, so pickle protocol 5 is
canonical for them (no sets, no dicts, no per-process hashing). xxh64 of those bytes is the same
value in every process and on every machine, unlike Python's `hash`.
"""

from __future__ import annotations

import io
import pickle
import zlib
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


def encode_compressed(state: Any) -> bytes:
    """The canonical encoding, deflated, for storage where bytes matter more than CPU."""
    return zlib.compress(encode(state), 1)


def decode_compressed(data: bytes) -> Any:
    """Inverse of `encode_compressed`."""
    return decode(zlib.decompress(data))
