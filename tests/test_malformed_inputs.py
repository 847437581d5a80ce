"""Regression tests for hostile input across every reader: each case a user met (issue "Hostile input", "Seen").

Every case must end in exit 2 with one line naming the file and the place, or in the correct verdict; never a
traceback, never a half-run, never a different model run silently.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.core import bounded
from kcm.model import strictjson
from kcm.model.cluster import DELIVERY_MODES, TRUNCATION_VARIANTS
from kcm.model.tables import RULE_SETS

from kcm.cli import main

SPECS = Path(__file__).resolve().parents[1] / "specs"
HUGE = "9" * 4301

SCENARIO = {
    "config": {"brokers": [0, 1, 2]},
    "steps": [{"op": "create_topic", "topic": "t", "assignment": {"0": [0, 1, 2]}},
              {"op": "produce", "partition": "t-0", "records": 2}],
}
TRACE_LINES = (SPECS / "traces" / "valid_create_online.jsonl").read_text().splitlines()
LOG = SPECS / "logs" / "kafka-2.8-valid.log"


def _kcm(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys, *argv: str, where: str = "", name: str = "") -> str:
    """Run kcm in-process; it must exit 2 with one line on stderr naming the file and `where`."""
    code, out, err = _kcm(capsys, *argv)
    assert code == 2, (code, out[:300], err[:300])
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err[:500]
    assert where in err, err[:500]
    assert name in err, err[:500]
    assert len(err) < 1000, f"the message echoes the value: {len(err)} characters"
    return err


def _scenario_text(tmp_path: Path, text: str) -> str:
    f = tmp_path / "s.json"
    f.write_text(text)
    return str(f)


def _scenario(tmp_path: Path, doc: dict) -> str:
    return _scenario_text(tmp_path, json.dumps(doc))


def _config(tmp_path: Path, text: str) -> str:
    f = tmp_path / "c.json"
    f.write_text(text)
    return str(f)


def _trace(tmp_path: Path, lines: list[str]) -> str:
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


# ------------------------------------------------------------------------ a JSON integer of 4,301+ digits


def test_huge_integer_in_a_scenario(tmp_path, capsys):
    text = json.dumps(SCENARIO).replace('"records": 2', f'"records": {HUGE}')
    _refused(capsys, "run", _scenario_text(tmp_path, text), where="$.steps[1].records", name="s.json")


def test_huge_integer_in_a_trace(tmp_path, capsys):
    lines = [*TRACE_LINES[:2], TRACE_LINES[2].replace('"replica": 1', f'"replica": {HUGE}'), *TRACE_LINES[3:]]
    err = _refused(capsys, "check-trace", _trace(tmp_path, lines), where="line 3", name="t.jsonl")
    assert "digits" in err


def test_huge_integer_in_a_config(tmp_path, capsys):
    _refused(capsys, "explore", "--config", _config(tmp_path, f'{{"brokers": [0, {HUGE}]}}'),
             where="$.brokers[1]", name="c.json")


def test_huge_integer_in_a_log_line_is_counted_and_skipped(tmp_path, capsys):
    lines = LOG.read_bytes().splitlines(keepends=True)
    bad = lines[1].replace(b"replica 2", b"replica " + HUGE.encode())
    assert bad != lines[1]
    f = tmp_path / "state-change.log"
    f.write_bytes(b"".join([lines[0], bad, *lines[1:]]))
    code, out, err = _kcm(capsys, "check-log", "--json", str(f))
    clean_code, clean_out, _ = _kcm(capsys, "check-log", "--json", str(LOG))
    report, clean = json.loads(out), json.loads(clean_out)
    assert (code, err) == (clean_code, "")
    assert report["unreadable_lines"] == 1 and report["first_unreadable"] == [2]
    assert report["events"] == clean["events"] and report["violations"] == clean["violations"]


# ------------------------------------------------------------------------ deep nesting, long values


@pytest.mark.parametrize("depth", [65, 985, 990, 100_000])
def test_deep_nesting_everywhere(tmp_path, capsys, depth):
    nest = "[" * depth + "]" * depth
    _refused(capsys, "run", _scenario_text(tmp_path, json.dumps(SCENARIO).replace('"t-0"', nest)),
             where="nested", name="s.json")
    _refused(capsys, "check-trace", _trace(tmp_path, [TRACE_LINES[0].replace("1", nest, 1)]), where="line 1")
    _refused(capsys, "explore", "--config", _config(tmp_path, f'{{"brokers": [0], "name": {nest}}}'),
             where="nested", name="c.json")


def test_a_long_value_is_cut_short_in_the_message(tmp_path, capsys):
    doc = json.loads(json.dumps(SCENARIO))
    doc["steps"][1]["records"] = "x" * 5_000_000
    err = _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[1].records")
    assert "5,000,000 characters" in err
    err = _refused(capsys, "run", _scenario(tmp_path, dict(SCENARIO, name="x" * 5_000_000)), where="$.name")
    assert "at most 10000 characters" in err


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path, capsys):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * (9 << 20))
    _refused(capsys, "run", str(f), where="larger than the limit", name="big.json")


@pytest.mark.parametrize("command", [["run"], ["check-trace"], ["check-log"], ["explore", "--config"],
                                     ["explore", "--config", "tiny", "--quiet", "--resume"]])
def test_dev_zero_as_any_input(capsys, command):
    code, _, err = _kcm(capsys, *command, "/dev/zero")
    assert code == 2 and "Traceback" not in err and "/dev/zero" in err


# ------------------------------------------------------------------------ integers as floats and booleans


@pytest.mark.parametrize("value", ["2.0", "1E2", "1e0", "true", "false"])
def test_floats_and_bools_are_not_integers_in_a_scenario(tmp_path, capsys, value):
    doc = {"config": {"brokers": [0, 1]},
           "steps": [{"op": "create_topic", "topic": "t", "partitions": "P", "replication_factor": 1}]}
    text = json.dumps(doc).replace('"P"', value)
    _refused(capsys, "run", _scenario_text(tmp_path, text), where="$.steps[0].partitions")


def test_bools_are_not_broker_ids(tmp_path, capsys):
    _refused(capsys, "run", _scenario(tmp_path, {"config": {"brokers": [True, False]}, "steps": []}),
             where="$.config.brokers")
    _refused(capsys, "explore", "--config", _config(tmp_path, '{"brokers": [true, false]}'), where="$.brokers")


@pytest.mark.parametrize("value", ["1.0", "true", "1E0"])
def test_a_float_replica_is_malformed_not_another_verdict(tmp_path, capsys, value):
    assert '"replica": 1' in TRACE_LINES[2]
    lines = [*TRACE_LINES[:2], TRACE_LINES[2].replace('"replica": 1', f'"replica": {value}'), *TRACE_LINES[3:]]
    err = _refused(capsys, "check-trace", _trace(tmp_path, lines), where="line 3", name="t.jsonl")
    assert "integer" in err


def test_the_shipped_valid_traces_stay_valid(capsys):
    for path in sorted((SPECS / "traces").glob("valid_*.jsonl")):
        code, out, err = _kcm(capsys, "check-trace", str(path))
        assert code == 0, (path.name, out, err)


def test_the_python_api_refuses_float_fields_too():
    from kcm.checkers.oracle.oracle_trace import check_events
    from kcm.model.tables import rule_set

    events = [json.loads(line) for line in TRACE_LINES]
    assert check_events(events, rule_set("seeds")).ok
    events[2]["replica"] = 1.0
    verdict = check_events(events, rule_set("seeds"))
    assert verdict.malformed and verdict.line == 3


# ------------------------------------------------------------------------ create_topic, names, bounds, acks


def test_create_topic_needs_an_assignment_or_partitions_and_replication_factor(tmp_path, capsys):
    for extra in ({}, {"partitions": 1}, {"replication_factor": 1}):
        doc = {"config": {"brokers": [0]}, "steps": [{"op": "create_topic", "topic": "t", **extra}]}
        err = _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[0]")
        assert "assignment" in err and "replication_factor" in err


def test_a_name_with_a_trailing_newline_does_not_pass(tmp_path, capsys):
    doc = json.loads(json.dumps(SCENARIO))
    doc["steps"][1]["partition"] = "t-0\n"
    _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[1].partition")
    doc = {"config": {"brokers": [0]}, "steps": [{"op": "create_topic", "topic": "t\n", "partitions": 1,
                                                  "replication_factor": 1}]}
    _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[0].topic")
    line = TRACE_LINES[1].replace('"t-0"', '"t-0\\n"')
    assert line != TRACE_LINES[1]
    _refused(capsys, "check-trace", _trace(tmp_path, [TRACE_LINES[0], line]), where="line 2")
    _refused(capsys, "explore", "--config", _config(tmp_path, '{"brokers": [0], "topics": {"t\\n": {"0": [0]}}}'),
             where="$.topics")


@pytest.mark.parametrize("step, where", [
    ({"op": "produce", "partition": "t-0", "records": 10**18}, "$.steps[1].records"),
    ({"op": "create_topic", "topic": "u", "partitions": 10**12, "replication_factor": 1}, "$.steps[1].partitions"),
    ({"op": "broker_fail", "broker": 2**40}, "$.steps[1].broker"),
])
def test_magnitudes_are_bounded(tmp_path, capsys, step, where):
    doc = {"config": {"brokers": [0, 1, 2]}, "steps": [SCENARIO["steps"][0], step]}
    _refused(capsys, "run", _scenario(tmp_path, doc), where=where)


def test_step_count_and_total_records_are_bounded(tmp_path, capsys):
    doc = {"config": {"brokers": [0]}, "steps": [{"op": "controller_resign"}] * 100_000}
    _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps")
    produce = {"op": "produce", "partition": "t-0", "records": 1000}
    doc = {"config": {"brokers": [0]}, "steps": [{"op": "create_topic", "topic": "t", "assignment": {"0": [0]}}]
           + [produce] * 11}
    _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[11].records")


def test_acks_minus_one_is_acks_all(tmp_path, capsys):
    def run(acks):
        doc = {"config": {"brokers": [0, 1], "min_insync_replicas": 2},
               "steps": [{"op": "create_topic", "topic": "t", "assignment": {"0": [0, 1]}},
                         {"op": "broker_fail", "broker": 1},
                         {"op": "produce", "partition": "t-0", "acks": acks, "expect_error": "NotEnoughReplicas"}]}
        return _kcm(capsys, "run", _scenario(tmp_path, doc))

    code_all, out_all, _ = run("all")
    code_minus_one, out_minus_one, err = run(-1)
    assert code_all == 0 and (code_minus_one, out_minus_one) == (code_all, out_all), err
    code_one, _, _ = run(1)
    assert code_one == 1  # acks=1 does not wait for the ISR: the expected refusal does not happen


def test_acks_float_or_bool_is_refused(tmp_path, capsys):
    for acks in (1.0, True, -1.0):
        doc = json.loads(json.dumps(SCENARIO))
        doc["steps"][1]["acks"] = acks
        _refused(capsys, "run", _scenario(tmp_path, doc), where="$.steps[1].acks")


# ------------------------------------------------------------------------ explorer configs


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "-1", "1.5", "true", '"2"', "1e999", "null",
                                   "100000"])
@pytest.mark.parametrize("bound", ["max_failures", "max_controller_epoch", "max_leader_epoch"])
def test_nonsense_bounds_are_refused(tmp_path, capsys, bound, value):
    text = f'{{"brokers": [0, 1, 2], "topics": {{"t": {{"0": [0, 1]}}}}, "bounds": {{"{bound}": {value}}}}}'
    _refused(capsys, "explore", "--config", _config(tmp_path, text), where=f"$.bounds.{bound}", name="c.json")


@pytest.mark.parametrize("text, where", [
    ('{"brokers": [0, 1], "truncation": "nope"}', "$.truncation"),
    ('{"brokers": [0, 1], "rules": "zk"}', "$.rules"),
    ('{"brokers": [0, 1], "families": ["broker_failure", "explode"]}', "$.families[1]"),
    ('{"brokers": [0, 1], "bounds": {"reassign_targets": [[0, 7]]}}', "$.bounds.reassign_targets[0]"),
    ('{"brokers": [0, 1], "topics": {"t": {"0": [0, 9]}}}', "$.topics.t.0"),
    ('{"brokers": [0, 1], "topics": {"t": {"x": [0]}}}', "$.topics.t"),
    ('{"brokers": [0, 1], "topics": {"t": []}}', "$.topics.t"),
    # The reference refuses it (partitions are numbered from 0): found by ci/fuzz.py, a traceback before.
    ('{"brokers": [0, 1], "topics": {"t": {"1": [0, 1]}}}', "$.topics: InvalidReplicaAssignment"),
    ('{"brokers": [0, 1], "bounds": []}', "$.bounds"),
    ('{"brokers": [0, 1], "bounds": {"max_failure": 1}}', "$.bounds"),
    ('{"brokers": [0, 1], "variants": ["KAFKA-0"]}', "$.variants[0]"),
    ('{"brokers": [0, 1], "properties": ["Nope"]}', "$.properties[0]"),
    ('{"brokers": []}', "$.brokers"),
    ('{"brokers": [0, 1], "brokers": [2]}', "duplicate key"),
    ("[1, 2]", "$"),
    ("", "broken JSON"),
])
def test_malformed_configs(tmp_path, capsys, text, where):
    _refused(capsys, "explore", "--config", _config(tmp_path, text), where=where, name="c.json")


def test_every_shipped_config_passes_the_schema():
    for path in sorted((SPECS / "configs").rglob("*.json")):
        bounded.validate_config(strictjson.loads(path.read_bytes()))


def test_the_config_schema_enumerates_what_the_model_knows():
    schema = json.loads((SPECS / "config.schema.json").read_text())
    props = schema["properties"]
    assert props["families"]["items"]["enum"] == list(bounded.FAMILIES)
    assert set(props["bounds"]["properties"]) == set(bounded._BOUNDS)
    assert set(props["rules"]["enum"]) == set(RULE_SETS)
    assert props["truncation"]["enum"] == list(TRUNCATION_VARIANTS)
    assert props["delivery"]["enum"] == list(DELIVERY_MODES)
    scenario = json.loads((SPECS / "scenario.schema.json").read_text())["properties"]["config"]["properties"]
    assert set(scenario["rules"]["enum"]) == set(RULE_SETS)
    assert scenario["truncation"]["enum"] == list(TRUNCATION_VARIANTS)


# ------------------------------------------------------------------------ empty traces, long lines, flags


@pytest.mark.parametrize("content", [b"", b"\n\n", b"   \n"])
def test_an_empty_trace_is_an_error_not_valid(tmp_path, capsys, content):
    f = tmp_path / "t.jsonl"
    f.write_bytes(content)
    err = _refused(capsys, "check-trace", str(f), name="t.jsonl")
    assert "no events" in err


def test_dev_null_trace_is_an_error(capsys):
    _refused(capsys, "check-trace", "/dev/null", where="no events")


def test_an_over_long_trace_line_is_malformed(tmp_path, capsys):
    _refused(capsys, "check-trace", _trace(tmp_path, [TRACE_LINES[0], "x" * (2 << 20)]), where="line 2")


def test_check_log_skips_an_over_long_line_with_its_number(tmp_path, capsys):
    lines = LOG.read_bytes().splitlines(keepends=True)
    f = tmp_path / "state-change.log"
    f.write_bytes(b"".join([*lines[:3], b"[2021-09-20 14:00:00,001] INFO " + b"y" * (3 << 20) + b"\n", *lines[3:]]))
    code, out, _ = _kcm(capsys, "check-log", "--json", str(f))
    report = json.loads(out)
    assert code == 0 and report["unreadable_lines"] == 1 and report["first_unreadable"] == [4]
    assert report["lines_read"] == len(lines) + 1


@pytest.mark.parametrize("argv", [
    ["explore", "--walks", "1e9"], ["explore", "--depth", "9" * 5000, "--walks", "1"], ["explore", "--seed", "-1"],
    ["explore", "--checkpoint-every", "nan"], ["explore", "--checkpoint-every", "inf"],
    ["explore", "--max-states", "0"], ["explore", "--local-levels", "0"], ["prove", "--bmc", "1000000"],
    ["prove", "--brokers", "true"], ["explore", "--resume", ""],
    ["explore", "--config", "tiny", "--quiet", "--out", "/dev/null"], ["table", "--output", "/nonexistent/x"],
    ["bugs", "--out", "/dev/null", "KAFKA-1120"],
])
def test_hostile_flags(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses
        code = exc.code
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


def test_through_the_real_command(tmp_path):
    text = json.dumps(SCENARIO).replace('"records": 2', f'"records": {HUGE}')
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", _scenario_text(tmp_path, text)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "$.steps[1].records" in done.stderr
