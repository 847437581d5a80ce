"""The local engine's frontier between levels, kept compact: encoded states in chunks, past a threshold on disk.

A level's states as Python objects take 2-3 KB each (measured with `ci/bench_memory.py`: every object reachable
from a level of `large`, each counted once: 2,995 bytes a state), so on big spaces the frontier and the level in
work, not the visited set (14 bytes a state), decide how far a search gets. With `spill` set, `bfs.search` keeps a
level of more than `spill` states as a `Frontier`: the states encoded by the Spark engine's codec
(`codec.StateCodec`, the one encoding of states between kcm's processes; no second one; 1,212
bytes a state on `large`), in chunks of `CHUNK` states in the level's order, each chunk compressed (zlib's fastest
level: 152 bytes a state). The first `spill` states' chunks stay in memory; the rest go to an anonymous temporary
file (unlinked at once, so nothing is left behind whatever ends the process) and are read back one chunk at a
time. Expanding the level decodes chunk by chunk; a state asked for by position (a parent, when its children are
judged) is decoded from its chunk, the last chunk decoded being kept. While a level is expanded, its new states
past the first `spill` go to disk too, in sorted runs merged into the next `Frontier` at the level's end
(`runs.py`). The bytes are kcm's own, written and read by this process only.

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

from kcm.checkers.explore.codec import StateCodec

CHUNK = 4096  # states per chunk: one chunk is decoded at a time
# Entries per memo of the frontier's codec: enough for the parts a chunk's states share, and few enough that the
# memos, which keep their parts alive, stay far below what they save (the Spark engine's 2^17 entries took 40 MB).
MEMO = 1 << 14
SPILL = 100_000  # a level of more states is kept as a Frontier, its states past this many on disk


class Frontier:
    """A level's states, in order, encoded in chunks; the chunks past `spill` states in a temporary file."""

    def __init__(self, states: Iterable[Any], codec: StateCodec, spill: int, folder: str | None = None) -> None:
        self.codec = codec
        self.count = 0  # states in the compressed chunks (the tail's are not counted here)
        self.encoded_bytes = 0  # the chunks' bytes, compressed
        self.ram_bytes = 0  # bytes of the chunks kept in memory (offsets included) and of the tail
        # Per chunk: (its compressed bytes in memory, or None when in the file; where in the file; how many bytes;
        # each state's end offset once decompressed).
        self.chunks: list[tuple[bytes | None, int, int, array]] = []
        self.file: Any = None
        self.folder = folder
        self.cached = -1
        self.decoded: list[Any] = []
        self.spill = spill
        # The last states, fewer than CHUNK, encoded but not yet compressed: more states can follow (`append`).
        self.tail: list[bytes] = []
        self.sealed = False  # whether the last chunk holds fewer than CHUNK states (then the tail is empty)
        self.extend(states)
        self.seal()

    def seal(self) -> None:
        """Compress the tail as a last, shorter chunk (`append` opens it again)."""
        if self.tail:
            self.ram_bytes -= sum(len(b) for b in self.tail)
            self._add(self.tail, self.spill)
            self.tail = []
            self.sealed = True

    def _unseal(self) -> None:
        """Make a shorter last chunk the tail again, so that states can follow it (its bytes in the file stay
        unused: this happens once per batch of states added, not per state)."""
        self.sealed = False
        k = len(self.chunks) - 1
        self.tail = self._raw(k)
        data, _, size, ends = self.chunks.pop()
        self.encoded_bytes -= size
        self.ram_bytes -= (size if data is not None else 0) + ends.itemsize * len(ends)
        self.ram_bytes += sum(len(b) for b in self.tail)
        self.count -= len(ends)
        if self.cached == k:
            self.cached, self.decoded = -1, []

    def append(self, state: Any) -> None:
        """Add one state at the end (a model's state, or its bytes from this codec or another process's)."""
        if self.sealed:
            self._unseal()
        tail = self.tail
        tail.append(state if type(state) is bytes else self.codec.encode(state))
        self.ram_bytes += len(tail[-1])
        if len(tail) == CHUNK:
            self.ram_bytes -= sum(len(b) for b in tail)
            self._add(tail, self.spill)
            self.tail = []

    def extend(self, states: Iterable[Any]) -> None:
        """Add states at the end, in order (states already encoded, as bytes, are kept as they are)."""
        append = self.append
        for state in states:  # a state already encoded (bytes: never a model's state) is kept as it is
            append(state)

    def blobs(self, start: int, stop: int) -> list[bytes]:
        """The encoded bytes of the states at positions start to stop - 1 (to hand them to another process)."""
        out: list[bytes] = []
        full = len(self.chunks) * CHUNK
        for k in range(start // CHUNK, len(self.chunks)):
            if k * CHUNK >= stop:
                break
            out.extend(self._raw(k)[max(0, start - k * CHUNK):stop - k * CHUNK])
        if stop > full:
            out.extend(self.tail[max(0, start - full):stop - full])
        return out

    def _add(self, blobs: list[bytes], spill: int) -> None:
        end = sum(len(blob) for blob in blobs)
        # Each state's end offset in the chunk, kept in memory for chunks on disk too: 4 bytes a state (a
        # level of 4 * 10^7 states: 160 MB), 8 only for a chunk of 4 GB and more.
        ends = array("I" if end <= 0xFFFFFFFF else "Q")
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
        return self.count + len(self.tail)

    def __bool__(self) -> bool:
        return len(self) > 0

    def _raw(self, k: int) -> list[bytes]:
        """The encoded bytes of chunk `k`'s states."""
        data, at, size, ends = self.chunks[k]
        if data is None:
            self.file.flush()
            data = os.pread(self.file.fileno(), size, at)
        data = zlib.decompress(data)
        out = []
        start = 0
        for end in ends:
            out.append(data[start:end])
            start = end
        return out

    def chunk(self, k: int) -> list[Any]:
        """The states of chunk `k`, decoded (the last chunk decoded is kept); k = len(chunks): the tail."""
        decode = self.codec.decode
        if k == len(self.chunks):  # the tail grows as states are added: never kept decoded
            return [decode(blob) for blob in self.tail]
        if k != self.cached:
            self.cached, self.decoded = k, [decode(blob) for blob in self._raw(k)]
        return self.decoded

    def __getitem__(self, i: int) -> Any:
        if not 0 <= i < len(self):
            raise IndexError(i)
        k = i // CHUNK
        if k == len(self.chunks):
            return self.codec.decode(self.tail[i - k * CHUNK])
        return self.chunk(k)[i % CHUNK]

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self.chunks)):
            yield from self.chunk(k)
        decode = self.codec.decode
        for blob in list(self.tail):
            yield decode(blob)

    def close(self) -> None:
        """Drop the temporary file (it has no name: closing it frees its blocks)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        self.decoded = []
        self.cached = -1
        self.tail = []


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
