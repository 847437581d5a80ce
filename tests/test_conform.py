"""`kcm conform`: the example controller conforms, each of its seeded bugs is caught, hostile adapters get a clear
verdict, failures are shrunk."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.conformance import conform
from kcm.checkers.gate.gate import library_dir

from kcm.cli import main
from tests.test_ci_formats import check_sarif

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "examples" / "toy_controller" / "adapter.py"
ADAPTER = f"{sys.executable} {TOY}"

# bug -> (the shortest library scenario that catches it, verdict, rule id for a violation / a diverging field): the
# table of docs/conformance.md
CATCHES: dict[str, tuple[str, str, str]] = {
    "no-leader-epoch-bump": ("kafka/ci-leader-fails.json", "violation", "OneLeaderPerEpoch"),
    "leader-outside-isr": ("kafka/ci-topic-creation-offline-replica.json", "violation", "LeaderInIsrInAr"),
    "stale-controller-epoch": ("kafka/psm-new-to-online.json", "violation", "ZkEpochFencing"),
    "zkversion-not-advanced": ("kafka/ci-controlled-shutdown-follower.json", "violation", "ZkVersionGrows"),
    "illegal-state-move": ("kafka/cft-handle-illegal-state.json", "violation", "ValidTransition"),
    "divergent-election": ("ops/broker-failure.json", "divergence", "partitions.t-0.leader"),
    "unclean-when-disabled": ("kafka/unclean-election-disabled.json", "violation", "CleanElection"),
    "isr-emptied": ("kafka/ci-entire-isr-offline-unclean-disabled.json", "divergence", "partitions.t-0.isr"),
    "no-controller-epoch-bump": ("kafka/ci-controller-move.json", "violation", "ControllerEpochMonotone"),
    "shutdown-keeps-isr": ("kafka/ci-controlled-shutdown-follower.json", "divergence", "partitions.test-0.isr"),
    "preferred-ignores-isr": ("kafka/election-preferred-not-in-isr.json", "violation", "LeaderInIsrInAr"),
}


def _toy_module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"toy_{name}", TOY.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(TOY.parent))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(TOY.parent))
    return module


def _folder(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "scenarios"
    for name in names:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(library_dir() / name, target)
    return folder


def _conform(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["conform", *args, "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(body, encoding="utf-8")
    return f"{sys.executable} {path}"


def test_every_seeded_bug_is_listed_with_a_catching_scenario() -> None:
    assert set(CATCHES) == set(_toy_module("controller").BUGS)
    assert len(CATCHES) >= 8


def test_the_correct_toy_conforms_on_the_library_and_skips_only_what_it_lacks(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _conform(capsys, "--adapter", ADAPTER, "--jobs", "2")
    assert code == 0, [r for r in report["results"] if r["verdict"] not in ("conforms", "skipped")]
    adapter = _toy_module("adapter")
    docs = {r["scenario"]: json.loads((library_dir() / r["scenario"]).read_text()) for r in report["results"]}
    for r in report["results"]:
        lacks = adapter.unsupported(docs[r["scenario"]])
        assert (r["verdict"] == "skipped") == bool(lacks), (r["scenario"], r["verdict"], lacks)
    assert report["counts"]["conforms"] >= 60
    # a topic created again after its deletion starts a new znode at leader epoch 0, which is no step back
    again = {r["scenario"]: r["verdict"] for r in report["results"] if "recreate" in r["scenario"]}
    assert again and set(again.values()) == {"conforms"}, again
    # every verdict says which rules the trace gave the oracle no means to judge
    assert all(isinstance(r.get("not_judged"), dict) for r in report["results"] if r["verdict"] == "conforms")


@pytest.mark.parametrize("bug", sorted(CATCHES))
def test_each_seeded_bug_is_caught_and_shrunk(bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario, verdict, rule = CATCHES[bug]
    folder = _folder(tmp_path, [scenario])
    code, report = _conform(capsys, "--adapter", f"{ADAPTER} --bug {bug}", "--scenarios", str(folder),
                            "--out", str(tmp_path / "out"))
    got = report["results"][0]
    assert code == 1 and got["verdict"] == verdict, got
    if verdict == "violation":
        assert got["rule_id"] == rule and got["line"] >= 1, got
    else:
        assert rule in {d["field"] for d in got["differences"]}, got
    assert got["shrunk_steps"] <= got["steps"]
    shrunk = json.loads(Path(got["shrunk_file"]).read_text())
    assert len(shrunk["steps"]) == got["shrunk_steps"]
    conform.validate(shrunk)  # still a valid scenario
    assert Path(got["trace_file"]).read_text().strip()


@pytest.fixture(scope="module")
def conformance_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kcm.checkers.conformance.suite import generate_suite

    out = tmp_path_factory.mktemp("conformance-suite")
    generate_suite("suites/conformance", out)
    return out


@pytest.mark.parametrize("bug", ["", *sorted(CATCHES)])
def test_the_shipped_conformance_suite_catches_every_seeded_bug(bug: str, conformance_suite: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`kcm suite --config suites/conformance` (10 scenarios, generated in seconds) fails each seeded bug and
    the correct toy conforms on all of it."""
    adapter = f"{ADAPTER} --bug {bug}" if bug else ADAPTER
    code, report = _conform(capsys, "--adapter", adapter, "--suite", str(conformance_suite), "--jobs", "2")
    failed = [r for r in report["results"] if r["verdict"] not in ("conforms", "skipped")]
    assert report["counts"]["skipped"] == 0
    if bug:
        assert code == 1 and {r["verdict"] for r in failed} <= {"violation", "divergence"}, report["counts"]
    else:
        assert code == 0 and not failed, failed


