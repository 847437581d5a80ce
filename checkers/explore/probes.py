"""Random descents below the last exact level: the sizes of the next two levels, in a few seconds.

Knuth's estimator (1975) sizes a tree's levels by random descents: a descent's weight is multiplied at each step by
the number of children it chose among, and the mean weight at depth d is the number of nodes there. In a state
graph a state of the next level has several parents in the level before (interleavings meet), and the same
estimator counts each state once per parent. Dividing each step's weight by the in-degree of the state it reached
makes it count states again: by induction, if every state x of level j carries an expected weight of 1/|L_k| on
descents that reach it, a state y of level j+1 receives, from each of its in-degree(y) parents x,
(1/|L_k|) * children(x) / (children(x) * in-degree(y)), so 1/|L_k| in all. The descents start at uniformly drawn
states of the last exact level L_k, so the mean weight times |L_k| is the size of each level below.

Two quantities are not known below L_k, as the model has no reverse step, and are measured where they are known:

- **The in-degree.** It is counted on the descent's own path: each action of the path that can be moved to its end
  (the others replayed without it, then it) gives a parent. That is how interleavings meet; histories that end
  alike otherwise (the reductions' classes, steps that overwrite one another) are missed, so the count is scaled by
  the mean ratio of the true in-degree to the counted one on the last exact levels (the expansions that made them
  counted the true one), continued on their line.
- **The forward share.** A successor not visited yet, of a state of level j > k, may lie on level j itself, not
  j+1 (a same-level edge). The share of same-level edges among the new edges of the last three exact expansions
  (their mean: it swings from level to level) scales the counted children.

Both corrections drift from level to level (on `controller` the counted in-degree misses 0-23% of the parents by
level 6 and 24-29% below), so the descents go two levels down only. Measured against real levels (`controller`
from levels 0-3, 0-4 and 0-5, `async` from 0-7 and 0-9, `controller-move`, `tla-kip279`, `default`), the first
level is within 5% and the second 5-15% high: the corrections lag their drift, and a state whose parents the
count misses tends to have children it misses too. A backtest (the same descents from level k-2, their error on
the known levels k-1 and k divided out) was tried and dropped: the error does not carry over from level to level
(it turned +10% into -20% to +23%).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from kcm.checkers.explore.verdicts import indexed_successors
from kcm.checkers.explore.visited import FP, Visited, walk

CALIBRATION = 500  # states of each of the last three exact levels whose in-degree is counted on their path (fewer
# left the scales' drift to the noise: 200 gave drifts of either sign on `controller`)
MIN_PROBES = 100  # fewer descents than this give no estimate (too noisy)
MAX_PROBES = 10_000  # descents at most (their time bounds them too)


@dataclass
class Probed:
    """What the descents measured: the sizes of the two levels below the last exact one, and the corrections used."""

    next_level: float  # estimated size of level k+1
    after_next: float  # estimated size of level k+2
    probes: int
    scales: tuple[float, float]  # true in-degree over the counted one, continued to levels k+1 and k+2
    forward: float  # the forward share of new edges taken for the expansion of level k+1


def parents_on_path(model: Any, states: list[Any], actions: list[Any], target: int) -> int:
    """Parents of the path's last state (fingerprint `target`) found by moving one action of the path to its end:
    at least the path's own last step."""
    fingerprint = model.fingerprint
    found = {fingerprint(states[-2])}
    for i in range(len(actions) - 1):
        state = states[i]
        for action in actions[i + 1:]:
            state = _step(model, state, action)
            if state is None:
                break
        else:
            after = _step(model, state, actions[i])
            if after is not None and fingerprint(after) == target:
                found.add(fingerprint(state))
    return len(found)


def _step(model: Any, state: Any, action: Any) -> Any:
    """The state after `action` as the explorer steps (`indexed_successors`: offered, and inside the bounds), or
    None where the explorer takes no such step."""
    # By kind and value: actions are named tuples, and BrokerFail(1) == SessionExpiry(1) as tuples.
    kind = type(action)
    if not any(type(offered) is kind and offered == action for offered in model.actions(state)):
        return None
    found = model.successor(state, action)
    return found[0] if found is not None else None


def _path(model: Any, visited: Visited, depth: int, pos: int) -> tuple[list[Any], list[Any]]:
    """The states and actions of the canonical path to the state at `pos` of level `depth`."""
    root, steps = visited.path(depth, pos)
    states, actions = [model.init_states()[root]], []
    for action, state in walk(model, root, steps):
        actions.append(action)
        states.append(state)
    return states, actions


