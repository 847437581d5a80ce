"""check-trace replay: legal traces pass, each rule's first breach is reported with its line and state before."""

import json

import pytest
from kcm.checkers.oracle.oracle_trace import check_lines, schema_error
from kcm.model.tables import rule_set

RULES = rule_set("seeds")


def write(leader, epoch, isr, zk, cepoch=1, **extra):
    return dict({"type": "leader_and_isr_write", "partition": "t-0", "leader": leader, "leader_epoch": epoch,
                 "isr": isr, "zk_version": zk, "controller_epoch": cepoch}, **extra)


def lai(broker, cepoch, leader, epoch, isr, sent=False, **extra):
    return dict({"type": "request_sent" if sent else "request_received", "request": "LeaderAndIsr",
                 "broker": broker, "controller_epoch": cepoch,
                 "partitions": [{"partition": "t-0", "leader": leader, "leader_epoch": epoch, "isr": isr}]}, **extra)


LEGAL = [
    {"type": "controller_elected", "broker": 0, "epoch": 1},
    {"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition", "to": "NewPartition"},
    write(0, 0, [0, 1], 0, replicas=[0, 1]),
    {"type": "partition_state_change", "partition": "t-0", "from": "NewPartition", "to": "OnlinePartition"},
    lai(0, 1, 0, 0, [0, 1]),
    lai(1, 1, 0, 0, [0, 1]),
]


def check(events):
    return check_lines([json.dumps(e) for e in events], RULES)


def test_legal_trace_is_valid():
    v = check(LEGAL)
    assert v.ok and v.events == len(LEGAL)


def test_table_move_not_allowed_is_first_violation():
    v = check(LEGAL + [{"type": "partition_state_change", "partition": "t-0", "from": "OnlinePartition",
                        "to": "NewPartition"}, {"type": "controller_elected", "broker": 0, "epoch": 1}])
    assert (v.ok, v.line, v.malformed) == (False, 7, False)
    assert v.rule.startswith("ValidTransition: partition table")
    assert v.state_before["partitions"] == {"t-0": "OnlinePartition"}


def test_state_change_from_a_state_the_partition_is_not_in():
    v = check(LEGAL + [{"type": "partition_state_change", "partition": "t-0", "from": "OfflinePartition",
                        "to": "OnlinePartition"}])
    assert v.line == 7 and "is in OnlinePartition, not OfflinePartition" in v.rule


@pytest.mark.parametrize("event, words", [
    (write(0, 0, [0, 1], 0), "ZkVersionGrows: "),
    (write(1, 0, [0, 1], 1), "OneLeaderPerEpoch ("),
    (write(0, 1, [0, 2], 1), "not within the assigned replicas"),
    (write(1, 1, [0], 1), "leader 1 is not in the ISR"),
    (write(0, 1, [0], 1, cepoch=2), "never elected"),
    (lai(1, 1, 1, 0, [0, 1]), "OneLeaderPerEpoch ("),
    (lai(1, 1, 0, 2, [0, 1], sent=True), "never written"),
])
def test_leader_and_isr_rules(event, words):
    v = check(LEGAL + [event])
    assert (v.ok, v.line) == (False, 7) and words in v.rule, v.rule


def test_a_leaderless_partition_may_keep_its_last_isr_member_outside_the_assigned_replicas():
    """Kafka's reassignTo drops the replicas only in an abandoned target through OfflineReplica, and the controller
    never empties the ISR: the write that leaves no leader keeps that member (as LeaderInIsrInAr allows)."""
    assert check(LEGAL + [write(-1, 1, [1], 1, replicas=[0, 2])]).ok
    assert "not within the assigned replicas" in check(LEGAL + [write(-1, 1, [0, 1], 1, replicas=[0, 2])]).rule
    assert "not within the assigned replicas" in check(LEGAL + [write(1, 1, [1], 1, replicas=[0, 2])]).rule


def test_leader_epoch_may_stay_with_the_same_leader_but_never_go_back():
    shrink = write(0, 0, [0], 1)  # a leader-side ISR change keeps the leader epoch and bumps the zkVersion
    assert check(LEGAL + [shrink]).ok
    v = check(LEGAL + [write(1, 1, [1], 1), write(0, 0, [0], 2)])
    assert v.line == 8 and v.rule == "LeaderEpochMonotone: t-0 leader epoch 0 after 1"


