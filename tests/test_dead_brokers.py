"""The dead-broker reduction (checkers/reductions/dead_brokers.py): its claim on concrete states and its gate.

The argument (docs/exploration.md, "Dead-broker reduction") is that a state and its forgotten form (what brokers
down for good kept in memory set to fixed values) offer the same actions in the same order, lead by each to states
of one class, and are judged alike, state and step. Checked here on every reachable state of configs with the data
plane, records, restarts and bug variants; a forgotten form that drops too much is caught. The differential gate:
on every config small enough for both searches (the shipped ones and each bug variant, bug in and fixed), reduced
and full searches give the same verdicts, the same violated properties and counterexamples of the same lengths.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.gate.bug_catalogue import VARIANTS
from kcm.checkers.gate.bugs import config_name, with_settings
from kcm.checkers.reductions import choice as reductions
from kcm.checkers.reductions import dead_brokers

from tests.explored import bfs_states

ROOT = Path(__file__).resolve().parent.parent
# Every shipped config that closes in seconds and has broker failures; `tla-high-watermark` has records, restarts
# none, and violates the data-plane properties that read every replica's log.
SMALL = ["tiny", "unclean", "controller", "controller-move", "mutants", "tla-high-watermark", "tla-kip279",
         "tla-kip320", "tla-leader-epoch"]
# The bug variants' fixed halves too big for a test (seconds, both searches): KIP-101 142,316 states, the KIP-320
# configs (no broker failures, so the reduction is refused there anyway).
BIG_FIXED = {"KIP-101", "KIP-320"}


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True, cwd=ROOT)


def kinds(verdicts: dict[str, str]) -> dict[str, str]:
    """Verdicts without the state counts they quote ("not violated within N states")."""
    return {name: text.split(" within ")[0] for name, text in verdicts.items()}


def agree(base: BoundedSystem, stop_at=None) -> tuple[int, int]:
    """Explore `base` in full and with the reductions `auto` picks; assert the gate; their state counts."""
    choice = reductions.choose(base, None)
    full = bfs.explore(base, stop_at=stop_at)
    reduced = bfs.explore(choice.model, stop_at=stop_at)
    props = base.properties()
    assert kinds(reduced.verdicts(props)) == kinds(full.verdicts(props))
    assert {n: len(t) for n, t in reduced.violations.items()} == {n: len(t) for n, t in full.violations.items()}
    assert reduced.distinct_states <= full.distinct_states and reduced.depth <= full.depth
    assert reduced.complete == full.complete
    return full.distinct_states, reduced.distinct_states


@pytest.mark.parametrize("name", ["tiny", "unclean", "tla-high-watermark", "tla-kip320-restart", "controller-move"])
def test_a_state_and_its_forgotten_form_are_told_apart_by_nothing(name):
    model = BoundedSystem(load_config(name))
    states = bfs_states(model, limit=6000)
    reduced = dead_brokers.DeadBrokersModel(model, model)
    assert sum(reduced.forget(s) is not s for s in states) > 100  # states with a broker down for good
    assert dead_brokers.bisimulation_failures(model, states) == []


def test_the_claim_holds_with_the_bugs_in():
    for v in VARIANTS:
        model = BoundedSystem(with_settings(load_config(config_name(v)), v.on))
        if dead_brokers.why_unsound(model) is None:
            assert dead_brokers.bisimulation_failures(model, bfs_states(model, limit=1500)) == [], v.name


def test_the_check_catches_a_forgotten_form_that_drops_what_a_property_reads(monkeypatch):
    # Forgetting the logs as well: LogsAgreeBelowHw compares every replica's log, down or not.
    model = BoundedSystem(load_config("tla-high-watermark"))
    states = bfs_states(model)
    reduced = dead_brokers.DeadBrokersModel(model, model)
    forget = reduced.forget

    def too_much(state):
        f = forget(state)
        dead = reduced.down_for_good(state)
        return f._replace(replicas=tuple((k, d._replace(log=(), hw=0) if k[2] in dead else d)
                                         for k, d in f.replicas))

    monkeypatch.setattr(dead_brokers.DeadBrokersModel, "forget", lambda self, s: too_much(s))
    assert any("verdicts differ" in f for f in dead_brokers.bisimulation_failures(model, states))


@pytest.mark.parametrize("name", SMALL)
def test_reduced_and_full_searches_agree_on_the_shipped_configs(name):
    full, reduced = agree(BoundedSystem(load_config(name)))
    assert reduced < full


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_reduced_and_full_searches_agree_with_each_bug_in_and_fixed(variant):
    base = load_config(config_name(variant))
    agree(BoundedSystem(with_settings(base, variant.on)), stop_at=variant.breaks)
    if variant.name not in BIG_FIXED:
        agree(BoundedSystem(with_settings(base, variant.off)))


def test_configs_it_cannot_serve_get_a_reason():
    assert "broker_failure" in dead_brokers.why_unsound(BoundedSystem(load_config("async-kip320")))
    none_fail = dict(load_config("tiny"), bounds={**load_config("tiny").get("bounds", {}), "max_failures": 0})
    assert "max_failures is 0" in dead_brokers.why_unsound(BoundedSystem(none_fail))
    assert "--property" in dead_brokers.why_unsound(BoundedSystem(load_config("tiny")), user_properties=True)
    choice = reductions.choose(BoundedSystem(load_config("tiny")), None, user_properties=True)
    assert "dead-brokers" in choice.refused and "dead-brokers" not in choice.applied
    with pytest.raises(reductions.BadReductions, match="dead-brokers: not sound"):
        reductions.choose(BoundedSystem(load_config("async-kip320")), ("dead-brokers",))


def test_it_wraps_symmetry_and_survives_pickling():
    four = {"name": "four", "brokers": [0, 1, 2, 3], "topics": {"t": {"0": [0, 1]}},
            "families": ["broker_failure"], "bounds": {"max_failures": 1, "max_restarts": 0}}
    base = BoundedSystem(four)
    choice = reductions.choose(base, None)
    assert choice.applied == ["symmetry", "dead-brokers"] and choice.identity() == "symmetry+dead-brokers"
    agree(base)
    states = bfs_states(base)
    copy = pickle.loads(pickle.dumps(choice.model))  # as a Spark executor or a worker gets it
    assert [copy.fingerprint(s) for s in states] == [choice.model.fingerprint(s) for s in states]


def test_the_command_names_it_and_none_turns_it_off():
    reduced = json.loads(kcm("explore", "--config", "controller", "--quiet", "--json").stdout)
    full = json.loads(kcm("explore", "--config", "controller", "--quiet", "--json", "--reductions", "none").stdout)
    assert reduced["reductions"]["applied"] == ["dead-brokers"]
    assert (reduced["distinct_states"], full["distinct_states"]) == (27697, 38611)
    assert kinds(reduced["verdicts"]) == kinds(full["verdicts"])
    text = kcm("explore", "--config", "controller", "--quiet", "--reductions-compare")
    assert "reduction dead-brokers (what a broker down for good kept in memory is forgotten): 27,697 states, " \
           "38,611 without" in text.stdout
    named = kcm("explore", "--config", "async-kip320", "--quiet", "--reductions", "dead-brokers")
    assert named.returncode == 2 and "dead-brokers: not sound for this config" in named.stderr
    assert len(named.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("engine", [
    ["--workers", "2"],
    pytest.param(["--engine", "spark", "--master", "local[2]", "--driver-below", "0"], marks=pytest.mark.spark),
], ids=["workers", "spark"])
def test_other_engines_explore_the_same_reduced_space(engine):
    if "spark" in engine:
        pytest.importorskip("pyspark")
    one = json.loads(kcm("explore", "--config", "controller-move", "--quiet", "--json").stdout)
    other = json.loads(kcm("explore", "--config", "controller-move", "--quiet", "--json", *engine).stdout)
    assert one["reductions"]["applied"] == other["reductions"]["applied"] == ["dead-brokers"]
    assert (one["distinct_states"], one["transitions"], one["depth"], one["verdicts"]) == \
        (other["distinct_states"], other["transitions"], other["depth"], other["verdicts"])
