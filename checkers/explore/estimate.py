"""How big a config's state space is, estimated in seconds: distinct states, depth and the time per engine.

The method is level-growth extrapolation, the estimate TLC's users make by hand from its progress lines, made
systematic:

1. **Exact levels.** The local engine's own search (`bfs.search`, property checks included, so its speed is the
   speed a real run would see) explores level by level while the next level is predicted to fit a budget of
   seconds (and of states). A space that closes within the budget is counted exactly.
2. **Two levels more, by random descents** (`probes.py`: Knuth's estimator, each step's weight divided by the
   in-degree of the state reached, counted on the descent's path and scaled by what the exact levels measured).
   Where the descents cannot be made, a random sample of the last frontier is expanded instead (successors and
   fingerprints only): its successors not yet visited, per parent, over the last exact level's in-degree, give the
   next level alone.
3. **Extrapolation with a fitted decay.** The growth ratio of a level to the one before falls from level to level
   (the bounds run out: failures, epochs, records used up), and its logarithm falls about linearly (level sizes
   of a bounded space rise and fall about as a Gaussian does: on `large`, ln ratio falls 0.18-0.43 a level from 2.3
   to -2.3). Lines fitted by least squares to the last 3, 4 and 5 log ratios are continued until a level would hold
   fewer than one state; the sums give the range, their median the point. Where the fall is clearly slowing, the
   point is the geometric middle of the lines' total and that of a continuation that goes on slowing.

`estimate` is the whole of it; `project` is step 3 alone, on any list of level sizes (so the estimator can be
checked on a space's known first levels without exploring it). The engine times scale the measured speed by
ratios measured elsewhere (`ENGINE_RATIOS`, each with where it was measured).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kcm.checkers.explore import bfs, probes
from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.verdicts import indexed_successors
from kcm.checkers.explore.visited import FP

BUDGET = 60.0  # seconds of exact exploration by default (on `large`, levels 0-5 and a sample of level 6 when idle)
WINDOWS = (3, 4, 5)  # log ratios per fit: the range's members (3-5: less swayed by one level's error than 2-4)
SLACK = 1.5  # the range is widened by this factor each way: the fits agree more closely than they are right
MIN_SAMPLE = 200  # frontier states expanded at least for the sampled level (all of them if fewer)
SAMPLE_SHARE = 0.25  # the sampled level may take this share of the budget
PROBE_SHARE = 0.15  # the random descents below it (`probes.py`) at least this share, and what the exact levels left
CLEARLY = 0.9  # the last fall of the log growth ratio is clearly slower than the one before below this share of it
MIN_DECAY = 0.1  # the least fall of the log growth ratio per level assumed (measured: 0.1-0.4 where spaces narrow)
MAX_LEVELS = 10_000  # a projection longer than this has not converged (growth that does not decay)

# Speed of each engine relative to the local engine in one process, on 2 cores, and where it was measured.
ENGINE_RATIOS: tuple[tuple[str, float, str], ...] = (
    ("local", 1.0, "measured by this estimate"),
    ("local --workers 2", 1.84, "docs/performance.md: `default`, a quiet run, 37.3 s against 68.7 s"),
    ("spark local[2]", 1.09, "docs/spark-scale-out.md: `default`, 57.8 and 59.2 s against 63.2 and 64.4 s"),
    ("spark local[1]", 1.09 / 1.71, "docs/spark-scale-out.md: `default`, local[2] 1.71x local[1]"),
)


@dataclass
class Projection:
    """Level sizes continued past the known ones: the total, the depth and a range of each."""

    states: int
    low: int
    high: int
    depth: int
    depth_low: int
    depth_high: int
    levels: list[int]  # the point projection's sizes of the levels after the known ones
    converged: bool  # False when the known levels show no decay of the growth ratio yet (the high end is unknown)


@dataclass
class SizeEstimate:
    """The estimate of a config's size: what was measured, what was projected, and the times per engine."""

    exact_levels: list[int]  # sizes of the levels explored exactly (level 0: the initial states)
    closed: bool  # the exact phase explored everything: the counts are exact
    sampled_level: int | None  # the next level's size estimated (by the descents, or else a sample), or None
    sample: int  # frontier states expanded for it when the descents could not be made (else 0)
    projection: Projection
    seconds: float  # the whole estimate's time
    explored: int  # distinct states the exact phase visited
    exploration_seconds: float  # its time
    method: str
    engines: list[tuple[str, float, float, float, str]] = field(default_factory=list)  # (engine, s, low, high, why)
    probed_levels: list[int] | None = None  # the levels after the exact ones, from random descents (`probes.py`)
    probes: int = 0  # the descents made for them

    @property
    def states_per_second(self) -> float:
        """Distinct states per second of the exact phase: the local engine's speed on this config."""
        return self.explored / self.exploration_seconds if self.exploration_seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        """The fields, for `kcm explore --estimate --json`."""
        p = self.projection
        return {"estimate": True, "method": self.method, "closed": self.closed,
                "distinct_states": p.states, "distinct_states_low": p.low, "distinct_states_high": p.high,
                "depth": p.depth, "depth_low": p.depth_low, "depth_high": p.depth_high,
                "converged": p.converged, "exact_levels": self.exact_levels, "sampled_level": self.sampled_level,
                "sample": self.sample, "probed_levels": self.probed_levels, "probes": self.probes,
                "projected_levels": p.levels, "explored_states": self.explored,
                "states_per_second": round(self.states_per_second, 1), "seconds": round(self.seconds, 2),
                "engines": [{"engine": name, "seconds": round(s, 1), "seconds_low": round(lo, 1),
                             "seconds_high": round(hi, 1), "speed_from": why}
                            for name, s, lo, hi, why in self.engines]}