def test_shrinking_finds_a_1_minimal_failing_subsequence() -> None:
    def fails(steps: list[Any]) -> bool:
        return {3, 7} <= {s["n"] for s in steps}

    steps, runs = conform.shrink_steps([{"n": i} for i in range(20)], fails)
    assert [s["n"] for s in steps] == [3, 7]
    assert runs < 60


def test_shrunk_scenario_fails_the_same_way_when_run_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["ops/controller-epoch-story.json"])
    out = tmp_path / "out"
    adapter = f"{ADAPTER} --bug divergent-election"
    code, report = _conform(capsys, "--adapter", adapter, "--scenarios", str(folder), "--out", str(out))
    first = report["results"][0]
    assert code == 1 and first["verdict"] == "divergence" and first["shrunk_steps"] < first["steps"]
    again = tmp_path / "again"
    again.mkdir()
    shutil.copy(first["shrunk_file"], again / "shrunk.json")
    code, report = _conform(capsys, "--adapter", adapter, "--scenarios", str(again))
    assert code == 1 and report["results"][0]["differences"][0]["field"] == first["differences"][0]["field"]


HOSTILE = {
    "garbage": ("import sys; sys.stdout.buffer.write(b'hello\\x00\\xff garbage\\n')", "adapter error",
                "malformed trace"),
    "exit7": ("import sys; print('{\"type\": \"broker_up\", \"broker\": 0}'); sys.exit(7)", "adapter error",
              "exited with 7"),
    "silent": ("pass", "adapter error", "no events"),
    "skip": ("import sys; sys.exit(3)", "skipped", "not implemented"),
    "crash": ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "adapter error", "killed by signal 11"),
    "long_line": ("import sys; sys.stdout.write('{\"type\": \"broker_up\", \"broker\": 0' + ' ' * (2 << 20) + '}')",
                  "adapter error", "longer than"),
    "bad_result": ("import os\nprint('{\"type\": \"broker_up\", \"broker\": 0}')\n"
                   "open(os.environ['KCM_RESULT'], 'w').write('{\"partitions\": [1, 2')", "adapter error",
                   "malformed result document"),
    "bad_result_types": ("import os\nprint('{\"type\": \"broker_up\", \"broker\": 0}')\n"
                         "open(os.environ['KCM_RESULT'], 'w').write('{\"partitions\": {\"t-0\": {\"state\": 5}}}')",
                         "adapter error", "malformed result document"),
    "violation": ("print('{\"type\": \"controller_elected\", \"broker\": 0, \"epoch\": 2}')\n"
                  "print('{\"type\": \"controller_elected\", \"broker\": 0, \"epoch\": 1}')", "violation",
                  "ControllerEpochMonotone"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_adapter_gets_its_verdict(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body, verdict, words = HOSTILE[name]
    folder = _folder(tmp_path, ["ops/broker-failure.json"])
    code, report = _conform(capsys, "--adapter", _script(tmp_path, name, body), "--scenarios", str(folder),
                            "--junit-xml", str(tmp_path / "j.xml"), "--sarif", str(tmp_path / "s.sarif"))
    result = report["results"][0]
    assert result["verdict"] == verdict and words in result["message"], result
    assert code == (0 if verdict == "skipped" else 1)
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "conform"
    sarif = json.loads((tmp_path / "s.sarif").read_text())
    assert len(sarif["runs"][0]["results"]) == (0 if verdict == "skipped" else 1)
    check_sarif(sarif, {rule for rule, _ in conform.FAILURE_RULES.values()})  # what GitHub code scanning takes


def test_hang_is_killed_at_the_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["ops/broker-failure.json", "ops/dead-assignment.json"])
    # the adapter's child keeps the pipes open too: the whole process group is killed
    body = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n" \
           "time.sleep(60)"
    start = time.monotonic()
    code, report = _conform(capsys, "--adapter", _script(tmp_path, "hang", body), "--scenarios", str(folder),
                            "--timeout", "1", "--jobs", "2", "--out", str(tmp_path / "out"))
    assert time.monotonic() - start < 20
    assert code == 1 and [r["verdict"] for r in report["results"]] == ["timeout", "timeout"]
    assert Path(report["results"][0]["shrunk_file"]).exists()


def test_flood_is_cut_at_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["ops/broker-failure.json"])
    body = "import sys\nline = b'x' * 65535 + b'\\n'\nwhile True:\n    sys.stdout.buffer.write(line)"
    code, report = _conform(capsys, "--adapter", _script(tmp_path, "flood", body), "--scenarios", str(folder),
                            "--max-output", "2")
    result = report["results"][0]
    assert code == 1 and result["verdict"] == "adapter error" and "flooded stdout" in result["message"]


