"""The size estimate (`kcm explore --estimate`, checkers/explore/estimate.py) against real counts."""

import json
import subprocess
import sys

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, estimate

# `large`'s level sizes (level 0: the initial state) from a whole run before the data plane joined it: 9,082,524
# states, depth 17.
LARGE = [1, 13, 132, 1119, 7687, 39968, 154378, 438922, 915705, 1452372, 1799198, 1737021, 1319467, 763653, 331813,
         99592, 19522, 1961]


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True)


def within(est: int, real: int, factor: float = 2.0) -> bool:
    return real / factor <= est <= real * factor


@pytest.mark.parametrize("known", [7, 8, 9])  # levels 0-6 (642,220 states) to 0-8
def test_large_from_its_first_levels(known):
    p = estimate.project(LARGE[:known])
    assert within(p.states, sum(LARGE)), (known, p.states)
    assert p.low <= sum(LARGE) <= p.high and abs(p.depth - (len(LARGE) - 1)) <= 4


def test_a_closed_space_is_counted_exactly():
    p = estimate.project([1, 4, 2, 0])
    assert (p.states, p.low, p.high, p.depth, p.levels) == (7, 7, 7, 2, [])


def test_growth_that_does_not_decay_still_gives_a_finite_estimate_and_says_so():
    p = estimate.project([1, 3, 9, 27, 81])
    assert not p.converged and 121 < p.states < p.high < 10**9


@pytest.mark.parametrize(("config", "cap", "factor"), [("unclean", 300, 2.0), ("tla-kip279", 1000, 2.5)])
def test_estimate_from_a_few_levels_is_near_and_in_its_range(config, cap, factor):
    """Four or five exact levels, fewer than a minute gives any config that does not close in it: `tla-kip279`
    from levels 0-4 comes out at 2.02x (its levels 5 and 6 from the descents 2% and 12% high, the growth ratio's
    fall not yet a line), the real count inside the range."""
    model = BoundedSystem(load_config(config))
    real = bfs.explore(model).distinct_states
    # A cap of states, not of seconds, and a budget that never ends the descents before their most (a count): the
    # levels explored and the descents do not depend on the load.
    est = estimate.estimate(model, seconds=1e6, max_states=cap)
    assert not est.closed and est.explored < real / 3 and est.sampled_level and est.probed_levels
    assert within(est.projection.states, real, factor), (est.projection.states, real)
    assert est.projection.low <= real <= est.projection.high


def test_estimate_runs_from_the_cli_as_json():
    done = kcm("explore", "--config", "unclean", "--estimate", "--max-states", "300", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["config"] == "unclean" and not out["closed"] and "extrapolation" in out["method"]
    assert out["distinct_states_low"] <= out["distinct_states"] <= out["distinct_states_high"]
    assert out["probes"] >= 100 and len(out["probed_levels"]) == 2 and "random descents" in out["method"]
    assert out["sampled_level"] == out["probed_levels"][0] and out["sample"] == 0
    engines = {e["engine"]: e for e in out["engines"]}
    assert engines["local --workers 2"]["seconds"] <= engines["local"]["seconds"]  # rounded: equal when tiny
    assert "docs/performance.md" in engines["local --workers 2"]["speed_from"]
    text = kcm("explore", "--config", "tiny", "--estimate")
    assert text.returncode == 0 and "distinct states 381, depth 8" in text.stdout


def test_estimate_refuses_what_it_cannot_join():
    done = kcm("explore", "--config", "tiny", "--estimate", "--walks", "3")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "--estimate" in done.stderr
    bad = kcm("explore", "--config", "tiny", "--estimate", "nan")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


# The reduced `large` (the dead-broker reduction, as `kcm explore` explores it): 2,296,237 states, depth 22. Its log
# growth ratio falls 0.32-0.35 a level to level 7, then ever more slowly: every line fitted before level 8 ends it
# too soon.
LARGE_REDUCED = [1, 17, 173, 1274, 6866, 26454, 71616, 141298, 222549, 293690, 334255, 335458, 298480, 234810,
                 161447, 94996, 46338, 18285, 5969, 1752, 410, 83, 16]


@pytest.mark.parametrize("known", [9, 10, 11])  # levels 0-8 to 0-10: the slowing fall is seen
def test_a_slowing_fall_puts_the_point_between_the_line_and_the_slowing(known):
    p = estimate.project(LARGE_REDUCED[:known])
    real = sum(LARGE_REDUCED)
    assert within(p.states, real, 1.3) and p.low <= real <= p.high and not p.converged, (known, p.states)
    line = estimate.project(LARGE_REDUCED[:known - 1])  # a level sooner the fall did not look slowing
    assert p.states > line.states


def _levels(model):
    """Each reachable state's BFS level and its parents (fingerprints) in the level before, by a plain search."""
    from collections import defaultdict

    from kcm.checkers.explore.verdicts import indexed_successors

    fp = model.fingerprint
    init = model.init_states()[0]
    level, path, parents = {fp(init): 0}, {fp(init): ([init], [])}, defaultdict(set)
    layer, depth = [init], 0
    while layer:
        nxt_layer = []
        for s in layer:
            for _, action, nxt, _ in indexed_successors(model, s):
                f = fp(nxt)
                if f not in level:
                    level[f] = depth + 1
                    states, actions = path[fp(s)]
                    path[f] = (states + [nxt], actions + [action])
                    nxt_layer.append(nxt)
                if level[f] == depth + 1:
                    parents[f].add(fp(s))
        layer, depth = nxt_layer, depth + 1
    return level, path, parents


@pytest.mark.parametrize(("config", "deepest"), [("tiny", 99), ("async", 7)])
def test_parents_found_on_a_path_are_true_parents_and_interleavings_are_found(config, deepest):
    """`async` offers actions equal as tuples but of other kinds (SessionExpiry(1) == BrokerFail(1)), and steps
    that leave the bounds: a reordering must take neither."""
    from kcm.checkers.explore import probes

    from tests.explored import as_explored

    model, _ = as_explored(load_config(config))
    level, path, parents = _levels(model)
    met = 0
    for f, (states, actions) in path.items():
        if not 0 < level[f] <= deepest:
            continue
        counted = probes.parents_on_path(model, states, actions, f)
        assert 1 <= counted <= len(parents[f]), (level[f], counted, len(parents[f]))
        met += counted > 1
    assert met > 50  # interleavings meet and the reorderings find them


def test_descents_size_the_two_levels_below_the_last_exact_one():
    from kcm.checkers.explore import probes
    from kcm.checkers.explore.collector import no_collections

    model = BoundedSystem(load_config("controller"))
    real = [1] + [n for n, _ in bfs.explore(model).levels]
    budget = estimate._Budgeted(model, 1e6, 3000)  # a few levels exactly, then it stops
    with no_collections():
        found = bfs.search(model, "local", budget, progress=None, spill=None)
    k = len(budget.sizes) - 1
    assert k >= 3 and budget.sizes == real[:k + 1] and budget.last is not None
    got = probes.descend(model, found.visited, budget.indegrees, budget.forwards, 1e6, seed=0, most=1500)
    assert got is not None and got.probes == 1500 and min(got.scales) >= 1.0 and 0.5 < got.forward <= 1.0
    assert within(got.next_level, real[k + 1], 1.15) and within(got.after_next, real[k + 2], 1.25), (got, real)
