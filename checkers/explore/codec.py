"""What the Spark engine's Python processes keep between tasks: the state codec's memos and the model's.

**States as bytes**, between the driver and the Python workers: each part apart, shared parts once.

A model state is a NamedTuple of parts (the cluster's brokers, znodes, context, replicas, ...), and a step
changes one or two of them: a successor shares the others with its parent. Pickling the whole state for every
successor re-serializes those shared parts, and unpickling it builds fresh copies of every part, so two states
of one batch no longer share anything (the model's memos, keyed by value, then compare whole parts instead of
finding the very object). Here each part is pickled on its own and remembered by identity while it lives, and
each part's bytes are unpickled once per process and the object handed out again for the same bytes: encoding a
successor pickles only the parts its step changed, and decoded states share their equal parts as the local
engine's states do. A decoded part's bytes are remembered for its encoding too, so a successor's encoding
pickles only what its step changed. A part that is itself a record (the znodes, the controller's context, the
ghost history) is split the same way, field by field: most steps change one or two fields of the controller's
context, which pickled whole was the largest part of a successor's encoding (7 of 18 us on `default`). The
fields a step changed are new objects, but their values recur: a field's bytes are also kept by value (per record
type and field, as the model's part fingerprints are), so a changed field is pickled only the first time its value
is met. Each field's pickle goes without pickle's protocol and frame headers, and a record's lengths take 16 bits
unless a part is 64 KiB or more (`WIDE`).

The bytes never leave the engine (they are not fingerprinted, checkpointed or compared: a state's identity is its
fingerprint) and only kcm's own processes decode them. A state that is not a NamedTuple is pickled whole.

**The model**, unpickled by every task with its function: a fresh copy has empty memos (the part fingerprints,
the deliveries seen), which a whole search otherwise fills once. `kept_model` hands each task the copy its
process kept from an earlier task of the same search, memos warm.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

PROTOCOL = 5
WHOLE = b"\x00"  # the state pickled whole
PARTS = b"\x01"  # count, lengths (type, then each field) as 16 bits, the type's pickle, each field's encoding
WIDE = b"\x02"  # the same with 32-bit lengths, for a record with a part of 64 KiB or more
LIMIT = 1 << 17  # entries per memo before it starts afresh (each entry holds a part and its bytes)

_dumps = pickle.dumps
_loads = pickle.loads
_tuple_new = tuple.__new__  # a record from its fields, without the NamedTuple's Python-level __new__
_count = struct.Struct("<H")
FRAME = b"\x95"  # pickle's FRAME opcode, which follows the protocol header of a pickle of 4 bytes or more
MISSING = object()


class StateCodec:
    """Encodes and decodes a model's states record by record, with a memo of parts both ways (see the module)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.encoded: dict[int, tuple[Any, bytes]] = {}  # id(part) -> (the part, kept alive; its encoding)
        self.decoded: dict[bytes, Any] = {}  # a part's encoding -> the one object made of it in this process
        self.types: dict[type, bytes | None] = {}  # a record type's pickle; None: not a record
        self.formats: dict[int, struct.Struct] = {}  # 2 * count + wide -> the header layout
        # A record type -> per field, the bytes of each value met there that is not a record: value -> (its type,
        # its bytes). Keyed by field, as the model's part fingerprints are, so only values of one field meet.
        self.values: dict[type, list[dict[Any, tuple[type, bytes]]]] = {}

    def layout(self, count: int, wide: bool) -> struct.Struct:
        """The header layout of a record of `count` fields: the count, then the lengths of the type and fields."""
        fmt = self.formats.get(2 * count + wide)
        if fmt is None:
            fmt = self.formats[2 * count + wide] = struct.Struct(f"<H{count + 1}{'I' if wide else 'H'}")
        return fmt

    def head(self, kind: type) -> bytes | None:
        """The pickle of a record type (a NamedTuple), or None for any other type."""
        got = self.types.get(kind, MISSING)
        if got is MISSING:
            got = self.types[kind] = pickled(kind)[1:] if issubclass(kind, tuple) and hasattr(kind, "_make") else None
        return got

    def encode(self, state: Any) -> bytes:
        """The bytes of `state`: a record field by field (each field encoded once while it lives), else a pickle.

        A record nested in a record (the znodes, the controller's context) is split the same way, so a step that
        changes one field of it re-encodes that field only.
        """
        kind = type(state)
        head = self.head(kind)
        if head is None:
            return pickled(state)
        memo = self.encoded
        if len(memo) >= self.limit:
            memo.clear()
        fields = self.values.get(kind)
        if fields is None:
            fields = self.values[kind] = [{} for _ in state]
        chunks = [b"", head]
        lengths = [len(head)]
        longest = 0
        i = 0
        for part in state:
            got = memo.get(id(part))
            if got is None or got[0] is not part:
                sort = type(part)
                if self.head(sort) is None:
                    # A field that is not a record: its bytes by value. A step builds new objects for the fields
                    # it changes, but their values recur (a few thousand distinct ones per field in a search).
                    known = fields[i]
                    try:
                        data = known.get(part)
                    except TypeError:  # an unhashable value (never in a model state): pickled each time
                        data = (sort, pickled(part))
                    # Equal values of one field pickle alike in a model's states, which the part fingerprints
                    # rely on too (tests/test_fingerprint.py checks it on explored states); a value's own type
                    # is checked all the same (1 == True), as it costs nothing.
                    if data is None or data[0] is not sort:
                        if len(known) >= self.limit:
                            known.clear()
                        data = known[part] = (sort, pickled(part))
                    got = memo[id(part)] = (part, data[1])
                else:
                    got = memo[id(part)] = (part, self.encode(part))
            chunk = got[1]
            chunks.append(chunk)
            n = len(chunk)
            lengths.append(n)
            if n > longest:
                longest = n
            i += 1
        wide = longest > 0xFFFF or lengths[0] > 0xFFFF
        fmt = self.formats.get(2 * i + wide)
        if fmt is None:
            fmt = self.layout(i, wide)
        chunks[0] = (WIDE if wide else PARTS) + fmt.pack(i, *lengths)
        return b"".join(chunks)

    def decode(self, data: bytes) -> Any:
        """The state encoded in `data` (kcm's own bytes only), its parts shared with earlier decoded states."""
        if data[:1] == WHOLE:
            return _loads(data[1:])
        (count,) = _count.unpack_from(data, 1)
        wide = data[:1] == WIDE
        fmt = self.formats.get(2 * count + wide)
        if fmt is None:
            fmt = self.layout(count, wide)
        lengths = fmt.unpack_from(data, 1)
        memo = self.decoded
        if len(memo) >= self.limit:
            memo.clear()
        pos = 1 + fmt.size
        n = lengths[1]
        kind = memo.get(data[pos:pos + n])
        if kind is None:
            kind = memo[data[pos:pos + n]] = _loads(data[pos:pos + n])
        pos += n
        objects = []
        for j in range(2, count + 2):
            n = lengths[j]
            chunk = data[pos:pos + n]
            pos += n
            got = memo.get(chunk)
            if got is None:
                got = memo[chunk] = self.decode(chunk)
                if len(self.encoded) >= self.limit:
                    self.encoded.clear()
                self.encoded[id(got)] = (got, chunk)  # the part's encoding, should a successor keep it
            objects.append(got)
        return _tuple_new(kind, objects)


CODEC = StateCodec()  # one per process: the Python workers are reused across tasks, so the memos stay warm
KEPT_MODELS = 2  # searches whose model a process keeps (one search at a time, plus the one before)
_models: dict[str, Any] = {}


def pickled(value: Any) -> bytes:
    """WHOLE and the pickle of `value` without its protocol and frame headers (loads needs neither).

    A state has a few dozen small fields, each pickled apart: those 11 bytes were about a third of its encoding.
    """
    data = _dumps(value, PROTOCOL)
    return WHOLE + (data[11:] if data[2:3] == FRAME else data[2:])


def kept_model(search: str, model: Any) -> Any:
    """The model this process kept for `search` (an id unique to one search), else `model`, kept from now on."""
    kept = _models.get(search)
    if kept is None:
        while len(_models) >= KEPT_MODELS:
            del _models[next(iter(_models))]
        kept = _models[search] = model
    return kept