def test_adapter_gets_the_scenario_without_expectations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["kafka/psm-transitions.json"])
    seen = tmp_path / "seen.json"
    body = (f"import os, sys, shutil\nstdin = sys.stdin.read()\nshutil.copy(os.environ['KCM_SCENARIO'], {str(seen)!r})"
            "\nassert stdin == open(os.environ['KCM_SCENARIO']).read()\nsys.exit(3)")
    code, report = _conform(capsys, "--adapter", _script(tmp_path, "peek", body), "--scenarios", str(folder))
    assert code == 0 and report["results"][0]["verdict"] == "skipped"
    doc = json.loads(seen.read_text())
    assert "expect" not in doc and not any(k.startswith("expect") for s in doc["steps"] for k in s)
    assert set(doc) == {"name", "config", "steps"}


@pytest.mark.parametrize("args, words", [
    (["--adapter", "no-such-adapter-anywhere"], "no such adapter"),
    (["--adapter", "/nonexistent/adapter"], "no such adapter"),
    (["--adapter", "'unbalanced"], "cannot split"),
    (["--adapter", "python3", "--scenarios", "/nonexistent/folder"], "not a readable folder"),
    (["--adapter", "python3", "--timeout", "-1"], "positive"),
    (["--adapter", "python3", "--jobs", "0"], "between 1"),
    (["--adapter", "python3", "--suite", "no-such-config"], "no-such-config"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_suite_folder_is_read_as_kcm_suite_wrote_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["ops/broker-failure.json", "kafka/ci-controller-move.json"])
    (folder / "ops" / "broker-failure.trace.jsonl").write_text("not a scenario: a golden trace beside it\n")
    code, report = _conform(capsys, "--adapter", ADAPTER, "--suite", str(folder), "--jobs", "2")
    assert code == 0 and report["counts"]["conforms"] == 2 and report["source"] == str(folder)


def test_an_invalid_scenario_in_the_folder_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, ["ops/broker-failure.json"])
    (folder / "bad.json").write_text('{"name": "x", "config": {"brokers": [0]}, "steps": [{"op": "fly"}]}')
    ran = tmp_path / "ran"
    code = main(["conform", "--adapter", _script(tmp_path, "touch", f"open({str(ran)!r}, 'w')"),
                 "--scenarios", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and "bad.json" in err and "invalid scenario" in err and not ran.exists()


def test_compare_results_reads_an_absent_partition_as_non_existent() -> None:
    ref = {"partitions": {"t-0": {"state": "NonExistentPartition", "leader": -1, "leader_epoch": 3, "isr": [1]}},
           "replicas": {}}
    assert conform.compare_results(ref, {"partitions": {}, "replicas": {"t-0@1": "NonExistentReplica"}}) == ([], "")
    diffs, problem = conform.compare_results(ref, {"partitions": {"t-0": dict(ref["partitions"]["t-0"], isr=[2, 1])},
                                                   "replicas": {}})
    assert problem == "" and diffs == [{"field": "partitions.t-0.isr", "reference": [1], "adapter": [1, 2]}]
    assert conform.compare_results(ref, [])[1].startswith("malformed result document")


def test_rules_flag_judges_every_trace_by_that_rule_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # OfflinePartition -> OfflinePartition is a move of Kafka's table, not of the seeds'
    folder = _folder(tmp_path, ["kafka/psm-offline-to-offline.json"])
    code, report = _conform(capsys, "--adapter", ADAPTER, "--scenarios", str(folder))
    assert code == 0 and report["results"][0]["verdict"] == "conforms"
    code, report = _conform(capsys, "--adapter", ADAPTER, "--scenarios", str(folder), "--rules", "seeds")
    assert code == 1 and report["results"][0]["rule_id"] == "ValidTransition"
