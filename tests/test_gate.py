"""kcm gate: the shipped inputs pass; each stage fails on its own kind of bad input with a counterexample."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.gate.gate import (
    FAILED,
    PASSED,
    SKIPPED,
    GateInputError,
    explore_stage,
    load_explore_config,
    prove_stage,
    run_gate,
    trace_expectations,
    traces_stage,
)

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "specs" / "traces"
LIBRARY = ROOT / "specs" / "scenarios"


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", "gate", *args], capture_output=True, text=True)


def test_the_shipped_gate_passes_every_stage():
    report = run_gate()
    assert report.ok, report.text()
    assert [(s.name, s.status) for s in report.stages] == [
        ("scenarios", PASSED), ("prove", PASSED), ("explore", PASSED), ("traces", PASSED)]
    assert f"{len(list(LIBRARY.rglob('*.json')))} scenarios" in report.stages[0].summary
    assert report.stages[2].summary.startswith("tiny: ")


def test_a_failing_scenario_fails_its_stage_and_the_others_still_run(tmp_path):
    doc = json.loads((LIBRARY / "ops" / "broker-failure.json").read_text())
    doc["expect"]["partitions"]["t-0"]["leader"] = 0
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "wrong.json").write_text(json.dumps(doc))
    shutil.copy(LIBRARY / "ops" / "broker-failure.json", tmp_path / "sc" / "right.json")
    report = run_gate(scenarios=tmp_path / "sc", skip=["prove"])
    assert [s.status for s in report.stages] == [FAILED, SKIPPED, PASSED, PASSED]
    assert [(c.name, c.status) for c in report.stages[0].cases] == [("right.json", PASSED), ("wrong.json", FAILED)]
    assert report.failed().counterexample == {"scenario": "wrong.json",
                                              "mismatches": ["expect.partitions.t-0.leader: expected 0, got 2"]}
    (tmp_path / "sc" / "wrong.json").write_bytes(b"\x00\xff")
    assert "invalid scenario" in run_gate(scenarios=tmp_path / "sc").failed().failure


def test_prove_stage_fails_with_a_trace_when_a_bug_is_seeded(monkeypatch):
    from kcm.checkers.prove import encoding

    original = encoding.Encoding.__init__

    def no_bump(self, rules, brokers, **kw):
        original(self, rules, brokers, **dict(kw, bump_epoch_on_election=False))

    monkeypatch.setattr(encoding.Encoding, "__init__", no_bump)
    stage = prove_stage(brokers=2)
    assert stage.status == FAILED and stage.failure.startswith("OneLiveLeaderPerEpoch")
    assert stage.counterexample["states"]


def test_explore_stage_fails_with_the_shortest_counterexample():
    stage = explore_stage(load_explore_config("unclean"), max_states=3000)
    assert stage.status == FAILED and "AckedRecordsSurvive" in stage.failure
    ops = [step["op"] for step in stage.counterexample["scenario"]["steps"]]
    assert ops == ["create_topic", "produce", "isr_shrink", "broker_fail"]


def _traces(tmp_path, names):
    folder = tmp_path / "traces"
    folder.mkdir()
    for new, old in names.items():
        shutil.copy(TRACES / old, folder / new)
    return folder


def test_trace_expectations_from_manifest_or_name(tmp_path):
    folder = _traces(tmp_path, {"ok.jsonl": "valid_create_online.jsonl",
                                "invalid_line3_x.jsonl": "invalid_line3_skip_new.jsonl",
                                "invalid_somewhere.jsonl": "invalid_hw_above_leo.jsonl",
                                "listed.jsonl": "invalid_leader_hw_decreases.jsonl"})
    (folder / "manifest.json").write_text(json.dumps({"expected": {"listed.jsonl": {"verdict": "violation",
                                                                                    "line": 27}}}))
    exp = trace_expectations(folder)
    assert exp == {"invalid_line3_x.jsonl": {"verdict": "violation", "line": 3},
                   "invalid_somewhere.jsonl": {"verdict": "violation", "line": None},
                   "listed.jsonl": {"verdict": "violation", "line": 27}, "ok.jsonl": {"verdict": "valid"}}
    assert traces_stage(folder, exp).status == PASSED


@pytest.mark.parametrize("expected, words", [
    ({"verdict": "violation", "line": 26}, "expected the first failure at line 26, found it at line 27"),
    ({"verdict": "violation", "line": 27, "rule": "zkVersion"}, "expected a breach of 'zkVersion'"),
    ({"verdict": "malformed", "line": 27}, "expected malformed, judged violation"),
    ({"verdict": "valid"}, "expected valid, judged violation at line 27"),
])
def test_traces_stage_fails_when_a_trace_is_judged_otherwise(tmp_path, expected, words):
    folder = _traces(tmp_path, {"t.jsonl": "invalid_leader_hw_decreases.jsonl"})
    stage = traces_stage(folder, {"t.jsonl": expected})
    assert stage.status == FAILED and words in stage.failure
    assert stage.counterexample["line"] == 27 and stage.counterexample["event"]["type"] == "produce"


@pytest.mark.parametrize("manifest, words", [
    ("{", "not a trace manifest"),
    ('{"expected": []}', "not a trace manifest"),
    ('{"expected": {"gone.jsonl": {"verdict": "valid"}}}', "not in"),
    ('{"expected": {"t.jsonl": {"verdict": "maybe"}}}', "entry 't.jsonl'"),
    ('{"expected": {"t.jsonl": {"verdict": "violation", "line": 0}}}', "entry 't.jsonl'"),
])
def test_bad_manifest_is_an_input_error(tmp_path, manifest, words):
    folder = _traces(tmp_path, {"t.jsonl": "valid_create_online.jsonl"})
    (folder / "manifest.json").write_text(manifest)
    with pytest.raises(GateInputError, match=words):
        trace_expectations(folder)


@pytest.mark.parametrize("args, words", [
    (["--traces", "no-such-folder"], "is not a folder"),
    (["--config", "no-such-config"], "no config 'no-such-config'"),
    (["--scenarios", "no-such-folder"], "is not a folder"),
    (["--nonsense"], "unrecognized arguments"),
])
def test_cli_bad_arguments_exit_2(args, words):
    done = kcm(*args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def test_cli_json_report_of_a_failing_trace(tmp_path):
    folder = _traces(tmp_path, {"ok.jsonl": "valid_create_online.jsonl",
                                "fine.jsonl": "invalid_stale_zk_version.jsonl"})
    done = kcm("--traces", str(folder), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["ok"], report["failed_stage"]) == (False, "traces")
    failed = report["stages"][-1]
    assert failed["counterexample"]["trace"] == "fine.jsonl" and failed["counterexample"]["line"] == 30
    human = kcm("--traces", str(folder))
    assert human.returncode == 1 and "gate FAILED at traces" in human.stdout and "line: 30" in human.stdout


def test_only_and_skip_choose_stages_and_unknown_ones_are_input_errors(tmp_path):
    report = run_gate(only=["traces"])
    assert [s.status for s in report.stages] == [SKIPPED, SKIPPED, SKIPPED, PASSED] and report.ok
    assert [s.status for s in run_gate(skip=["prove", "explore", "scenarios"]).stages][-1] == PASSED
    with pytest.raises(GateInputError, match="unknown stage 'proof'"):
        run_gate(only=["proof"])
    done = kcm("--only", "traces,scenarios", "--skip", "scenarios", "--json")
    assert done.returncode == 0, done.stderr
    assert [s["status"] for s in json.loads(done.stdout)["stages"]] == [SKIPPED, SKIPPED, SKIPPED, PASSED]


def test_the_self_proof_is_cached_by_model_hash(tmp_path, monkeypatch):
    from kcm.checkers.gate import gate

    monkeypatch.setenv("KCM_CACHE_DIR", str(tmp_path))
    first = prove_stage(brokers=2, cache=True)
    assert first.status == PASSED and "cached" not in first.summary
    assert [p.name for p in tmp_path.iterdir()] == [f"prove-{gate.model_hash(gate.DEFAULT_RULES, 2)}.json"]
    calls = []
    monkeypatch.setattr("kcm.checkers.prove.proofs.prove", lambda *a, **k: calls.append(a))
    second = prove_stage(brokers=2, cache=True)
    assert second.status == PASSED and "cached" in second.summary and not calls
    assert gate.model_hash(gate.DEFAULT_RULES, 2) != gate.model_hash(gate.DEFAULT_RULES, 3)
