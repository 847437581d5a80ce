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


@pytest.mark.parametrize(("config", "cap"), [("unclean", 300), ("tla-kip279", 1000)])
def test_estimate_from_a_few_levels_is_within_2x(config, cap):
    model = BoundedSystem(load_config(config))
    real = bfs.explore(model).distinct_states
    # A cap of states, not of seconds, so the levels explored (and the whole sample) do not depend on the load.
    est = estimate.estimate(model, seconds=1e6, max_states=cap)
    assert not est.closed and est.explored < real / 3 and est.sampled_level
    assert within(est.projection.states, real), (est.projection.states, real)
    assert est.projection.low <= real <= est.projection.high


def test_estimate_runs_from_the_cli_as_json():
    done = kcm("explore", "--config", "unclean", "--estimate", "--max-states", "300", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["config"] == "unclean" and not out["closed"] and "extrapolation" in out["method"]
    assert out["distinct_states_low"] <= out["distinct_states"] <= out["distinct_states_high"]
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
