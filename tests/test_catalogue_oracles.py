"""The trace oracle and the state-change log rules against the catalogue: every property id is judged or excused,
every message starts with a rule id, and the ids an oracle declares are the ones its messages use."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

from kcm.checkers.oracle import log_rules, oracle_trace
from kcm.checkers.oracle.oracle_trace import TRACE_ONLY, check_file, rule_id
from kcm.model.tables import rule_set
from kcm.properties import catalogue

TRACES = Path(__file__).resolve().parent.parent / "specs" / "traces"
LOGS = Path(__file__).resolve().parent.parent / "specs" / "logs"
CLEAN = {"missing": [], "unknown": [], "both": [], "no reason": []}


def _message_ids() -> set[str]:
    """The ids the trace oracle's findings carry, read from its source: every finding names its rule literally."""
    source = inspect.getsource(oracle_trace.Replay)
    ids = re.findall(r'_broken\("([A-Za-z]+)", ', source)
    assert ids and source.count("_broken(") == len(ids)
    return set(ids)


def test_a_finding_message_starts_with_its_rule_id() -> None:
    assert oracle_trace._broken("LeaderEpochMonotone", "t-0 leader epoch 1 after 2").message == (
        "LeaderEpochMonotone: t-0 leader epoch 1 after 2")
    assert oracle_trace._broken("OneLeaderPerEpoch", "x", where="znode").message == "OneLeaderPerEpoch (znode): x"


def test_trace_oracle_judges_or_excuses_every_property_id() -> None:
    assert catalogue.unaccounted(oracle_trace.JUDGED, oracle_trace.NOT_JUDGED) == CLEAN


def test_trace_oracle_messages_use_exactly_its_declared_ids() -> None:
    used = _message_ids()
    assert used == set(oracle_trace.JUDGED) | set(TRACE_ONLY)
    assert set(TRACE_ONLY).isdisjoint(catalogue.ids())  # a trace-only rule is not a second name of a property
    assert all(meaning.strip() for meaning in TRACE_ONLY.values())


def test_every_failing_sample_trace_names_a_known_rule_id() -> None:
    expected = json.loads((TRACES / "manifest.json").read_text())["expected"]
    named = set()
    for name, exp in expected.items():
        if exp["verdict"] != "violation":
            continue
        v = check_file(str(TRACES / name), rule_set("seeds"))
        assert rule_id(v.rule) == exp["rule"] and v.message().startswith(f"line {v.line}: {exp['rule']}"), name
        named.add(exp["rule"])
    assert named <= set(oracle_trace.JUDGED) | set(TRACE_ONLY)
    assert len(named & set(oracle_trace.JUDGED)) >= 8  # the samples break most of the catalogue rules judged


def test_log_rules_judge_or_excuse_every_property_id() -> None:
    assert catalogue.unaccounted(log_rules.JUDGED, log_rules.NOT_JUDGED) == CLEAN
    assert catalogue.unaccounted(log_rules.JUDGED - {"ValidTransition"}, log_rules.NOT_JUDGED)["missing"] == [
        "ValidTransition"]


def test_every_sample_log_violation_is_named_by_a_judged_id() -> None:
    samples = json.loads((LOGS / "manifest.json").read_text())
    rules = {s["rule"] for s in samples["samples"] if s.get("rule")}
    assert rules and rules <= log_rules.JUDGED


def test_every_id_named_in_configs_scenarios_and_variants_is_a_catalogue_id() -> None:
    from kcm.checkers.gate.bug_catalogue import VARIANTS

    root = Path(__file__).resolve().parent.parent / "specs"
    named = {n for v in VARIANTS for n in v.breaks}
    for path in (root / "configs").rglob("*.json"):
        named |= set(json.loads(path.read_text()).get("properties", []))
    for path in (root / "scenarios").rglob("*.json"):
        wanted = json.loads(path.read_text()).get("expect_violation")
        if wanted:
            named.add(wanted["property"])
    assert len(named) > 10
    assert sorted(named - set(catalogue.ids())) == []