def test_epoch_fencing_on_brokers():
    failover = LEGAL + [{"type": "controller_elected", "broker": 1, "epoch": 2}, lai(1, 2, 0, 0, [0, 1])]
    assert check(failover).ok
    v = check(failover + [lai(1, 1, 0, 0, [0, 1])])
    assert v.line == 9 and v.rule.startswith("EpochFencing: broker 1")
    assert v.state_before["broker_controller_epochs"] == {"0": 1, "1": 2}
    assert check(failover + [lai(1, 1, 0, 0, [0, 1], accepted=False)]).ok  # refusing the zombie is right
    restarted = failover + [{"type": "broker_down", "broker": 1}, {"type": "broker_up", "broker": 1}]
    assert check(restarted + [lai(1, 1, 0, 0, [0, 1])]).ok  # a restarted broker has forgotten its epoch
    v = check(failover[:-1] + [{"type": "broker_down", "broker": 1}, lai(1, 2, 0, 0, [0, 1])])
    assert v.line == 9 and "is down" in v.rule


def test_leader_epoch_fencing_on_brokers():
    moved = LEGAL + [write(1, 1, [0, 1], 1), lai(1, 1, 1, 1, [0, 1])]
    assert check(moved).ok
    v = check(moved + [lai(1, 1, 0, 0, [0, 1])])
    assert v.line == 9 and v.rule.startswith("LeaderEpochFencing: ")


def produce(broker, offset, leo, hw, count=1):
    return {"type": "produce", "partition": "t-0", "broker": broker, "offset": offset, "count": count,
            "leo": leo, "hw": hw}


def fetch(broker, leader, offset, leo, hw, **leader_side):
    return dict({"type": "fetch", "partition": "t-0", "broker": broker, "leader": leader, "fetch_offset": offset,
                 "leo": leo, "hw": hw}, **leader_side)


def test_data_plane_rules():
    data = LEGAL + [produce(0, 0, 2, 0, count=2), fetch(1, 0, 0, 2, 0, leader_leo=2, leader_hw=0),
                    fetch(1, 0, 2, 2, 2, leader_leo=2, leader_hw=2)]
    assert check(data).ok
    for event, words in [(produce(1, 0, 1, 0), "not its leader"), (produce(0, 1, 2, 0), "its LEO was 2"),
                         (produce(0, 2, 3, 1), "went down from 2 to 1"), (produce(0, 2, 3, 4), "above its LEO"),
                         (produce(0, 2, 5, 2), "reports LEO 5"),
                         (fetch(1, 0, 3, 3, 2), "beyond leader 0's LEO 2"),
                         (fetch(1, 0, 2, 2, 2, leader_hw=1), "went down from 2 to 1"),
                         (fetch(0, 0, 2, 2, 2), "from itself")]:
        v = check(data + [event])
        assert (v.ok, v.line) == (False, 10) and words in v.rule, (event, v.rule)
    # A new leader may start from a lower HW than the old one had; only its own HW may not go back.
    moved = data[:-1] + [write(1, 1, [1], 1), lai(1, 1, 1, 1, [1]), produce(1, 2, 3, 1)]
    assert check(moved).ok
    v = check(moved + [produce(1, 3, 4, 0)])
    assert v.line == 12 and "leader 1 of t-0 (leader epoch 1) went down from 1 to 0" in v.rule
    # A broker that has not yet learned it leads refuses produce, whatever ZooKeeper says.
    assert "not its leader" in check(data[:-1] + [write(1, 1, [1], 1), produce(1, 2, 3, 1)]).rule


def test_broker_liveness_rules():
    assert check([{"type": "broker_down", "broker": 2}, {"type": "broker_down", "broker": 2}]).line == 2
    assert check([{"type": "broker_up", "broker": 2}, {"type": "broker_up", "broker": 2}]).line == 2
    v = check([{"type": "broker_down", "broker": 0}, {"type": "controller_elected", "broker": 0, "epoch": 1}])
    assert v.line == 2 and "is down" in v.rule
    down = LEGAL + [{"type": "broker_down", "broker": 1}]
    v = check(down + [write(1, 1, [1], 1)])
    assert v.line == 8 and "new leader 1 of t-0 is down" in v.rule


