"""Partial-order reduction (checkers/reductions/por.py) and the choice of reductions (checkers/reductions/choice.py).

The soundness argument (docs/exploration.md, "Partial-order reduction") rests on three claims, each checked here on
every reachable state of small two-partition configs explored without the reduction: a local step writes only its
own partition's entries (the runtime guard never fires on the full space, and does fire on a step that writes
more); each property declared partition-local judges a state as its partitions' restrictions do; and reduced and
full searches give the same verdicts, with counterexamples as short as the full search's. Configs the argument does
not cover are refused with a reason, and asking for the reduction there by name is an error.
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
from kcm.checkers.explore.verdicts import indexed_successors
from kcm.checkers.reductions import choice as reductions
from kcm.checkers.reductions import por

from tests.explored import bfs_states

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "specs" / "configs"

# Two partitions on three brokers, the data plane and one failure: both partitions' client and follower steps run
# side by side (820 states).
SMALL = {"name": "por-small", "brokers": [0, 1, 2], "topics": {"t": {"0": [0, 1], "1": [1, 2]}},
         "families": ["data_plane", "broker_failure"],
         "bounds": {"max_failures": 1, "max_restarts": 0, "max_controller_epoch": 1, "max_leader_epoch": 2,
                    "max_records": 1}}
# The same with unclean election and a restart: an acked record is lost (a violation to shorten; 6,791 states).
UNCLEAN = {"name": "por-unclean", "brokers": [0, 1], "unclean_leader_election": True, "truncation": "kip320",
           "topics": {"t": {"0": [0, 1], "1": [1, 0]}}, "families": ["broker_failure", "data_plane"],
           "bounds": {"max_failures": 1, "max_restarts": 1, "max_leader_epoch": 2, "max_records": 1},
           "properties": ["AckedRecordsSurvive", "LeaderInIsrInAr", "OneLeaderPerEpoch", "SomeRecordAcked"]}


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True, cwd=ROOT)


def write(tmp_path, cfg):
    path = tmp_path / f"{cfg['name']}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def shipped():
    return sorted(p.relative_to(CONFIGS).with_suffix("").as_posix() for p in CONFIGS.rglob("*.json"))


@pytest.mark.parametrize("name", shipped())
def test_every_shipped_config_gets_a_reason_for_each_reduction_it_is_not_given(name):
    base = BoundedSystem(load_config(name))
    choice = reductions.choose(base, None)
    assert set(choice.applied) | set(choice.refused) == set(reductions.NAMES)
    assert all(why for why in choice.refused.values())
    if "por" in choice.applied:
        assert por.why_unsound(base) is None and len(base.tps) >= 2
    else:
        assert choice.refused["por"]


def test_refusals_name_what_breaks_the_argument():
    assert "one partition" in por.why_unsound(BoundedSystem(load_config("controller")))
    assert "queue" in por.why_unsound(BoundedSystem({**SMALL, "delivery": "async"}))
    assert "deletion" in por.why_unsound(BoundedSystem({**SMALL, "families": [*SMALL["families"], "deletion"]}))
    assert "preferred" in por.why_unsound(BoundedSystem(load_config("large")))
    assert por.why_unsound(BoundedSystem(load_config("two-partitions"))) is None


def test_the_full_space_keeps_every_local_step_inside_its_partition_and_predicates_local():
    model = BoundedSystem(SMALL)
    states = bfs_states(model)
    local = 0
    for s in states:
        for _, action, nxt, _ in indexed_successors(model, s):
            tp = por.group_of(action)
            if tp is not None:
                local += 1
                assert por.footprint_escape(s, nxt, tp) is None, action
    assert local > 100
    assert por.local_predicate_failures(model, states) == []


def test_the_footprint_guard_sees_a_step_that_writes_another_partition():
    model = BoundedSystem(SMALL)
    for s in bfs_states(model, 4):
        for _, action, nxt, _ in indexed_successors(model, s):
            if por.group_of(action) is None and por.footprint_escape(s, nxt, ("t", 0)) is not None \
                    and por.footprint_escape(s, nxt, ("t", 1)) is not None:
                return  # a broker failure changes both partitions: seen from either, it escapes
    pytest.fail("no global step changed both partitions")


@pytest.mark.parametrize("wanted", [("por",), None], ids=["por", "auto"])
@pytest.mark.parametrize("cfg", [SMALL, UNCLEAN], ids=lambda c: c["name"])
def test_reduced_and_full_searches_agree_on_every_verdict(cfg, wanted):
    base = BoundedSystem(cfg)
    choice = reductions.choose(base, wanted)
    assert choice.applied == (["por"] if wanted else ["por", "dead-brokers"])  # auto: both, the second on top
    full = bfs.explore(base)
    reduced = bfs.explore(choice.model)
    assert reduced.verdicts(base.properties()) == full.verdicts(base.properties())
    assert set(reduced.violations) == set(full.violations)
    assert reduced.distinct_states <= full.distinct_states and reduced.depth <= full.depth
    shortened = reductions.shorten(choice, reduced, None, None)
    assert {n: len(t) for n, t in shortened.violations.items()} == {n: len(t) for n, t in full.violations.items()}


def test_the_command_names_its_reductions_and_prints_the_full_search_counterexample(tmp_path):
    path = write(tmp_path, UNCLEAN)
    reduced = kcm("explore", "--config", path, "--quiet", "--json")
    full = kcm("explore", "--config", path, "--quiet", "--json", "--reductions", "none")
    assert reduced.returncode == full.returncode == 1, reduced.stderr + full.stderr
    r, f = json.loads(reduced.stdout), json.loads(full.stdout)
    assert r["reductions"]["applied"] == ["por", "dead-brokers"] and "counterexamples" in r["reductions"]
    assert f["reductions"]["applied"] == [] and set(f["reductions"]["refused"]) == set()
    assert r["counterexamples"] == f["counterexamples"] and r["verdicts"] == f["verdicts"]
    text = kcm("explore", "--config", path, "--quiet", "--continue")
    assert "reduction por" in text.stdout and text.returncode == 1


@pytest.mark.parametrize("engine", [
    ["--workers", "2"],
    pytest.param(["--engine", "spark", "--master", "local[2]", "--driver-below", "0"], marks=pytest.mark.spark),
], ids=["workers", "spark"])
def test_other_engines_explore_the_same_reduced_space(tmp_path, engine):
    if "spark" in engine:
        pytest.importorskip("pyspark")
    path = write(tmp_path, SMALL)
    one = json.loads(kcm("explore", "--config", path, "--quiet", "--json").stdout)
    other = json.loads(kcm("explore", "--config", path, "--quiet", "--json", *engine).stdout)
    assert one["reductions"]["applied"] == other["reductions"]["applied"] == ["por", "dead-brokers"]
    assert (one["distinct_states"], one["transitions"], one["verdicts"]) == \
        (other["distinct_states"], other["transitions"], other["verdicts"])


def test_the_reduced_model_travels_to_other_processes():
    """Spark executors unpickle the model: its fallback to the base model must not ask for a base not yet set."""
    model = por.PartialOrderModel(BoundedSystem(SMALL))
    again = pickle.loads(pickle.dumps(model))
    assert again.tps == model.tps and again.topic_steps == model.topic_steps
    state = again.init_states()[0]
    assert again.actions(state) == model.actions(state)


@pytest.mark.parametrize("value, message", [
    ("bogus", "unknown reduction 'bogus'"),
    ("por,", "an empty name in 'por,'"),
    ("dead-brokers,,", "an empty name in 'dead-brokers,,'"),
    ("por, sym", "unknown reduction 'sym'"),
])
def test_bad_reduction_names_exit_2_with_one_line(value, message):
    out = kcm("explore", "--config", "tiny", "--reductions", value)
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_reduction_asked_for_where_it_is_unsound_is_an_error():
    out = kcm("explore", "--config", "controller", "--reductions", "por")
    assert out.returncode == 2 and "not sound for this config" in out.stderr and "one partition" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
