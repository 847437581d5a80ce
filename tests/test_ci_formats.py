"""CI formats: JUnit XML that junitparser reads, SARIF that validates against the 2.1.0 schema, GitHub annotations;
two bad traces give two failures in each."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from junitparser import Failure, JUnitXml
from kcm.checkers.ci_formats import FAILED, Case, github, junit_xml, sarif

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "specs" / "traces"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


def kcm(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True, cwd=cwd)


def check_sarif(doc):
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def failures(path):
    xml = JUnitXml.fromfile(str(path))
    return [(case.name, case.result[0].message) for suite in xml for case in suite
            if case.result and isinstance(case.result[0], Failure)]


@pytest.fixture
def two_bad(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(TRACES / "valid_create_online.jsonl", folder / "ok.jsonl")
    shutil.copy(TRACES / "invalid_hw_above_leo.jsonl", folder / "first.jsonl")
    shutil.copy(TRACES / "invalid_stale_zk_version.jsonl", folder / "second.jsonl")
    return folder


def test_gate_reports_both_bad_traces_in_every_format(tmp_path, two_bad):
    junit, sar = tmp_path / "gate.xml", tmp_path / "gate.sarif"
    done = kcm("gate", "--only", "traces", "--traces", str(two_bad), "--junit-xml", str(junit), "--sarif", str(sar),
               "--github")
    assert done.returncode == 1, done.stderr
    got = failures(junit)
    assert sorted(name for name, _ in got) == ["first.jsonl", "second.jsonl"]
    doc = json.loads(sar.read_text())
    check_sarif(doc)
    results = doc["runs"][0]["results"]
    lines = {Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name:
             r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results}
    assert lines == {"first.jsonl": 22, "second.jsonl": 30}
    notes = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    assert len(notes) == 2 and all(f"file={two_bad}" in n for n in notes)
    assert any("first.jsonl,line=22," in n for n in notes) and any("second.jsonl,line=30," in n for n in notes)
    assert "FAILED traces: first.jsonl" in done.stdout and "FAILED traces: second.jsonl" in done.stdout


def test_check_trace_with_two_bad_traces_gives_two_failures(tmp_path, two_bad):
    junit, sar = tmp_path / "t.xml", tmp_path / "t.sarif"
    files = [str(two_bad / n) for n in ("ok.jsonl", "first.jsonl", "second.jsonl")]
    done = kcm("check-trace", *files, "--junit-xml", str(junit), "--sarif", str(sar), "--github")
    assert done.returncode == 1, done.stderr
    assert len(failures(junit)) == 2 and len(JUnitXml.fromfile(str(junit)).__iter__().__next__()) == 3
    doc = json.loads(sar.read_text())
    check_sarif(doc)
    assert len(doc["runs"][0]["results"]) == 2
    assert sum(line.startswith("::error file=") for line in done.stdout.splitlines()) == 2


def test_check_log_writes_its_violation_with_the_log_line(tmp_path):
    junit, sar = tmp_path / "l.xml", tmp_path / "l.sarif"
    log = ROOT / "specs" / "logs" / "kafka-2.8-invalid.log"
    done = kcm("check-log", str(log), "--junit-xml", str(junit), "--sarif", str(sar), "--github")
    assert done.returncode == 1, done.stderr
    assert len(failures(junit)) == 1
    doc = json.loads(sar.read_text())
    check_sarif(doc)
    result = doc["runs"][0]["results"][0]
    assert result["ruleId"] == "EpochFencing"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 31
    assert f"::error file={log},line=31," in done.stdout


def test_writers_escape_and_keep_passing_cases_out_of_sarif():
    cases = [Case("s", "fine"),
             Case("s", "bad, one", FAILED, "line one\nline 2: 100%", "r1", "rule one", "a,b:c.txt", 4)]
    assert github(cases) == ["::error file=a%2Cb%3Ac.txt,line=4,title=kcm s%3A bad%2C one::line one%0Aline 2: 100%25"]
    doc = sarif(cases)
    check_sarif(doc)
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["r1"]
    assert doc["runs"][0]["tool"]["driver"]["rules"] == [{"id": "r1", "shortDescription": {"text": "rule one"}}]
    xml = junit_xml(cases)
    assert xml.count("<testcase ") == 2 and xml.count("<failure ") == 1


def test_an_unwritable_output_is_one_line_and_exit_2(tmp_path):
    done = kcm("check-trace", str(TRACES / "valid_create_online.jsonl"), "--junit-xml", str(tmp_path / "no" / "x.xml"))
    assert done.returncode == 2 and "cannot write" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
