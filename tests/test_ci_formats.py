"""CI formats: JUnit XML that junitparser reads, SARIF that validates against the 2.1.0 schema, GitHub annotations;
two bad traces give two failures in each."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from junitparser import Failure, JUnitXml
from kcm.checkers.oracle.oracle_trace import TRACE_ONLY
from kcm.checkers.reports.ci_formats import FAILED, KCM_RULES, Case, github, junit_xml, sarif
from kcm.properties.catalogue import ids

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "specs" / "traces"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


def kcm(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True, cwd=cwd)


def check_sarif(doc, other_ids=()):
    """Valid SARIF 2.1.0, and what GitHub code scanning needs besides: a location on every result, catalogue ids
    (or kcm's input rules, or the trace oracle's trace-only rules) as rule ids, each rule described, no absolute
    URI for a file in the repository."""
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kcm" and driver["version"] and driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    assert [r["id"] for r in rules[:len(ids())]] == list(ids())
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"], r["id"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])
    assert {r["ruleId"] for r in run["results"]} <= {*ids(), *KCM_RULES, *TRACE_ONLY, *other_ids}
    for result in run["results"]:
        (loc,) = result["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert art["uri"] and (art.get("uriBaseId") in run["originalUriBaseIds"] or art["uri"].startswith("file:"))
        if "uriBaseId" in art:
            assert not art["uri"].startswith(("/", "file:")), art


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
    check_sarif(doc, {"r1"})
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["r1"]
    (r1,) = [r for r in doc["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "r1"]
    assert r1["shortDescription"] == {"text": "rule one"}
    xml = junit_xml(cases)
    assert xml.count("<testcase ") == 2 and xml.count("<failure ") == 1


def test_an_unwritable_output_is_one_line_and_exit_2(tmp_path):
    done = kcm("check-trace", str(TRACES / "valid_create_online.jsonl"), "--junit-xml", str(tmp_path / "no" / "x.xml"))
    assert done.returncode == 2 and "--junit-xml" in done.stderr and "no folder" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def _three_failing_stages(tmp_path, monkeypatch):
    """A repository (tmp_path, with .git) whose scenarios folder holds a scenario that misses its expectation and
    one whose expect_violation is at the wrong step; the proof made to fail (elections that do not bump the leader
    epoch, on 2 brokers to stay quick); the exploration of the unclean config, which violates AckedRecordsSurvive."""
    from kcm.checkers.gate import gate
    from kcm.checkers.prove import encoding

    (tmp_path / ".git").mkdir()
    folder = tmp_path / "scenarios"
    folder.mkdir()
    doc = json.loads((ROOT / "specs" / "scenarios" / "ops" / "broker-failure.json").read_text())
    doc["expect"]["partitions"]["t-0"]["leader"] = 0
    (folder / "wrong.json").write_text(json.dumps(doc))
    doc = json.loads((ROOT / "specs" / "scenarios" / "bugs" / "kip320-stale-follower-fetch.json").read_text())
    doc["expect_violation"]["step"] -= 1
    (folder / "late.json").write_text(json.dumps(doc))
    original = encoding.Encoding.__init__

    def no_bump(self, rules, brokers, **kw):
        original(self, rules, brokers, **dict(kw, bump_epoch_on_election=False))

    monkeypatch.setattr(encoding.Encoding, "__init__", no_bump)
    proof = gate.prove_stage
    monkeypatch.setattr(gate, "prove_stage", lambda **kw: proof(**dict(kw, brokers=2)))
    monkeypatch.chdir(tmp_path)
    return folder


def test_gate_sarif_and_markdown_of_failing_scenario_prove_and_explore_stages(tmp_path, monkeypatch):
    from kcm.cli import main

    folder = _three_failing_stages(tmp_path, monkeypatch)
    sar, junit, md = tmp_path / "kcm.sarif", tmp_path / "kcm.xml", tmp_path / "summary.md"
    md.write_text("earlier step's summary\n")
    assert main(["gate", "--scenarios", str(folder), "--config", "unclean", "--no-cache", "--sarif", str(sar),
                 "--junit-xml", str(junit), "--markdown", str(md)]) == 1
    doc = json.loads(sar.read_text())
    check_sarif(doc)
    (run,) = doc["runs"]
    by_rule = {}
    for r in run["results"]:
        art = r["locations"][0]["physicalLocation"]["artifactLocation"]
        by_rule.setdefault(r["ruleId"], set()).add((art.get("uriBaseId"), art["uri"]))
    # a scenario's missed expectation, and a missed expect_violation under the property it names
    assert by_rule["expectation"] == {("%SRCROOT%", "scenarios/wrong.json")}
    assert by_rule["LogsAgreeBelowHw"] == {("%SRCROOT%", "scenarios/late.json")}
    # the proof and the exploration placed on the config file (shipped with kcm: KCMSPECS)
    assert by_rule["OneLiveLeaderPerEpoch"] == {("KCMSPECS", "configs/unclean.json")}
    assert by_rule["AckedRecordsSurvive"] == {("KCMSPECS", "configs/unclean.json")}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    assert all(r["level"] == "error" and r["message"]["text"] for r in run["results"])
    assert {name for name, _ in failures(junit)} >= {"wrong.json", "late.json", "OneLiveLeaderPerEpoch"}
    text = md.read_text()
    assert text.startswith("earlier step's summary\n## kcm gate: **FAILED**")  # appended, as GitHub's file is
    assert "| scenarios | ❌ failed |" in text and "| traces | ✅ passed |" in text
    assert "`scenarios/wrong.json`" not in text and f"`{folder / 'wrong.json'}`" in text
    # the exploration's counterexample drawn as Mermaid: the produce, the ISR shrink, the failure of the leader
    block = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "sequenceDiagram" and "participant P1 as ZooKeeper" in block
    assert [line.split(": step ")[1].split(":")[0] for line in lines if line.lstrip().startswith("Note over")] == [
        "1", "2", "3"]
    assert "P0->>P3: produce t-0 x1" in block and "broker_fail: session gone" in block
    # the violating step (the leader's failure) framed in red to the end, as the HTML report frames it
    assert "    rect rgb(253, 236, 236)\n    Note over P0,P4: step 3: " in block and lines[-1] == "    end"
    texts = [re.sub(r"#\d+;", "", line.split(": ", 1)[1]) for line in lines if ": " in line]  # entity codes aside
    assert not any(ch in text for text in texts for ch in ";{}<>`") and '#123;"op":"produce"' in block


def test_check_trace_and_check_log_append_markdown_summaries(tmp_path, two_bad):
    md = tmp_path / "summary.md"
    files = [str(two_bad / n) for n in ("ok.jsonl", "first.jsonl", "second.jsonl")]
    assert kcm("check-trace", *files, "--markdown", str(md)).returncode == 1
    log = ROOT / "specs" / "logs" / "kafka-2.8-invalid.log"
    assert kcm("check-log", str(log), "--markdown-summary", str(md)).returncode == 1  # the workflow's spelling
    text = md.read_text()
    assert text.startswith("## kcm check-trace: **2 of 3 failed**") and "## kcm check-log: **1 of 1 failed**" in text
    assert f"`{two_bad / 'first.jsonl'}` line 22" in text and f"`{log}` line 31 | EpochFencing |" in text
    assert text.count("<details><summary>detail</summary>") == 3
    # each bad trace drawn up to its violating event, which is framed and names the rule it breaks
    blocks = [b.split("\n```", 1)[0] for b in text.split("```mermaid\n")[1:]]
    assert len(blocks) == 2
    for block, line, rule in zip(blocks, (22, 30), ("HwWithinLeo", "ZkVersionGrows"), strict=True):
        lines = block.splitlines()
        assert lines[0] == "sequenceDiagram" and lines[-1] == "    end" and "P1->>P2: /controller = broker 0" in block
        assert lines[-4] == "    rect rgb(253, 236, 236)"
        note = lines[-3]
        assert note.startswith(f"    Note over P0,P5: line {line}: ") and note.endswith(f"({rule} broken here)")


def test_mermaid_text_keeps_its_syntax_out_of_labels():
    from kcm.checkers.reports.markdown_report import _mermaid_text

    assert _mermaid_text('{"a":1}; x<y #2 `z`\n100%') == '#123;"a":1#125;#59; x#60;y #35;2 #96;z#96; 100#37;'
    assert len(_mermaid_text("x" * 500)) == 120


def test_explore_markdown_summary_draws_each_counterexample(tmp_path):
    md = tmp_path / "summary.md"
    done = kcm("explore", "--config", "unclean", "--quiet", "--markdown", str(md))
    assert done.returncode == 1, done.stderr
    text = md.read_text()
    assert text.startswith("## kcm explore: config unclean: **1 violated**")
    assert "| AckedRecordsSurvive | ❌ violated |" in text and "#### Counterexample to AckedRecordsSurvive" in text
    assert text.count("```mermaid\nsequenceDiagram\n") == 1
    bad = kcm("explore", "--config", "tiny", "--quiet", "--markdown", str(tmp_path / "no" / "s.md"))
    assert bad.returncode == 2 and bad.stderr.startswith("kcm explore: --markdown") and "Traceback" not in bad.stderr
