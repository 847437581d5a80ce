"""The local engine's frontier between levels, kept compact: encoded states in chunks, past a threshold on disk.

A level's states as Python objects take 2-3 KB each (measured with `ci/bench_memory.py`: every object reachable
from a level of `large`, each counted once: 2,995 bytes a state), so on big spaces the frontier and the level in
work, not the visited set (14 bytes a state), decide how far a search gets. With `spill` set, `bfs.search` keeps a
level of more than `spill` states as a `Frontier`: the states encoded by the Spark engine's codec
(`checkers/spark_worker.StateCodec`, the one encoding of states between kcm's processes; no second one; 1,212
bytes a state on `large`), in chunks of `CHUNK` states in the level's order, each chunk compressed (zlib's fastest
level: 152 bytes a state). The first `spill` states' chunks stay in memory; the rest go to an anonymous temporary
file (unlinked at once, so nothing is left behind whatever ends the process) and are read back one chunk at a
time. Expanding the level decodes chunk by chunk; a state asked for by position (a parent, when its children are
judged) is decoded from its chunk, the last chunk decoded being kept. While a level is expanded, its new states
past the first `spill` are kept encoded too (`bfs.search`). The bytes are kcm's own, written and read by this
process only.

Decoding gives states equal to the encoded ones, so fingerprints, successors, verdicts and counterexamples are
the same as with the frontier in memory (`tests/test_frontier.py`).
"""

from __future__ import annotations

import os
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from kcm.checkers.spark_worker import StateCodec

CHUNK = 4096  # states per chunk: one chunk is decoded at a time
# Entries per memo of the frontier's codec: enough for the parts a chunk's states share, and few enough that the
# memos, which keep their parts alive, stay far below what they save (the Spark engine's 2^17 entries took 40 MB).
MEMO = 1 << 14
SPILL = 100_000  # a level of more states is kept as a Frontier, its states past this many on disk


class Frontier:
    """A level's states, in order, encoded in chunks; the chunks past `spill` states in a temporary file."""

    def __init__(self, states: Iterable[Any], codec: StateCodec, spill: int, folder: str | None = None) -> None:
        self.codec = codec
        self.count = 0
        self.encoded_bytes = 0  # the chunks' bytes, compressed
        self.ram_bytes = 0  # bytes of the chunks kept in memory (offsets included)
        # Per chunk: (its compressed bytes in memory, or None when in the file; where in the file; how many bytes;
        # each state's end offset once decompressed).
        self.chunks: list[tuple[bytes | None, int, int, array]] = []
        self.file: Any = None
        self.folder = folder
        self.cached = -1
        self.decoded: list[Any] = []
        blobs: list[bytes] = []
        for state in states:  # a state already encoded (bytes: never a model's state) is kept as it is
            blobs.append(state if type(state) is bytes else codec.encode(state))
            if len(blobs) == CHUNK:
                self._add(blobs, spill)
                blobs = []
        if blobs:
            self._add(blobs, spill)

    def _add(self, blobs: list[bytes], spill: int) -> None:
        ends = array("Q")
        end = 0
        for blob in blobs:
            end += len(blob)
            ends.append(end)
        # A chunk's states share most of their fields' bytes (the level is in fingerprint order, but siblings and
        # cousins differ in a field or two): zlib's fastest level takes 1,212 to 152 bytes a state on `large`, at
        # about 13 us a state (a state's expansion costs some 100-300 us).
        data = zlib.compress(b"".join(blobs), 1)
        self.encoded_bytes += len(data)
        if self.count + len(blobs) <= spill:
            self.chunks.append((data, 0, len(data), ends))
            self.ram_bytes += len(data) + ends.itemsize * len(ends)
        else:
            if self.file is None:
                self.file = tempfile.TemporaryFile(prefix="kcm-frontier-", dir=self.folder)
            at = self.file.seek(0, os.SEEK_END)
            self.file.write(data)
            self.chunks.append((None, at, len(data), ends))
            self.ram_bytes += ends.itemsize * len(ends)
        self.count += len(blobs)

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def chunk(self, k: int) -> list[Any]:
        """The states of chunk `k`, decoded (the last chunk decoded is kept)."""
        if k != self.cached:
            data, at, size, ends = self.chunks[k]
            if data is None:
                self.file.flush()
                data = os.pread(self.file.fileno(), size, at)
            data = zlib.decompress(data)
            decode = self.codec.decode
            start = 0
            states = []
            for end in ends:
                states.append(decode(data[start:end]))
                start = end
            self.cached, self.decoded = k, states
        return self.decoded

    def __getitem__(self, i: int) -> Any:
        if not 0 <= i < self.count:
            raise IndexError(i)
        return self.chunk(i // CHUNK)[i % CHUNK]

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self.chunks)):
            yield from self.chunk(k)

    def close(self) -> None:
        """Drop the temporary file (it has no name: closing it frees its blocks)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        self.decoded = []
        self.cached = -1


def codec_for(spill: int | None) -> StateCodec | None:
    """The codec of one search's frontiers and of the new states it keeps encoded (None when nothing spills)."""
    return None if spill is None else StateCodec(MEMO)


def next_level(states: Iterable[Any], count: int, spill: int | None, old: Any = None,
               codec: StateCodec | None = None) -> Any:
    """The next frontier of `count` states (objects, or `codec`'s bytes): a list when `spill` is None or not
    exceeded, else a `Frontier`; `old`, the frontier it replaces, is closed."""
    if isinstance(old, Frontier):
        codec = codec or old.codec
        old.close()
    if spill is None or count <= spill:
        return [codec.decode(s) if type(s) is bytes else s for s in states] if codec is not None else list(states)
    return Frontier(states, codec or StateCodec(MEMO), spill)
