"""kcm.oracle API: verdicts in-process and assert_valid failing a test with the first violation."""

import json
from pathlib import Path

import pytest

from kcm.oracle import ORACLE_RULES, TraceChecker, assert_valid, check_events, check_trace_file

GOOD = [{"type": "controller_elected", "broker": 0, "epoch": 1},
        {"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition", "to": "NewPartition"}]
TRACES = Path(__file__).resolve().parent.parent / "specs" / "traces"


def test_check_events_valid_and_invalid():
    assert check_events(GOOD).ok
    v = check_events(GOOD + [{"type": "controller_elected", "broker": 1, "epoch": 1}])
    assert (v.ok, v.line) == (False, 3)
    assert v.to_dict()["rule"].startswith("ControllerEpochMonotone: 1 after 1")
    assert json.loads(v.to_json()) == v.to_dict()


def test_rule_sets_differ():
    offline_again = GOOD + [
        {"type": "partition_state_change", "partition": "t-0", "from": "NewPartition", "to": "OfflinePartition"},
        {"type": "partition_state_change", "partition": "t-0", "from": "OfflinePartition", "to": "OfflinePartition"}]
    assert not check_events(offline_again, rules="seeds").ok
    assert check_events(offline_again).ok and ORACLE_RULES == "kafka"


def test_streaming_trace_checker_keeps_the_first_failure():
    checker = TraceChecker()
    assert [checker.feed(e) for e in GOOD] == [None, None] and checker.verdict().ok
    bad = checker.feed({"type": "controller_elected", "broker": 1, "epoch": 1})
    assert bad is not None and bad.line == 3 and not bad.ok
    assert checker.feed(GOOD[0]) is bad and checker.verdict() is bad


def test_replica_keys_use_the_contract_spelling():
    v = check_trace_file(TRACES / "invalid_hw_above_leo.jsonl")
    keys = list(v.state_before["replicas"])
    assert keys and all("@" in k and "/" not in k for k in keys)


def test_check_trace_file():
    assert check_trace_file(TRACES / "valid_failover_produce_fetch.jsonl").ok
    assert check_trace_file(TRACES / "invalid_leader_hw_decreases.jsonl").line == 27


def test_assert_valid_raises_with_first_violation():
    assert_valid(GOOD)
    with pytest.raises(AssertionError, match="event 2: ValidTransition: partition table"):
        assert_valid([GOOD[0], {"type": "partition_state_change", "partition": "t-0",
                                "from": "NonExistentPartition", "to": "OfflinePartition"}])
    with pytest.raises(AssertionError, match="event 1 is malformed"):
        assert_valid([{"type": "produce"}])
