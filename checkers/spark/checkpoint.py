"""The Spark engine's checkpoints, in the local engine's file format (`checkers/explore/checkpoint.py`).

The Spark engine keeps its visited set as parent links by fingerprint, `(fp, parent fp, action position)` rows;
the local engine's file keeps parent links by position (`checkers/explore/visited.py`: each level in fingerprint order,
each state's parent by its position in the previous level). Both are the same canonical BFS tree (the least
parent in fingerprint order, then the first action), so one converts into the other exactly:

- to write, the rows are collected to the driver, each state's level is found by following its parent links,
  and positions replace fingerprints (`Links.visited`); each property's witness becomes the local engine's
  `(initial-state position, action positions)` path (`Links.path`);
- to resume, the file is checked and its frontier replayed by the local engine's own loader
  (`bfs.resume_frontier`), which hands over every level's states on the way; their fingerprints turn positions
  back into fingerprints (`rows_of`). A file the Spark engine wrote with the frontier's states also keeps each
  visited fingerprint's level (one byte each, `levels`): each level's fingerprints are then read, not replayed,
  and the states decoded (`stored_states.py`).

So a checkpoint written by either engine resumes on the other, to the same counts and counterexamples. Nothing
here needs Spark: the arrays are NumPy's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from kcm.checkers.explore.bfs import resume_frontier
from kcm.checkers.explore.checkpoint import Snapshot
from kcm.checkers.explore.visited import ACTION, FP, PARENT, Visited

NO_PARENT = -1  # a root's parent in the Spark engine's rows (its action position is then its initial-state position)


def as_unsigned(longs: np.ndarray) -> np.ndarray:
    """Fingerprints stored as Spark longs (int64) as the unsigned fingerprints with the same bits."""
    return np.ascontiguousarray(longs, dtype=np.int64).view(FP)


def as_longs(fps: np.ndarray) -> np.ndarray:
    """Unsigned fingerprints as the Spark longs with the same bits."""
    return np.ascontiguousarray(fps, dtype=FP).view(np.int64)


@dataclass
class Links:
    """A visited set as parent links, sorted by fingerprint: each state's parent index, action and level."""

    fps: np.ndarray  # uint64, sorted, distinct
    parent: np.ndarray  # int64: index of the parent in `fps`, -1 for a root
    aidx: np.ndarray  # int64: action position in model.actions(parent), or the root's initial-state position
    level: np.ndarray  # int64: depth of each state

    @classmethod
    def of(cls, fps: np.ndarray, parents: np.ndarray, aidxs: np.ndarray) -> Links:
        """The links of rows `(fp, parent fp, action position)` (fingerprints as longs); ValueError if malformed."""
        u = as_unsigned(fps)
        order = np.argsort(u, kind="stable")
        u = u[order]
        if u.size > 1 and not bool(np.all(u[1:] > u[:-1])):
            raise ValueError("a fingerprint is visited twice")
        par = np.asarray(parents, dtype=np.int64)[order]
        aidx = np.asarray(aidxs, dtype=np.int64)[order]
        root = par == NO_PARENT
        wanted = as_unsigned(par)
        index = np.searchsorted(u, wanted)
        index[index == u.size] = 0
        if u.size and not bool(np.all(root | (u[index] == wanted))):
            raise ValueError("a parent link names a state that was not visited")
        index[root] = -1
        level = np.where(root, 0, -1).astype(np.int64)
        # A state's level is its parent's plus one: one pass per level settles the next level.
        while True:
            pending = level < 0
            if not bool(pending.any()):
                break
            ready = pending & (level[index] >= 0)
            if not bool(ready.any()):
                raise ValueError("parent links that reach no initial state")
            level[ready] = level[index[ready]] + 1
        return cls(u, index, aidx, level)

    def depth(self) -> int:
        """The deepest level."""
        return int(self.level.max()) if self.level.size else -1

    def visited(self) -> Visited:
        """The local engine's visited set: levels in fingerprint order, parents by position in the level before."""
        arrays: dict[str, np.ndarray] = {"seen": self.fps}
        position = np.empty(self.fps.size, dtype=np.int64)
        for level in range(self.depth() + 1):
            members = np.flatnonzero(self.level == level)  # ascending index: fingerprint order
            position[members] = np.arange(members.size)
            if level == 0:
                parents, actions = self.aidx[members], np.zeros(members.size, dtype=np.int64)
            else:
                parents, actions = position[self.parent[members]], self.aidx[members]
            arrays[f"parents.{level}"] = parents.astype(PARENT)
            arrays[f"actions.{level}"] = actions.astype(ACTION)
        return Visited.from_arrays(arrays)

    def sizes(self) -> list[int]:
        """The number of states of each level."""
        return np.bincount(self.level, minlength=self.depth() + 1).tolist() if self.level.size else []

    def path(self, fp: int) -> tuple[int, list[int]]:
        """(initial-state position, action positions) leading to the state whose fingerprint (a long) is `fp`."""
        u = np.uint64(fp & 0xFFFF_FFFF_FFFF_FFFF)
        at = int(np.searchsorted(self.fps, u))
        if at == self.fps.size or self.fps[at] != u:
            raise ValueError(f"fingerprint {fp} was not visited")
        steps: list[int] = []
        while self.parent[at] >= 0:
            steps.append(int(self.aidx[at]))
            at = int(self.parent[at])
        return int(self.aidx[at]), steps[::-1]


@dataclass
class Resumed:
    """What a Spark run resumes from: every visited row, the frontier's rows and states, the counters."""

    fps: np.ndarray  # longs (int64)
    parents: np.ndarray  # longs, NO_PARENT for a root
    aidxs: np.ndarray  # int64
    frontier: Iterator[tuple[int, int, int, Any]]  # (fp long, parent long, action position, state), read once
    meta: dict[str, Any]


def rows_of(model: Any, snapshot: Snapshot) -> Resumed:
    """The visited rows and the frontier of a checkpoint of any engine, checked (BadCheckpoint), and replayed
    unless the file stores the frontier's states and each visited state's level (`level_loop.resume_frontier`)."""
    levels: list[np.ndarray] = []

    # Each level's fingerprints, which `resume_frontier` has checked to be the visited ones, each in one level.
    visited, _, states = resume_frontier(model, snapshot, lambda _, fps: levels.append(fps))
    fps, parents, aidxs = [], [], []
    for level, (mine, links, actions) in enumerate(zip(levels, visited.parents, visited.actions, strict=True)):
        fps.append(as_longs(mine))
        if level == 0:
            parents.append(np.full(mine.size, NO_PARENT, dtype=np.int64))
            aidxs.append(links.astype(np.int64))
        else:
            parents.append(as_longs(levels[level - 1][links.astype(np.int64)]))
            aidxs.append(actions.astype(np.int64))
    last = len(levels) - 1
    # An iterator: a big resumed frontier is a `Frontier` decoded a chunk at a time, and its reader keeps bytes.
    frontier = zip(fps[last].tolist(), parents[last].tolist(), aidxs[last].tolist(), states, strict=True)
    return Resumed(np.concatenate(fps), np.concatenate(parents), np.concatenate(aidxs), frontier, snapshot.meta)
