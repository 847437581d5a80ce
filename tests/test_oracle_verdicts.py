"""Honest verdicts: each lists the rules the trace gave no means to judge; rule_id; the focused state; builders."""

import json

import pytest
from kcm.checkers.oracle.oracle_trace import _NEEDS, JUDGED, TRACE_ONLY

from kcm import oracle
from kcm.cli import main
from kcm.oracle import (
    broker_down,
    broker_up,
    check_events,
    controller_elected,
    leader_and_isr_write,
    partition_state_change,
    replica_state_change,
    request_partition,
    request_received,
    request_sent,
)

# An unclean election (leader 1 was not in the ISR [0]) with broker 0 still live: illegal, but only a trace that
# says which brokers are live shows it.
ELECTION = [
    controller_elected(0, 1),
    partition_state_change("t-0", "NonExistentPartition", "NewPartition"),
    replica_state_change("t-0", 0, "NonExistentReplica", "NewReplica"),
    replica_state_change("t-0", 1, "NonExistentReplica", "NewReplica"),
    leader_and_isr_write("t-0", 0, 0, [0], 0, 1, replicas=[0, 1]),
    partition_state_change("t-0", "NewPartition", "OnlinePartition"),
    leader_and_isr_write("t-0", 1, 1, [1], 1, 1, election="unclean"),
]


def test_every_rule_says_what_it_needs():
    assert set(_NEEDS) == JUDGED | set(TRACE_ONLY)


def test_a_valid_verdict_lists_the_rules_it_could_not_judge():
    v = check_events(ELECTION)
    assert v.ok
    assert "broker_up" in v.not_judged["CleanElection"] and "LiveActors" in v.not_judged
    assert "EpochFencing" in v.not_judged and "RequestsCarryWrites" in v.not_judged
    assert "ValidTransition" not in v.not_judged and "ZkVersionGrows" not in v.not_judged
    assert "not judged" in v.message() and v.to_dict()["not_judged"] == v.not_judged


def test_with_broker_up_the_same_election_is_caught_with_rule_id_and_focus():
    v = check_events([broker_up(0), broker_up(1)] + ELECTION)
    assert not v.ok and v.line == 9 and v.rule_id == "CleanElection"
    assert "CleanElection" not in v.not_judged and "LiveActors" not in v.not_judged
    assert v.focus["live_brokers"] == [0, 1]
    assert v.focus["leader_and_isr"]["t-0"]["isr"] == [0]
    assert v.focus["event"]["election"] == "unclean"
    d = json.loads(v.to_json())
    assert d["rule_id"] == "CleanElection" and d["rule"].startswith("CleanElection:")
    assert d["state_focus"] == v.focus and d["state_before"] == v.state_before  # the old keys are kept
    text = v.message().splitlines()
    assert text[0].startswith("line 9: CleanElection") and len(text) > 4 and max(map(len, text)) < 200


def test_request_rules_are_judged_once_requests_are_in_the_trace():
    lai = [request_partition("t-0", leader=0, leader_epoch=0, isr=[0], replicas=[0, 1])]
    events = [broker_up(0), broker_up(1)] + ELECTION[:6] + [request_sent("LeaderAndIsr", 0, 1, lai),
                                                            request_received("LeaderAndIsr", 0, 1, lai),
                                                            broker_down(1)]
    v = check_events(events)
    assert v.ok
    for rid in ("EpochFencing", "LeaderEpochFencing", "NoBrokerAheadOfZk", "RequestsCarryWrites", "LiveActors"):
        assert rid not in v.not_judged, rid
    assert set(v.not_judged) >= {"OnlyLeadersAppend", "FetchFromLeader", "PreferredElectionChoosesPreferred"}


def test_builders_write_schema_valid_events_with_from():
    ev = partition_state_change("t-0", "NewPartition", "OnlinePartition")
    assert ev == {"type": "partition_state_change", "partition": "t-0", "from": "NewPartition",
                  "to": "OnlinePartition"}
    assert request_received("StopReplica", 1, 2, [request_partition("t-0", delete=True)], accepted=False) == {
        "type": "request_received", "request": "StopReplica", "broker": 1, "controller_epoch": 2,
        "partitions": [{"partition": "t-0", "delete": True}], "accepted": False}
    assert oracle.produce("t-0", 0, 0, 1, 0) == {"type": "produce", "partition": "t-0", "broker": 0, "offset": 0,
                                                 "leo": 1, "hw": 0}
    assert oracle.fetch("t-0", 1, 0, 0, 1, 0, leader_hw=1)["leader_hw"] == 1
    assert check_events([broker_up(0), broker_up(1)] + ELECTION[:6] + [
        oracle.produce("t-0", 0, 0, 1, 0), oracle.fetch("t-0", 1, 0, 0, 1, 0, leader_leo=1, leader_hw=0)]).ok


@pytest.mark.parametrize("events, rid, keys", [
    ([controller_elected(0, 2), controller_elected(1, 1)], "ControllerEpochMonotone", {"controller_epoch"}),
    ([partition_state_change("t-0", "NonExistentPartition", "OnlinePartition")], "ValidTransition",
     {"partitions", "table_allows"}),
])
def test_focus_holds_what_the_rule_reads(events, rid, keys):
    v = check_events(events, "seeds")
    assert v.rule_id == rid and keys <= set(v.focus)


def test_check_trace_json_and_text_show_not_judged(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in ELECTION))
    assert main(["check-trace", "--json", str(trace)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and "CleanElection" in doc["not_judged"] and doc["rule_id"] is None
    trace.write_text("".join(json.dumps(e) + "\n" for e in [broker_up(0), broker_up(1)] + ELECTION))
    assert main(["check-trace", str(trace)]) == 1
    out = capsys.readouterr().out
    assert "state before (what CleanElection reads):" in out and "live_brokers: [0, 1]" in out


def test_check_log_lists_the_rules_a_log_gave_no_means_to_judge(tmp_path, capsys):
    from pathlib import Path

    logs = Path(__file__).resolve().parent.parent / "specs" / "logs"
    assert main(["check-log", "--json", str(logs / "kafka-2.8-valid.log")]) == 0
    assert json.loads(capsys.readouterr().out)["not_judged"] == {}
    only_changes = tmp_path / "state-change.log"
    only_changes.write_text("[2021-09-20 15:00:00,000] TRACE [Controller id=1 epoch=3] Changed partition t-0 state "
                            "from NewPartition to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=0, "
                            "isr=List(1), zkVersion=0) (state.change.logger)\n")
    assert main(["check-log", "--json", str(only_changes)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["events"] == 1 and "EpochFencing" in doc["not_judged"] and "ValidTransition" not in doc["not_judged"]
    assert main(["check-log", str(only_changes)]) == 0
    assert "not judged: EpochFencing:" in capsys.readouterr().out