def project(sizes: list[int]) -> Projection:
    """Continue a space's level sizes (level 0 first) until they die out: total states and depth, with a range.

    The last level may be 0 (the space closed): then the sum is exact. The log growth ratio is continued on lines
    fitted to the last `WINDOWS` ratios, each falling by at least `MIN_DECAY` a level (a flat stretch of ratios,
    common before a space's widest levels, would otherwise never end); where the ratios fall more slowly than
    that, or rise, the projection is marked not converged and its high end widened.
    """
    if not sizes or sizes[-1] <= 0:
        known = [n for n in sizes if n > 0]
        total = sum(known)
        return Projection(total, total, total, len(known) - 1, len(known) - 1, len(known) - 1, [], True)
    ratios = [math.log(b / a) for a, b in zip(sizes, sizes[1:], strict=False)]
    fits = [probes.fit_line(ratios[-w:]) for w in WINDOWS if w <= len(ratios)] or [probes.fit_line(ratios)]
    converged = len(ratios) >= 2 and all(b <= -MIN_DECAY for b, _ in fits)
    runs = [_continue(sizes, [min(b, -MIN_DECAY)], a) for b, a in fits]
    falls = [b - a for a, b in zip(ratios, ratios[1:], strict=False)][-3:]
    slowing = len(falls) == 3 and falls[0] < falls[1] < falls[2] < 0
    runs.sort(key=sum)
    point = runs[len(runs) // 2]
    if slowing:
        # The ratio's fall is slowing down, as it does while a space is young. It may go on slowing (a space much
        # larger than the lines say: measured on `two-partitions` and `async-kip320`) or turn steeper again (most
        # spaces, once the bounds start running out): the first bounds the range from above, the point stays.
        q = falls[2] / falls[1]
        runs.append(_continue(sizes, [min(falls[2] * q ** (i + 1), -MIN_DECAY) for i in range(MAX_LEVELS)],
                              ratios[-1]))
        converged = False
    known = sum(sizes)
    totals = [known + sum(r) for r in runs]
    depths = [len(sizes) - 1 + len(r) for r in runs]
    low = max(known, int(min(totals) / SLACK))
    high = int(max(totals) * SLACK)
    states = known + sum(point)
    if slowing and falls[2] > CLEARLY * falls[1]:
        # A fall clearly slowing (not a level's noise: `tla-kip279`'s 0.171 then 0.166 is not) puts the point at
        # the geometric middle of the two outcomes, the lines' and the slowing's: a real count anywhere between
        # them is then within the square root of their ratio (the reduced `large` from levels 0-8: 0.54x by the
        # lines, 0.80x so).
        states = math.sqrt(states * totals[-1])
    return Projection(int(states), low, high, len(sizes) - 1 + len(point), min(depths),
                      max(depths) + (1 if converged else 3), [int(round(n)) for n in point], converged)


def _continue(sizes: list[int], falls: list[float], last: float) -> list[float]:
    """The levels after `sizes` when the log growth ratio, from `last`, falls by `falls` level by level (the last
    fall repeated), while a level holds at least one state."""
    out: list[float] = []
    cur, ratio = float(sizes[-1]), last
    while len(out) < MAX_LEVELS:
        ratio += falls[min(len(out), len(falls) - 1)]
        cur *= math.exp(ratio)
        if cur < 1.0:
            break
        out.append(cur)
    return out


class _Budgeted:
    """The local engine's level expansion, stopped before the level predicted to overrun the budget.

    It also counts, for the level last expanded, its new edges (distinct (parent, successor) pairs whose successor
    is new at the next level): their number over the next level's size is how many edges a new state receives.
    """

    def __init__(self, model: Any, seconds: float, max_states: int | None) -> None:
        self.model = model
        self.inner = bfs.expander(model)
        self.seconds, self.max_states = seconds, max_states
        self.sizes: list[int] = []  # each level's size (level 0: the initial states)
        self.times: list[float] = []  # seconds from one level's expansion start to the next's
        self.visited = 0
        self.start = time.perf_counter()
        self.mark = self.start
        self.last: list[Any] | None = None  # the frontier left unexpanded (None: the space closed)
        self.rows: tuple[list[int], list[int]] = ([], [])  # the level in work: each row's parent and fingerprint
        self.meeting = 1.0  # new edges per new state at the last level expanded whole
        # The last three levels made: each state's fingerprint (sorted) and its in-degree (its parents a level up).
        self.indegrees: list[tuple[np.ndarray, np.ndarray]] = []
        self.forwards: list[float] = []  # each expansion's edges into states not visited before it: the share that
        # went a level down (not across)
        self.level_fps: np.ndarray = np.empty(0, dtype=FP)  # the fingerprints of the level last expanded

    def __call__(self, frontier: list[Any]) -> Iterable[bfs.Row]:
        now = time.perf_counter()
        if self.sizes:
            self.times.append(now - self.mark)
            self.meeting = self._meeting(frontier)
        else:
            self.level_fps = np.fromiter((self.model.fingerprint(s) for s in frontier), dtype=FP, count=len(frontier))
        self.mark = now
        self.sizes.append(len(frontier))
        self.visited += len(frontier)
        self.rows = ([], [])
        if self.enough(len(frontier), now):
            self.last = frontier
            return iter(())
        return self._recorded(self.inner(frontier))

    def _recorded(self, rows: Iterable[bfs.Row]) -> Iterable[bfs.Row]:
        parents, fps = self.rows
        for row in rows:
            parents.append(row[2])
            fps.append(row[0])
            yield row

    def _meeting(self, level: list[Any]) -> float:
        """New edges per state of `level`, from the rows of the expansion that made it; the share of those among
        the edges into `level` or back across into the level expanded goes into `forwards`."""
        parents, fps = self.rows
        new = np.fromiter((self.model.fingerprint(s) for s in level), dtype=FP, count=len(level))
        before, self.level_fps = self.level_fps, new
        if not level or not fps:
            return self.meeting
        pairs = np.unique(np.stack([np.asarray(parents, dtype=FP), np.asarray(fps, dtype=FP)], axis=1), axis=0)
        into = np.isin(pairs[:, 1], new)
        down = int(into.sum())
        across = int(np.isin(pairs[:, 1], before).sum())
        self.forwards.append(down / max(1, down + across))
        self.indegrees = [*self.indegrees[-2:], np.unique(pairs[into, 1], return_counts=True)]
        return down / len(level)

    def enough(self, frontier: int, now: float) -> bool:
        """Whether expanding a level of `frontier` states would pass the budget (predicted from the last level)."""
        if len(self.sizes) < 2 or not self.times:
            return False
        per_parent = self.times[-1] / max(1, self.sizes[-2])
        growth = self.sizes[-1] / max(1, self.sizes[-2])
        if self.max_states is not None and self.visited + frontier * growth > self.max_states:
            return True
        return now - self.start + per_parent * frontier > self.seconds


def sample_level(model: Any, frontier: list[Any], visited: Any, count: int, seed: int) -> tuple[float, int]:
    """Expand `count` random states of `frontier` (all if fewer): (new edges per parent, states expanded).

    A new edge is a (parent, successor) pair, counted once per pair, whose successor `visited` does not hold.
    """
    if count >= len(frontier):
        picked = list(frontier)
    else:  # positions in order: a frontier kept in chunks decodes each chunk once
        picked = [frontier[i] for i in sorted(random.Random(seed).sample(range(len(frontier)), count))]
    fingerprint = model.fingerprint
    edges = 0
    for state in picked:
        fps = np.fromiter({fingerprint(nxt) for _, _, nxt, _ in indexed_successors(model, state)}, dtype=FP)
        edges += int(visited.unseen(fps).sum()) if fps.size else 0
    return edges / max(1, len(picked)), len(picked)


def estimate(model: Any, seconds: float = BUDGET, max_states: int | None = None, seed: int = 0) -> SizeEstimate:
    """Estimate the number of distinct states and the depth of `model`'s whole space, and its time per engine.

    `seconds` and `max_states` bound the exact phase (a level predicted to pass either is not explored); the
    sampled level takes at most `SAMPLE_SHARE` of `seconds` more. The space is that of `--continue` (the first
    violation does not stop it).
    """
    began = time.perf_counter()
    budget = _Budgeted(model, seconds, max_states)
    with no_collections():  # as the local engine runs (collector.py), so the speed measured is its own
        found = bfs.search(model, "local", budget, progress=None, spill=None)  # levels the budget allows
    explored_seconds = time.perf_counter() - budget.start
    sizes = list(budget.sizes)
    sampled = None
    count = 0
    probed: probes.Probed | None = None
    if budget.last is None:
        sizes.append(0)  # the search ran out of states: every level is known
        method = "exact: the space closed within the budget"
    else:
        frontier = budget.last
        # Random descents first: they give the next two levels. The sample of the next level's parents is what is
        # left where they cannot (a level 0 frontier, or too few descents within their share of the budget).
        # They take what the exact levels left of the budget (the level not explored was predicted to overrun
        # it), at least their share: their spread falls as the square root of their number.
        left = seconds - (time.perf_counter() - began)
        probed = probes.descend(model, found.visited, budget.indegrees, budget.forwards,
                                max(seconds * PROBE_SHARE, left), seed)
        if probed is not None and probed.next_level >= 1:
            sampled = int(round(probed.next_level))
            sizes.append(sampled)
            if probed.after_next >= 1:
                sizes.append(int(round(probed.after_next)))
            method = (f"level-growth extrapolation: {len(budget.sizes)} levels explored exactly, levels "
                      f"{len(budget.sizes)}-{len(sizes) - 1} estimated from {probed.probes:,} random descents "
                      f"(Knuth's estimator, each step's weight divided by the in-degree of the state reached)")
        else:
            probed = None
            per_parent = budget.times[-1] / max(1, sizes[-2]) if len(sizes) > 1 and budget.times else 0.0
            room = int(seconds * SAMPLE_SHARE / per_parent) if per_parent else len(frontier)
            per_edge, count = sample_level(model, frontier, found.visited, max(MIN_SAMPLE, room), seed)
            sampled = int(round(per_edge * len(frontier) / max(budget.meeting, 1.0)))
            sizes.append(sampled)
            method = (f"level-growth extrapolation: {len(sizes) - 1} levels explored exactly, level "
                      f"{len(sizes) - 1} estimated from {count:,} of its parents")
        method += (f", then the log growth ratio continued on a line fitted to the last {WINDOWS[0]}-{WINDOWS[-1]} "
                   f"levels")
    projection = project(sizes)
    est = SizeEstimate(budget.sizes, budget.last is None, sampled,
                       count, projection, 0.0, len(found.visited), explored_seconds, method,
                       probed_levels=sizes[len(budget.sizes):] if probed is not None else None,
                       probes=probed.probes if probed is not None else 0)
    est.engines = engine_times(projection, est.states_per_second)
    est.seconds = time.perf_counter() - began
    return est


def engine_times(p: Projection, rate: float) -> list[tuple[str, float, float, float, str]]:
    """Seconds of a whole run per engine: the projected states at the measured speed, scaled by `ENGINE_RATIOS`."""
    if rate <= 0:
        return []
    return [(name, p.states / rate / ratio, p.low / rate / ratio, p.high / rate / ratio, why)
            for name, ratio, why in ENGINE_RATIOS]
