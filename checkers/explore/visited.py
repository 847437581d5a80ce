"""The compact visited set of a breadth-first search: about 14 bytes per state instead of a dict entry.

Every visited fingerprint lives once in one sorted uint64 array (membership by binary search, a new level joins
by a merge). Parent links are two small arrays per level: the parent's position in the previous level (levels
are kept in fingerprint order) and the action's position in `model.actions(parent)`. A counterexample is rebuilt
by walking those positions back to an initial state and replaying the actions forwards with `model.next_state`,
so no state and no action object is kept for visited states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

FP = np.uint64
PARENT = np.uint32  # a position in the previous level: levels hold fewer than 2^32 states
ACTION = np.uint16  # a position in model.actions(state): fewer than 2^16 actions per state
LEVEL = np.uint8  # each visited state's level, kept while the search is at most MAX_LEVEL deep
MAX_LEVEL = int(np.iinfo(LEVEL).max)


class FingerprintSet:
    """A set of 64-bit fingerprints held as one sorted uint64 array: 8 bytes each (a Python set of ints takes
    about 60)."""

    def __init__(self, fps: Any = ()) -> None:
        self.seen = np.unique(np.asarray(fps, dtype=FP))

    def __len__(self) -> int:
        return int(self.seen.size)

    def nbytes(self) -> int:
        """Bytes held by the array."""
        return int(self.seen.nbytes)

    def unseen(self, fps: np.ndarray) -> np.ndarray:
        """A mask over `fps` (uint64): True where the fingerprint is not in the set."""
        if not self.seen.size or not fps.size:
            return np.ones(fps.size, dtype=bool)
        at = np.searchsorted(self.seen, fps)
        at[at == self.seen.size] = 0
        return self.seen[at] != fps

    def add(self, fps: np.ndarray) -> None:
        """Put `fps` (uint64, in any order, repeats and members allowed) into the set."""
        new = np.unique(np.asarray(fps, dtype=FP))
        self._merge(new[self.unseen(new)])

    def _merge(self, fps: np.ndarray) -> np.ndarray:
        """Put `fps` (sorted, unique, none in the set) in; where each went: the positions of the old array it was
        put before."""
        # Each goes in before the first member above it: one linear pass (half the time of a merge sort of both
        # runs on 15 million and 2 million fingerprints), whose positions place other arrays kept beside `seen`.
        at = np.searchsorted(self.seen, fps)
        self.seen = np.insert(self.seen, at, fps.astype(FP))
        return at


class Visited(FingerprintSet):
    """Fingerprints of every visited state plus, per level, each state's parent position and action position."""

    def __init__(self) -> None:
        super().__init__()
        self.parents: list[np.ndarray] = []  # level 0: the position in model.init_states()
        self.actions: list[np.ndarray] = []
        # Beside `seen`, each fingerprint's level: what a checkpoint stores with the frontier's states so that the
        # Spark engine, which keeps parent links by fingerprint, resumes it without a replay (one byte a state).
        # None where it is not known: a resumed file without them, or a search deeper than MAX_LEVEL.
        self.levels: np.ndarray | None = np.empty(0, dtype=LEVEL)

    def nbytes(self) -> int:
        """Bytes held by the arrays (the numbers behind bytes per state)."""
        return super().nbytes() + int(sum(a.nbytes for a in self.parents) + sum(a.nbytes for a in self.actions)) \
            + (self.levels.nbytes if self.levels is not None else 0)

    def add_level(self, fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> None:
        """Append one level: fingerprints (sorted, unique, none seen yet) with their parent and action positions."""
        if parents.size and int(parents.max()) > np.iinfo(PARENT).max:
            raise OverflowError("a level holds more than 2^32 states")
        if actions.size and int(actions.max()) > np.iinfo(ACTION).max:
            raise OverflowError("a state has more than 2^16 actions")
        level = len(self.parents)
        self.parents.append(parents.astype(PARENT))
        self.actions.append(actions.astype(ACTION))
        at = self._merge(fps)
        if self.levels is not None and level <= MAX_LEVEL:
            self.levels = np.insert(self.levels, at, LEVEL(level))
        else:
            self.levels = None

    def set_levels(self, by_level: list[np.ndarray]) -> None:
        """Each fingerprint's level, from each level's fingerprints (as a resume rebuilds them); ValueError unless
        they are the visited fingerprints, each once, in as many levels as the parent links."""
        if len(by_level) != len(self.parents) or [f.size for f in by_level] != [p.size for p in self.parents]:
            raise ValueError("the levels' fingerprints do not have the levels' sizes")
        if len(by_level) - 1 > MAX_LEVEL:
            self.levels = None
            return
        levels = np.full(self.seen.size, MAX_LEVEL, dtype=LEVEL)
        filled = np.zeros(self.seen.size, dtype=bool)
        for level, fps in enumerate(by_level):
            at = np.searchsorted(self.seen, fps)
            at[at == self.seen.size] = 0
            if fps.size and (not bool(np.all(self.seen[at] == fps)) or bool(filled[at].any())):
                raise ValueError(f"level {level}'s fingerprints are not visited ones, each in one level")
            levels[at] = level
            filled[at] = True
        if not bool(filled.all()):  # the sizes add up to the visited set's: a level repeats a fingerprint
            raise ValueError("a level holds a fingerprint twice")
        self.levels = levels

    def path(self, level: int, index: int) -> tuple[int, list[int]]:
        """(initial-state position, action positions) leading to the state at this level and position."""
        steps: list[int] = []
        while level > 0:
            steps.append(int(self.actions[level][index]))
            index = int(self.parents[level][index])
            level -= 1
        return int(self.parents[0][index]), steps[::-1]

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by name, for a checkpoint: `seen`, then `parents.L` and `actions.L` of each level L."""
        out = {"seen": self.seen}
        for level, (parents, actions) in enumerate(zip(self.parents, self.actions, strict=True)):
            out[f"parents.{level}"], out[f"actions.{level}"] = parents, actions
        return out

    @classmethod
    def from_arrays(cls, data: dict[str, np.ndarray]) -> Visited:
        """The visited set saved by `arrays`; ValueError when the arrays do not form one."""
        out = cls()
        levels = sum(1 for k in data if k.startswith("parents."))
        seen = data.get("seen")
        if seen is None or seen.dtype != FP or seen.ndim != 1:
            raise ValueError("no uint64 array of visited fingerprints")
        if seen.size > 1 and not bool(np.all(seen[1:] > seen[:-1])):
            raise ValueError("the visited fingerprints are not sorted and distinct")
        total = 0
        for level in range(levels):
            parents, actions = data.get(f"parents.{level}"), data.get(f"actions.{level}")
            if parents is None or actions is None or parents.dtype != PARENT or actions.dtype != ACTION \
                    or parents.ndim != 1 or parents.shape != actions.shape:
                raise ValueError(f"level {level}: missing or malformed parent links")
            if level and parents.size and int(parents.max()) >= out.parents[level - 1].size:
                raise ValueError(f"level {level} names a parent past the {out.parents[level - 1].size} of level "
                                 f"{level - 1}")
            out.parents.append(parents)
            out.actions.append(actions)
            total += parents.size
        if not levels or total != seen.size:
            raise ValueError(f"{total} parent links in {levels} levels for {seen.size} visited fingerprints")
        out.seen = seen
        out.levels = None  # not among these arrays: a resume that knows each level's fingerprints sets them
        return out


def replay_levels(model: Any, visited: Visited, on_level: Callable[[int, Any], None] | None = None,
                  spill: int | None = -1,
                  on_fingerprints: Callable[[int, np.ndarray], None] | None = None) -> Any:
    """The states of the last level, rebuilt level by level from the initial states and the parent links.

    Each level's states come from the previous level's by one `model.next_state` each, so this costs one step per
    visited state. A level of more than `spill` states (-1: `frontier.SPILL`; None: never) is kept as a
    `checkers/frontier.Frontier`, as the local engine keeps it, and its successors are made in the order of
    their parents (one chunk decoded at a time), written as the codec's bytes in runs sorted by position
    (`runs.py`) and merged into the level's Frontier once it is complete: no whole level is held in memory.
    `on_level(level, states)` sees every level's states on the way, a list or a `Frontier` (the Spark engine
    fingerprints them to rebuild its parent links). `on_fingerprints(level, fps)` gets each level's fingerprints in
    position order, taken from each state as it is made: reading them back from a big level would decode it
    again, which cost about as much as the replay itself. ValueError when a link points nowhere.
    """
    from kcm.checkers.explore import frontier as compact
    from kcm.checkers.explore.runs import RUN, LevelRuns

    limit = compact.SPILL if spill == -1 else spill
    codec = compact.codec_for(limit)
    inits = model.init_states()
    states: Any = []
    for root in visited.parents[0].tolist():
        if not 0 <= root < len(inits):
            raise ValueError(f"level 0 names initial state {root} of {len(inits)}")
        states.append(inits[root])
    if on_level is not None:
        on_level(0, states)
    if on_fingerprints is not None:
        on_fingerprints(0, np.fromiter((model.fingerprint(s) for s in states), dtype=FP, count=len(states)))
    for level in range(1, len(visited.parents)):
        links = visited.parents[level]
        steps = visited.actions[level]
        big = limit is not None and links.size > limit
        nxt: list[Any] = [] if big else [None] * links.size
        # A big level comes out in its parents' order: its states go to disk in runs sorted by position, merged
        # into the level's Frontier at its end (runs.py), so no whole level waits in memory, even encoded.
        disk = LevelRuns() if big else None
        where: list[int] = []
        fps = np.empty(links.size, dtype=FP) if on_fingerprints is not None else None
        # Parents in their level's order: a compact previous level is read once, chunk by chunk.
        # Siblings come together in that order, so a parent's actions are listed once for all its children.
        order = np.argsort(links, kind="stable")
        parents, aidxs = links.tolist(), steps.tolist()
        last, state, actions = -1, None, ()
        for k in order.tolist():
            parent, aidx = parents[k], aidxs[k]
            if parent != last:
                if parent >= len(states):
                    raise ValueError(f"level {level} names parent {parent} of {len(states)}")
                last, state = parent, states[parent]
                actions = model.actions(state)
            if aidx >= len(actions):
                raise ValueError(f"level {level} names action {aidx} of {len(actions)}")
            after = model.next_state(state, actions[aidx])
            if after is None:
                raise ValueError(f"level {level}: a parent link names a step that changes nothing")
            if fps is not None:
                fps[k] = model.fingerprint(after)
            if disk is None:
                nxt[k] = after
                continue
            nxt.append(codec.encode(after))
            where.append(k)
            if len(where) >= RUN:
                disk.write(where, where, where, nxt, {})
                nxt, where = [], []
        if isinstance(states, compact.Frontier):
            states.close()
        if disk is not None:
            try:
                disk.write(where, where, where, nxt, {})
                nxt, where = [], []
                states = compact.Frontier((blob for _, _, _, blob, _ in disk.merged()), codec, limit)
            finally:
                disk.close()
        else:
            states = nxt
        del nxt
        if on_level is not None:
            on_level(level, states)
        if on_fingerprints is not None:
            on_fingerprints(level, fps)
    return states


def walk(model: Any, root: int, steps: list[int]) -> Iterator[tuple[Any, Any]]:
    """Each (action, state after it) of a path given by action positions, from the initial state at position
    `root`; RuntimeError when the path does not fit the model (a checkpoint's links that are not its own)."""
    inits = model.init_states()
    if not 0 <= root < len(inits):
        raise RuntimeError(f"replay: initial state {root} of {len(inits)}")
    state = inits[root]
    for i in steps:
        actions = model.actions(state)
        if not 0 <= i < len(actions):  # a path from a checkpoint whose links do not fit (refused, not a crash)
            raise RuntimeError(f"replay: action position {i} of the {len(actions)} a state offers")
        action = actions[i]
        state = model.next_state(state, action)
        if state is None:
            raise RuntimeError(f"replay: action {action!r} does not change the state; the model is not deterministic")
        yield action, state


def replay(model: Any, root: int, steps: list[int]) -> list[Any]:
    """The actions of a path given by action positions, replayed from the initial state at position `root`."""
    return [action for action, _ in walk(model, root, steps)]
