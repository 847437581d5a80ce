"""Transition coverage: table edges, operations and selectors, per rule set, from each kind of source."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, coverage
from kcm.model.tables import rule_set

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "specs" / "scenarios"


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True)


def test_one_scenario_covers_exactly_the_moves_it_logs():
    reports = coverage.of_scenarios([LIBRARY / "ops" / "broker-failure.json"])
    (cov,) = reports.values()
    d = cov.to_dict()
    covered = {(e["from"], e["to"]) for e in d["partition_edges"]["edges"] if e["count"]}
    assert ("OnlinePartition", "OfflinePartition") in covered or ("OnlinePartition", "OnlinePartition") in covered
    assert d["partition_edges"]["total"] == len(coverage.table_edges(rule_set(cov.rules), "partition"))
    assert d["operations"]["broker_fail"] >= 1 and d["selectors"]["offline"] >= 1
    assert d["selectors"]["reassigned"] == 0


def test_the_library_is_reported_per_rule_set_and_inside_the_tables():
    reports = coverage.of_scenarios(sorted(LIBRARY.rglob("*.json")))
    assert set(reports) >= {"seeds", "kafka"}
    for rules, cov in reports.items():
        d = cov.to_dict()
        assert d["rules"] == rules and d["replica_edges"]["covered"] > 5
        assert all(d["selectors"].values()), d["selectors"]  # the library runs all four selectors


def test_the_tiny_exploration_counts_every_transition_it_takes():
    model = BoundedSystem(load_config("tiny"))
    d = coverage.of_exploration(model).to_dict()
    assert d["sources"] == ["explore tiny"]
    assert d["operations"]["broker_fail"] > 0 and d["selectors"]["offline"] > 0
    assert not d["partition_edges"]["outside_table"] and not d["replica_edges"]["outside_table"]
    assert ("NonExistentPartition", "NewPartition") in {(e["from"], e["to"]) for e in d["partition_edges"]["edges"]
                                                        if e["count"]}  # the set-up is counted too


def test_traces_and_logs_report_edges_outside_the_table():
    bad = ROOT / "specs" / "traces" / "invalid_line3_skip_new.jsonl"
    d = coverage.of_traces([str(bad)], "kafka").to_dict()
    assert d["partition_edges"]["outside_table"] or d["replica_edges"]["outside_table"]
    log = coverage.of_log(str(ROOT / "specs" / "logs" / "kafka-2.8-valid.log"), "auto", "kafka").to_dict()
    assert log["partition_edges"]["covered"] > 0


def test_cli_text_and_json():
    done = kcm("coverage", "--config", "tiny", "--json")
    assert done.returncode == 0, done.stderr
    (d,) = json.loads(done.stdout)
    assert d["rules"] == "seeds" and d["sources"] == ["explore tiny"]
    text = kcm("coverage")
    assert text.returncode == 0 and "coverage, rules kafka" in text.stdout and "not covered:" in text.stdout
    assert kcm("coverage", "--config", "nope").returncode == 2
    trace = kcm("check-trace", str(ROOT / "specs" / "traces" / "valid_create_online.jsonl"), "--coverage")
    assert trace.returncode == 0 and "partition table:" in trace.stdout
    log = kcm("check-log", str(ROOT / "specs" / "logs" / "kafka-2.8-valid.log"), "--coverage")
    assert log.returncode == 0 and "coverage, rules kafka" in log.stdout, log.stderr
    run = kcm("run", str(LIBRARY / "ops" / "broker-failure.json"), "--coverage")
    assert run.returncode == 0 and json.loads(run.stdout)["controller"] and "partition table:" in run.stderr
    explore = kcm("explore", "--config", "tiny", "--quiet", "--coverage")
    assert explore.returncode == 0 and "replica table:" in explore.stdout
    walks = kcm("explore", "--config", "tiny", "--walks", "2", "--coverage")  # a walk counts no whole search
    assert walks.returncode == 2 and walks.stderr.count("\n") == 1 and "--walks" in walks.stderr


def _setup_steps(config: str) -> int:
    return len(BoundedSystem(load_config(config)).scenario([])["steps"])


def test_the_explore_report_counts_the_runs_own_transitions(tmp_path):
    page = tmp_path / "r.html"
    done = kcm("explore", "--config", "unclean", "--continue", "--quiet", "--json", "--coverage", "--html", str(page))
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    cov = summary["coverage"]
    # One operation per transition the run took, plus the set-up steps that make the initial state.
    assert sum(cov["operations"].values()) == summary["transitions"] + _setup_steps("unclean")
    html = page.read_text()
    for machine in ("partition", "replica"):
        m = cov[f"{machine}_edges"]
        assert f"{machine} table: {m['covered']} of {m['total']} edges covered" in html
    for op, n in cov["operations"].items():
        assert f"<tr><td>{op}</td><td>{n}</td></tr>" in html


def test_a_run_stopped_at_its_first_violation_counts_only_what_it_explored():
    model = BoundedSystem(load_config("unclean"))
    stopped = bfs.explore(model, stop_at=bfs.safety_names(model), coverage=True)
    whole = bfs.explore(model, coverage=True)
    assert stopped.stopped and stopped.transitions < whole.transitions
    for found in (stopped, whole):
        ops = coverage.of_run(model, found.tally).to_dict()["operations"]
        assert sum(ops.values()) == found.transitions + _setup_steps("unclean")
    assert bfs.explore(model).tally is None  # a plain run counts nothing


def _counts(found):
    counts = found.tally.take()
    return (sorted(counts["operations"].items()), sorted(map(tuple, counts["edges"])),
            sorted(counts["selectors"].items()))


@pytest.mark.parametrize("config", ["tiny", "unclean"])
def test_coverage_is_the_same_on_one_process_and_on_workers(config):
    from kcm.checkers.explore import workers

    model = BoundedSystem(load_config(config))
    local = bfs.explore(model, coverage=True)
    shared = workers.explore(model, 2, coverage=True)
    assert local.transitions == shared.transitions
    assert _counts(local) == _counts(shared)
    assert local.goals == shared.goals and set(local.goals) == local.reached


def test_coverage_is_the_same_on_spark_executors(spark):
    from kcm.checkers.spark import bfs as spark_bfs

    model = BoundedSystem(load_config("unclean"))
    stop_at = bfs.safety_names(model)
    local = bfs.explore(model, stop_at=stop_at, coverage=True)
    found = spark_bfs.explore(model, spark, stop_at=stop_at, host_below=0, coverage=True)  # every level in tasks
    assert found.transitions == local.transitions and _counts(found) == _counts(local)
    assert found.goals == local.goals  # the same least path to each goal, whatever order the tasks ran in


def test_a_resumed_run_keeps_the_coverage_its_checkpoint_counted(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    first = kcm("explore", "--config", "tiny", "--quiet", "--json", "--coverage", "--max-states", "200",
                "--checkpoint", str(ckpt), "--checkpoint-every", "0")
    assert first.returncode == 3 and ckpt.is_file(), first.stderr
    done = kcm("explore", "--config", "tiny", "--quiet", "--json", "--coverage", "--resume", str(ckpt))
    assert done.returncode == 0, done.stderr
    whole = kcm("explore", "--config", "tiny", "--quiet", "--json", "--coverage")
    resumed, plain = json.loads(done.stdout), json.loads(whole.stdout)
    assert resumed["transitions"] == plain["transitions"] and resumed["coverage"] == plain["coverage"]


def test_malformed_coverage_counts_in_a_checkpoint_are_refused_in_one_line(tmp_path):
    import numpy as np

    from tests.test_explore_resume import _rewrite

    ckpt = tmp_path / "run.ckpt"
    assert kcm("explore", "--config", "tiny", "--quiet", "--coverage", "--max-states", "200",
               "--checkpoint", str(ckpt), "--checkpoint-every", "0").returncode == 3

    def bad_counts(arrays):
        meta = json.loads(arrays["meta"].tobytes())
        meta["coverage"]["edges"] = [["partition", "NewPartition", 3]]
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    _rewrite(ckpt, bad_counts)
    done = kcm("explore", "--config", "tiny", "--quiet", "--coverage", "--resume", str(ckpt))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{ckpt}: the coverage counts are malformed" in done.stderr
    assert kcm("explore", "--config", "tiny", "--quiet", "--resume", str(ckpt)).returncode == 0  # not counting


@pytest.mark.parametrize("config", ["unclean", "async"])
def test_the_counting_expansion_takes_the_steps_every_engine_takes(config):
    from kcm.checkers.explore.verdicts import indexed_successors

    from tests.explored import bfs_states

    model = BoundedSystem(load_config(config))
    tally = coverage.Tally()
    with tally.probing():
        for state in bfs_states(model, 4):
            counted = tally.successors(model, state)
            plain = indexed_successors(model, state)
            assert [(i, a, s) for i, a, s, _ in counted] == [(i, a, s) for i, a, s, _ in plain]
    assert sum(tally.counts()["operations"].values()) > 0