def descend(model: Any, visited: Visited, indegrees: list[tuple[np.ndarray, np.ndarray]], forwards: list[float],
            seconds: float, seed: int, most: int = MAX_PROBES) -> Probed | None:
    """Random descents of two steps from the last level of `visited` (level k), for at most `seconds` and `most`
    descents: the sizes of levels k+1 and k+2, or None when too few descents could be made. `indegrees`: for the
    last (up to) three exact levels (k last), each state's fingerprint (sorted) and its true in-degree; `forwards`:
    for the expansions of levels 0 to k-1, the share of new edges that led a level down (not across). The
    in-degree's scale is continued on the line fitted to the last three levels' (the share of parents missed grows
    with depth), the forward share is the mean of the last three expansions'."""
    depth = len(visited.parents) - 1
    size = int(visited.parents[depth].size) if depth >= 1 else 0
    if not size or not indegrees or not forwards:
        return None
    rng = random.Random(seed)
    began = time.perf_counter()
    fingerprint = model.fingerprint
    indegrees = indegrees[-3:]
    levels = range(depth - len(indegrees) + 1, depth + 1)
    measured = [_scale(model, visited, level, known, rng) for level, known in zip(levels, indegrees, strict=True)]
    # A least-squares line through the last (up to) three levels' scales, continued: one sample's noise in the
    # last two alone moved the estimate of `large` from 0.74x to 1.6x from seed to seed.
    slope, last = fit_line(measured)
    scales = (max(1.0, last + slope), max(1.0, last + 2 * slope))  # levels k+1 and k+2
    # The forward share swings from level to level (0.69, 0.71, 0.81, 0.80, 0.70 on `async`): continued on a line
    # it swung further, so the last three are averaged instead.
    forward = max(0.05, sum(forwards[-3:]) / len(forwards[-3:]))
    sums = [0.0, 0.0]
    probes = 0
    while probes < most and (probes < MIN_PROBES or time.perf_counter() - began < seconds):
        probes += 1
        states, actions = _path(model, visited, depth, rng.randrange(size))
        on_path = {fingerprint(s) for s in states}
        weight = 1.0
        for step in (0, 1):
            after: dict[int, tuple[Any, Any]] = {}
            for _, action, nxt, _ in indexed_successors(model, states[-1]):
                after.setdefault(fingerprint(nxt), (action, nxt))
            keys = np.fromiter(after, dtype=FP, count=len(after))
            new = [fp for fp in keys[visited.unseen(keys)].tolist() if fp not in on_path] if keys.size else []
            if not new:
                break
            pick = new[rng.randrange(len(new))]
            action, nxt = after[pick]
            actions.append(action)
            states.append(nxt)
            on_path.add(pick)
            children = len(new) * (forward if step else 1.0)  # a new successor of level k is on level k+1
            weight *= children / (parents_on_path(model, states, actions, pick) * scales[step])
            sums[step] += weight
        if time.perf_counter() - began > 4 * seconds + 60:
            break  # states so slow to expand that even the least number of descents would overrun the budget
    if probes < MIN_PROBES or not sums[0]:
        return None
    return Probed(size * sums[0] / probes, size * sums[1] / probes, probes, scales, forward)


def fit_line(ys: list[float]) -> tuple[float, float]:
    """Least-squares line through (0, ys[0]), (1, ys[1]), ...: (slope, its value at the last point)."""
    n = len(ys)
    if n == 1:
        return 0.0, ys[0]
    mx, my = (n - 1) / 2, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in enumerate(ys)) / sum((x - mx) ** 2 for x in range(n))
    return slope, my + slope * (n - 1 - mx)


def _scale(model: Any, visited: Visited, level: int, known: tuple[np.ndarray, np.ndarray],
           rng: random.Random) -> float:
    """The mean, over a sample of `level`'s states, of the true in-degree (`known`: fingerprints sorted, in-degrees)
    over the one counted on the state's path: the factor that makes a descent's division by the counted in-degree
    unbiased on that level (a ratio of means would not be: the weights are means of inverses)."""
    fps, degrees = known
    size = int(visited.parents[level].size)
    ratios = 0.0
    picks = sorted(rng.sample(range(size), min(CALIBRATION, size)))
    for pos in picks:
        states, actions = _path(model, visited, level, pos)
        fp = model.fingerprint(states[-1])
        at = int(np.searchsorted(fps, np.uint64(fp)))
        true = int(degrees[at]) if at < fps.size and int(fps[at]) == fp else 1
        ratios += true / parents_on_path(model, states, actions, fp)
    return ratios / len(picks)