@pytest.mark.parametrize("text, words", [
    ("{not json", "not JSON"),
    ("[1, 2]", "a JSON object, not list"),
    ('{"type": "election"}', "'type' must be one of"),
    ('{"type": "controller_elected", "epoch": 1}', "'broker' is a required property"),
    ('{"type": "controller_elected", "broker": 0, "epoch": -1}', "controller_elected.epoch"),
    ('{"type": "produce", "partition": "t-0", "broker": 0, "offset": 0, "leo": 1, "hw": 0, "x": 1}', "'x'"),
    ('{"type": "request_sent", "request": "LeaderAndIsr", "broker": 0, "controller_epoch": 1, '
     '"partitions": [{"partition": "t-0"}]}', "partitions[0]"),
    ('{"type": "fetch", "partition": "t0"}', "fetch"),
    ("[" * 100000, "not JSON"),
    ('"\udcff"', "undecodable"),
])
def test_malformed_lines_are_reported_not_raised(text, words):
    v = check_lines([json.dumps(LEGAL[0]), "", text], RULES)
    assert (v.ok, v.malformed, v.line) == (False, True, 3)
    assert words in v.rule, v.rule


def test_schema_error_accepts_every_legal_event():
    assert all(schema_error(e) == "" for e in LEGAL)


def _mutations(ev):
    """Events near a legal one: each field dropped, or replaced by a value of another kind."""
    yield ev
    for k in ev:
        yield {f: v for f, v in ev.items() if f != k}
        for bad in (None, -1, 1.5, True, "x", "t-0", [], [1, 1], [{}], {}, "OnlinePartition", "LeaderAndIsr"):
            yield dict(ev, **{k: bad})
    yield dict(ev, extra=1)
    if "partitions" in ev and ev["partitions"]:
        first = ev["partitions"][0]
        for k in first:
            yield dict(ev, partitions=[{f: v for f, v in first.items() if f != k}])
        yield dict(ev, partitions=[dict(first, extra=1)])
        yield dict(ev, request="StopReplica")


def test_the_fast_schema_check_agrees_with_jsonschema():
    from pathlib import Path

    import jsonschema
    from kcm.checkers.oracle.oracle_trace import _fast_check, _validator

    traces = Path(__file__).resolve().parent.parent / "specs" / "traces"
    events = [json.loads(line) for p in sorted(traces.glob("valid_*.jsonl")) for line in p.read_text().splitlines()
              if line.strip()]
    kinds = set()
    for ev in events:
        assert _fast_check(ev["type"])(ev), ev  # the fast path is what judges every legal sample event
        kinds.add(ev["type"])
        for near in _mutations(ev):
            if _fast_check(ev["type"])(near):  # it may refuse more than the schema, never accept more
                assert jsonschema.Draft202012Validator.is_valid(_validator(ev["type"]), near), near
    assert len(kinds) == 10


def test_leader_selector_rules():
    up = [{"type": "broker_up", "broker": b} for b in (0, 1, 2)]
    start = up + [LEGAL[0], write(0, 0, [0, 1, 2], 0, replicas=[0, 1, 2]), write(0, 0, [0, 1], 1)]
    assert check(start + [write(1, 1, [1], 2)]).ok
    v = check(start + [write(2, 1, [2], 2)])
    assert v.line == 7 and "elected 2, not in the ISR [0, 1]" in v.rule
    v = check(start + [write(2, 1, [2], 2, election="unclean")])
    assert v.line == 7 and "unclean election of t-0 while ISR members [0, 1] are live" in v.rule
    both_down = start + [{"type": "broker_down", "broker": 0}, {"type": "broker_down", "broker": 1}]
    assert check(both_down + [write(2, 1, [2], 2, election="unclean")]).ok
    v = check(start + [write(1, 1, [0, 1], 2, election="preferred")])
    assert v.line == 7 and "not the preferred replica 0" in v.rule
    assert check(start + [write(1, 1, [0, 1], 2), write(0, 2, [0, 1], 3, election="preferred")]).ok


