"""A frontier's states as data a checkpoint can hold and a resume can read without running code from the file.

Why: without the states, a resume rebuilds the frontier by replaying every visited state's step (one
`model.next_state` per state), which on `large` at level 13 means 11.7 million steps, longer than the search that
got there. With them, a resume decodes the frontier's states (2.5 million there) and goes on.

The encoding is derived from the model's declared state, not written by hand: a model state holds only tuples,
ints, strs, bools, None and the model's NamedTuple records (`model/fingerprint.py`), so each record becomes a
one-entry map from its type's number (its place among the records declared in `kcm.model`, in name order) to its
fields, and everything else is MessagePack's own. The pickles kcm uses inside and between its own processes
(`model/fingerprint.py`'s canonical bytes, `checkers/explore/codec.py`) never reach a file.

Reading is strict: MessagePack's decoder builds only plain values; a record's type number must name a record with
that many fields; a chunk may not inflate beyond MAX_CHUNK bytes; any failure is ValueError. Each decoded state
must then have the fingerprint the checkpoint lists for its place (`level_loop.resume_frontier`), so a damaged,
mixed-up or foreign frontier is refused, never resumed. What this does not catch is a file forged to be
consistent (the header's SHA-256 is not a signature): such a file could as well list fewer visited states.
"""

from __future__ import annotations

import importlib
import pkgutil
import zlib
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any

import numpy as np
from kcm.checkers.explore.batches import batched
from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.stopping import unless_left_out

try:
    import msgpack
except ImportError:  # an install without the explore extra: checkpoints then hold no states, resumes replay
    msgpack = None

CHUNK = 4096  # states per compressed chunk (the frontier's own chunk size: similar states compress together)
MAX_CHUNK = 256 << 20  # bytes a chunk may inflate to (a state of `large` takes about 540)


def available() -> bool:
    """Whether states can be stored and read here (MessagePack is installed)."""
    return msgpack is not None


@cache
def records() -> tuple[type, ...]:
    """The model's record types (NamedTuples declared in `kcm.model`), in the order that numbers them."""
    import kcm.model as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields") \
                    and value.__module__ == module.__name__:
                found.append(value)
    return tuple(sorted(found, key=lambda t: (t.__module__, t.__qualname__)))


@cache
def _numbers() -> dict[type, int]:
    return {kind: i for i, kind in enumerate(records())}


def _plain(value: Any, numbers: dict[type, int], memo: dict[int, Any]) -> Any:
    """`value` with each record as {type number: fields} and each tuple as a list (what MessagePack writes).

    A part met again (by identity: the states of a frontier share most of their parts) is converted once;
    `memo` is by `id`, so the caller keeps every state it covers alive while it is in use."""
    kind = type(value)
    if kind is tuple:
        key = id(value)
        out = memo.get(key)
        if out is None:
            out = memo[key] = [_plain(v, numbers, memo) for v in value]
        return out
    number = numbers.get(kind)
    if number is not None:
        key = id(value)
        out = memo.get(key)
        if out is None:
            out = memo[key] = {number: [_plain(v, numbers, memo) for v in value]}
        return out
    if kind is int or kind is str or kind is bool or value is None:
        return value
    raise TypeError(f"a {kind.__name__} in a state: not a value the stored-state encoding knows")


class _BadRecord(ValueError):
    """A map that stands for no record of the model."""


def _record(pairs: list[tuple[Any, Any]]) -> Any:
    """The record a one-entry map stands for; ValueError when it names none or the wrong number of fields."""
    kinds = records()
    if len(pairs) != 1:
        raise _BadRecord(f"a map of {len(pairs)} entries where a record was expected")
    ((number, fields),) = pairs
    if type(number) is not int or not 0 <= number < len(kinds):
        raise _BadRecord(f"record type {number!r} is not one of the model's {len(kinds)}")
    kind = kinds[number]
    if type(fields) is not tuple or len(fields) != len(kind._fields):
        raise _BadRecord(f"a {kind.__name__} needs {len(kind._fields)} fields")
    return kind._make(fields)


