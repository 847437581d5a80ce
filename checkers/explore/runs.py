"""The local engine's level in work on disk: new states written as found, in sorted runs, merged at the level's end.

A level's new states can only be cut into the frontier's compressed chunks (`frontier.py`) once the level is in
fingerprint order, which is known only when the level is done. So past the spill threshold `bfs.LocalLevels`
buffers the new states of the level in work a run at a time (`RUN` states, as objects), judges them, sorts the
run by fingerprint and writes it here: each record (fingerprint, parent's position, action's position, the
codec's bytes of the state, the properties it breaks and the goals it reaches) in blocks of `BLOCK` records, each
block compressed (zlib's fastest level), appended to one anonymous temporary file (unlinked at once: nothing is
left behind whatever ends the process). At the level's end `merged` reads the runs back a block at a time each
(`heapq.merge`) and gives each distinct state once, in fingerprint order, with its least link: the order and the
links the in-memory level has, so everything downstream is the same (`tests/test_frontier.py`).

A state found again in a later run is not written again: the run's fingerprints are kept (`Written`, 8 bytes a
state, sorted arrays merged as they grow), and a candidate already written is dropped. Only when the engine
yields its rows out of order (a later row with a lesser link) is a link-only record written for it, so that the
merge still keeps the least link. The bytes are this process's own; nothing here reads a user's file.
"""

from __future__ import annotations

import heapq
import json
import os
import struct
import tempfile
import zlib
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

RUN = 32_768  # new states buffered as objects before they are judged, sorted and written as one run
BLOCK = 256  # records per compressed block: the merge holds one decompressed block per run
_HEAD = struct.Struct("<II")  # records in the block, bytes of its verdicts (JSON)
# A record as the merge orders it: fingerprint, parent's position, action's position, run number (never equal
# across runs, so the tuples never compare further), the state's bytes (None: a link-only record), verdicts.
Record = tuple[int, int, int, int, bytes | None, tuple[list[str], list[str]] | None]


class Written:
    """The fingerprints written so far in one level: sorted uint64 arrays, two of like size merged into one."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []

    def __len__(self) -> int:
        return sum(int(p.size) for p in self.parts)

    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(int(p.nbytes) for p in self.parts)

    def add(self, fps: np.ndarray) -> None:
        """Add sorted, distinct fingerprints, none of them here yet."""
        if not fps.size:  # a run of link-only records (an empty part would break `has`)
            return
        self.parts.append(fps)
        # Sizes kept roughly geometric: a membership test searches a few dozen arrays at most, and each
        # fingerprint is copied O(log n) times in all.
        while len(self.parts) > 1 and self.parts[-2].size <= 2 * self.parts[-1].size:
            last = self.parts.pop()
            self.parts[-1] = np.sort(np.concatenate([self.parts[-1], last]), kind="stable")

    def has(self, fps: np.ndarray) -> np.ndarray:
        """A mask over `fps` (uint64): True where the fingerprint was written."""
        found = np.zeros(fps.size, dtype=bool)
        for part in self.parts:
            at = np.searchsorted(part, fps)
            at[at == part.size] = 0
            found |= part[at] == fps
        return found


class LevelRuns:
    """The sorted runs of one level in work, in an anonymous temporary file; `merged` reads them back in order."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder
        self.file: Any = None
        self.runs: list[array] = []  # per run: each block's offset and size in the file, in turn
        self.written = Written()
        self.records = 0
        self.bytes = 0  # compressed bytes written

    def write(self, fps: Sequence[int], parents: Sequence[int], actions: Sequence[int],
              blobs: Sequence[bytes | None], verdicts: dict[int, tuple[list[str], list[str]]]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Write one run: its records in fingerprint order (`verdicts`: by position, the properties broken and the
        goals reached, where any); the state records' fingerprints join `written`. The run's fingerprints, parent
        and action positions in the order written (for an engine that reports the level's links before merging)."""
        if not fps:
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="kcm-level-", dir=self.folder)
        keys = np.fromiter(fps, dtype=np.uint64, count=len(fps))
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        pos = order.tolist()
        par = np.asarray(parents, dtype=np.int64)[order]
        act = np.asarray(actions, dtype=np.int64)[order]
        blocks = array("Q")
        at = self.file.seek(0, os.SEEK_END)
        for lo in range(0, len(pos), BLOCK):
            hi = min(lo + BLOCK, len(pos))
            chosen = [blobs[k] for k in pos[lo:hi]]
            lengths = np.array([0 if b is None else len(b) for b in chosen], dtype=np.uint32)
            marks = [[j, *verdicts[k]] for j, k in enumerate(pos[lo:hi]) if k in verdicts]
            extra = json.dumps(marks).encode() if marks else b""
            data = zlib.compress(b"".join([_HEAD.pack(hi - lo, len(extra)), keys[lo:hi].tobytes(),
                                           par[lo:hi].tobytes(), act[lo:hi].tobytes(), lengths.tobytes(),
                                           *(b for b in chosen if b is not None), extra]), 1)
            self.file.write(data)
            blocks.append(at)
            blocks.append(len(data))
            at += len(data)
            self.bytes += len(data)
        self.runs.append(blocks)
        self.records += len(pos)
        full = np.fromiter((b is not None for b in blobs), dtype=bool, count=len(blobs))[order]
        self.written.add(keys[full])
        return keys, par, act

    def _read(self, run: int) -> Iterator[Record]:
        """The records of run `run`, one block decompressed at a time."""
        blocks = self.runs[run]
        fd = self.file.fileno()
        for b in range(0, len(blocks), 2):
            data = zlib.decompress(os.pread(fd, blocks[b + 1], blocks[b]))
            n, size = _HEAD.unpack_from(data)
            pos = _HEAD.size
            fps = np.frombuffer(data, np.uint64, n, pos).tolist()
            parents = np.frombuffer(data, np.int64, n, pos + 8 * n).tolist()
            actions = np.frombuffer(data, np.int64, n, pos + 16 * n).tolist()
            lengths = np.frombuffer(data, np.uint32, n, pos + 24 * n).tolist()
            pos += 28 * n
            marks: dict[int, tuple[list[str], list[str]]] = {}
            if size:
                marks = {j: (bad, reached) for j, bad, reached in json.loads(data[len(data) - size:])}
            for j in range(n):
                blob = None
                if lengths[j]:
                    blob = data[pos:pos + lengths[j]]
                    pos += lengths[j]
                yield fps[j], parents[j], actions[j], run, blob, marks.get(j)

    def merged(self) -> Iterator[tuple[int, int, int, bytes, list[tuple[list[str], list[str]]]]]:
        """Each distinct state written, in fingerprint order: (fingerprint, least parent position, its action
        position, the state's bytes, the verdicts written with it)."""
        if self.file is None:
            return
        self.file.flush()
        current: list[Any] = []
        for fp, parent, aidx, _, blob, marks in heapq.merge(*(self._read(r) for r in range(len(self.runs)))):
            if not current or fp != current[0]:
                if current:
                    yield current[0], current[1], current[2], current[3], current[4]
                current = [fp, parent, aidx, blob, []]  # the first record of a state has its least link
            elif current[3] is None:
                current[3] = blob
            if marks is not None:
                current[4].append(marks)
        if current:
            yield current[0], current[1], current[2], current[3], current[4]

    def close(self) -> None:
        """Drop the temporary file (it has no name: closing it frees its blocks)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        self.runs = []
        self.written = Written()