def test_a_new_controller_starts_each_state_machine_from_its_own_unlogged_initialisation():
    offline = {"type": "replica_state_change", "partition": "t-0", "replica": 1, "from": "ReplicaDeletionIneligible",
               "to": "OfflineReplica"}
    online = [{"type": "replica_state_change", "partition": "t-0", "replica": 1, "from": a, "to": b}
              for a, b in (("NonExistentReplica", "NewReplica"), ("NewReplica", "OnlineReplica"))]
    # under the controller that logged OnlineReplica, a change from another state is inconsistent ...
    same = check(LEGAL + online + [offline])
    assert same.line == 9 and same.rule.startswith("TraceConsistent: replica table: t-0@1 is in OnlineReplica")
    # ... but a newly elected controller initialised the replica itself: its first change starts there, and the
    # next one from where that ended
    fresh = check(LEGAL + online + [{"type": "controller_elected", "broker": 1, "epoch": 2}, offline,
                                    dict(offline, **{"from": "NewReplica"})])
    assert fresh.line == 11 and fresh.rule.startswith("TraceConsistent: replica table: t-0@1 is in OfflineReplica")


def test_isr_within_ar_is_judged_on_znodes_not_on_requests():
    # a reassignment moving the leader into the target sends the target as AR while the leaving replica is still in
    # the ISR (Kafka's reassignment steps B3-B4); only the znode must keep its ISR within its AR
    moved = lai(1, 1, 1, 1, [0, 1], sent=True)
    moved["partitions"][0]["replicas"] = [1]
    assert check(LEGAL + [write(1, 1, [0, 1], 1, replicas=[0, 1]), moved]).ok
    bad = check(LEGAL + [write(1, 1, [0, 1], 1, replicas=[1])])
    assert bad.line == 7 and bad.rule.startswith("LeaderInIsrInAr (leader-and-ISR write): ISR [0, 1] is not within")


def _move(a, b):
    return {"type": "partition_state_change", "partition": "t-0", "from": a, "to": b}


# Kafka's deletion order: the partitions go offline and then NonExistentPartition; only afterwards are the replicas
# taken offline, each removal shrinking the ISR of the znode, which is deleted when the deletion completes (no event)
DELETED = LEGAL + [_move("OnlinePartition", "OfflinePartition"), _move("OfflinePartition", "NonExistentPartition"),
                   write(-1, 1, [1], 1), write(-1, 2, [1], 2)]


def test_a_topic_created_again_after_its_deletion_starts_a_new_znode():
    again = DELETED + [_move("NonExistentPartition", "NewPartition"), write(0, 0, [0, 1], 0, replicas=[0, 1]),
                       _move("NewPartition", "OnlinePartition"), lai(0, 1, 0, 0, [0, 1])]
    assert check(again).ok
    # the znode's old leaders are forgotten with it: epoch 0 may have another leader in the new topic
    assert check(DELETED + [_move("NonExistentPartition", "NewPartition"), write(1, 0, [1, 0], 0)]).ok


def test_epochs_going_back_are_caught_around_a_deletion():
    # during the deletion the znode still exists: its writes may not go back
    v = check(DELETED + [write(-1, 1, [1], 3)])
    assert v.line == 11 and v.rule == "LeaderEpochMonotone: t-0 leader epoch 1 after 2"
    # without a creation, epoch 0 after the deletion's writes is a step back, not a new topic
    v = check(DELETED + [write(0, 0, [0, 1], 3)])
    assert v.line == 11 and v.rule.startswith("LeaderEpochMonotone: t-0 leader epoch 0 after 2")
    # and the new topic's own epochs are judged from its creation on
    again = DELETED + [_move("NonExistentPartition", "NewPartition"), write(0, 0, [0, 1], 0), write(1, 1, [1], 1)]
    v = check(again + [write(0, 0, [0], 2)])
    assert v.line == 14 and v.rule == "LeaderEpochMonotone: t-0 leader epoch 0 after 1"