def state_bytes(states: Iterable[Any], give_up: Callable[[], bool] | None = None) -> Iterator[bytes]:
    """Each state's MessagePack bytes, as a chunk holds it (`chunk`); TypeError for a foreign value, StatesLeftOut
    when `give_up` (asked once a chunk) says so."""
    numbers = _numbers()
    pack = msgpack.Packer(use_bin_type=True).pack
    held: list[Any] = []  # the states since the memo was last emptied, alive while `memo` names their parts by id
    memo: dict[int, Any] = {}
    for state in states:
        if len(held) == CHUNK:
            held, memo = [], {}
            unless_left_out(give_up)
        held.append(state)
        yield pack(_plain(state, numbers, memo))


def chunk(blobs: list[bytes]) -> bytes:
    """One compressed chunk of states from their `state_bytes`: a MessagePack list is its length's header and
    its items back to back, so states packed one by one (in several processes) join into one list unchanged."""
    return zlib.compress(_list_header(len(blobs)) + b"".join(blobs), 1)


def _list_header(count: int) -> bytes:
    """MessagePack's header of a list of `count` items."""
    if count < 16:
        return bytes([0x90 | count])
    if count < 1 << 16:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


def chunks_of(blobs: Iterable[bytes]) -> Iterator[bytes]:
    """States' `state_bytes`, in order, as compressed chunks of CHUNK states each."""
    return (chunk(batch) for batch in batched(blobs, CHUNK))


def encode_chunks(states: Iterable[Any], give_up: Callable[[], bool] | None = None) -> Iterator[bytes]:
    """The states, CHUNK at a time, each chunk one compressed MessagePack list; TypeError for a foreign value,
    StatesLeftOut when `give_up` says so (`state_bytes`)."""
    return chunks_of(state_bytes(states, give_up))


def arrays(chunks: list[bytes]) -> dict[str, np.ndarray]:
    """The arrays a checkpoint keeps for these chunks: `states.data` (back to back) and `states.ends`."""
    ends = np.cumsum([len(c) for c in chunks], dtype=np.uint64)
    return {"states.data": np.frombuffer(b"".join(chunks), dtype=np.uint8), "states.ends": ends}


def pack(states: Iterable[Any], give_up: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
    """The arrays a checkpoint keeps for `states`: `states.data` (the chunks, back to back) and `states.ends`
    (each chunk's end in it); TypeError when a state holds a value the encoding does not know; StatesLeftOut
    when `give_up` says so (`state_bytes`)."""
    with no_collections():  # millions of short-lived lists: a cycle scan per 700 would revisit every live state
        return arrays(list(encode_chunks(states, give_up)))


def unpack(arrays: dict[str, np.ndarray]) -> Iterator[list[Any]]:
    """The states of `pack`'s arrays, a chunk at a time (a list of states each); ValueError when malformed."""
    data, ends = arrays.get("states.data"), arrays.get("states.ends")
    if data is None or ends is None or data.dtype != np.uint8 or ends.dtype != np.uint64 or data.ndim != 1 \
            or ends.ndim != 1:
        raise ValueError("the stored states are not a byte array and its chunk ends")
    if ends.size and (int(ends[-1]) != data.size or bool(np.any(ends[1:] < ends[:-1]))):
        raise ValueError("the stored states' chunk ends do not fit their bytes")
    if not ends.size and data.size:
        raise ValueError("stored state bytes without chunks")
    raw = data.tobytes()
    start = 0
    for end in ends.tolist():
        inflate = zlib.decompressobj()
        try:
            body = inflate.decompress(raw[start:end], MAX_CHUNK)
        except zlib.error as err:
            raise ValueError(f"a chunk of stored states does not inflate ({err})") from None
        if inflate.unconsumed_tail or not inflate.eof or inflate.unused_data:
            raise ValueError("a chunk of stored states is cut, too big or followed by other bytes")
        start = end
        try:
            batch = msgpack.unpackb(body, use_list=False, object_pairs_hook=_record, strict_map_key=False,
                                    raw=False)
        except _BadRecord:
            raise
        except Exception as err:  # noqa: BLE001 - MessagePack's errors share no base but Exception
            said = f": {str(err)[:80]}" if str(err) else ""
            raise ValueError(f"a chunk of stored states is not MessagePack ({err.__class__.__name__}{said})") from None
        if type(batch) is not tuple:
            raise ValueError("a chunk of stored states is not a list of states")
        yield list(batch)
