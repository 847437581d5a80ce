"""kcm check-log: every sample judged as its manifest says, the rules one by one, and damaged input never crashes."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from kcm.checkers.oracle import statechange_log as scl
from kcm.checkers.oracle.log_rules import DETECTION_WINDOW, check_file

from kcm.cli import main

LOGS = Path(__file__).resolve().parent.parent / "specs" / "logs"
MANIFEST = json.loads((LOGS / "manifest.json").read_text())["samples"]
S = " (state.change.logger)"


def _run(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(["check-log", *argv])
    except SystemExit as exc:  # argparse refuses bad arguments this way
        code = int(exc.code)
    return code, capsys.readouterr().out


def _check(text: str | bytes, **kw):
    data = text.encode() if isinstance(text, str) else text
    return check_file(io.BytesIO(data), **kw)


def _ctl(msg: str, epoch: int = 3, node: int = 1) -> str:
    return f"[2020-01-01 00:00:00,000] TRACE [Controller id={node} epoch={epoch}] {msg}{S}\n"


def _brk(msg: str, node: int = 2) -> str:
    return f"[2020-01-01 00:00:00,000] TRACE [Broker id={node}] {msg}{S}\n"


def test_every_sample_is_listed_in_the_manifest():
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(s["file"] for s in MANIFEST)


@pytest.mark.parametrize("sample", MANIFEST, ids=[s["file"] for s in MANIFEST])
def test_sample_verdict_and_first_violation_line(capsys, sample):
    code, out = _run(capsys, str(LOGS / sample["file"]), "--json")
    doc = json.loads(out)
    assert code == sample["exit"]
    first = doc["first_violation"]
    assert (first or {}).get("line") == sample["first_violation_line"]
    assert (first or {}).get("rule") == sample["rule"]
    assert doc["detected_version"] == sample["detected_version"]
    assert doc["warnings"] == sample.get("warnings", 0)
    if first is not None:
        assert first["text"].strip() and first["state_before"]


def test_text_report_names_line_rule_and_state_before(capsys):
    code, out = _run(capsys, str(LOGS / "kafka-0.8-invalid.log"))
    assert code == 1
    assert "first violation at line 14: ValidTransition" in out
    assert "to NonExistentPartition (state.change.logger)" in out
    assert '"partition_state": "OnlinePartition"' in out
    assert "lines read:        20" in out and "detected version:  0.8" in out


def test_rule_set_option_changes_the_verdict(capsys):
    # Kafka's own table allows OfflinePartition -> OfflinePartition; the seeds' table does not.
    assert _run(capsys, str(LOGS / "kafka-2.8-valid.log"), "--rules", "kafka")[0] == 0
    code, out = _run(capsys, str(LOGS / "kafka-2.8-valid.log"), "--rules", "seeds", "--json")
    assert (code, json.loads(out)["first_violation"]["line"]) == (1, 23)


def test_version_option_keeps_only_that_family_of_formats(capsys):
    code, out = _run(capsys, str(LOGS / "kafka-0.8-invalid.log"), "--kafka-version", "2.x", "--json")
    doc = json.loads(out)
    assert (code, doc["events"], doc["unknown_lines"]) == (0, 0, 20)
    code, out = _run(capsys, str(LOGS / "kafka-0.8-invalid.log"), "--kafka-version", "0.8", "--json")
    assert (code, json.loads(out)["rules"]) == (1, "kafka-0.8")


def test_unreadable_file_and_bad_arguments_exit_2(capsys, tmp_path):
    assert _run(capsys, str(tmp_path / "missing.log"))[0] == 2
    assert _run(capsys, str(tmp_path))[0] == 2
    assert _run(capsys, str(LOGS / "kafka-2.8-valid.log"), "--kafka-version", "4.0")[0] == 2
    assert _run(capsys, str(LOGS / "kafka-2.8-valid.log"), "--rules", "nope")[0] == 2


def test_old_state_names_are_mapped_and_the_08_table_has_no_deletion_states():
    lines = "".join(
        f"[2015-01-01 00:00:00,000] TRACE Controller 1 epoch 1 changed state of replica 1 for partition [t,0] "
        f"from {a} to {b}{S}\n"
        for a, b in [("NonExistentReplica", "NewReplica"), ("NewReplica", "OnlineReplica"),
                     ("OnlineReplica", "OfflineReplica"), ("OfflineReplica", "ReplicaDeletionStarted")])
    r08 = _check(lines, rules="kafka-0.8")
    assert (r08.violations, r08.first_violation.line, r08.first_violation.rule) == (1, 4, "ValidTransition")
    assert _check(lines, rules="kafka").ok
    unknown = lines.replace("OnlineReplica to OfflineReplica", "OnlineReplica to ZombieReplica")
    r = _check(unknown, rules="kafka")
    assert (r.events, r.unknown_lines) == (3, 1)


def test_missed_transition_is_a_warning_not_a_violation():
    log = (_ctl("Changed state of replica 1 for partition t-0 from NewReplica to OnlineReplica")
           + _ctl("Changed state of replica 1 for partition t-0 from OfflineReplica to OnlineReplica"))
    r = _check(log)
    assert (r.ok, r.warnings, r.first_warnings[0].line) == (True, 1, 2)
    # a new controller epoch starts from states loaded silently from ZooKeeper: nothing was missed
    again = log.replace("epoch=3] Changed state of replica 1 for partition t-0 from Offline",
                        "epoch=4] Changed state of replica 1 for partition t-0 from Offline")
    assert _check(again).warnings == 0


def test_controller_epoch_never_decreases_across_controller_lines():
    log = _ctl("Changed partition t-0 state from OnlinePartition to OfflinePartition", epoch=5)
    log += _ctl("Changed partition t-0 state from OfflinePartition to OnlinePartition", epoch=4)
    r = _check(log)
    assert (r.first_violation.line, r.first_violation.rule) == (2, "ControllerEpochMonotone")
    # a broker line quoting an older request epoch is not a controller line
    ok = _ctl("Changed partition t-0 state from OnlinePartition to OfflinePartition", epoch=5)
    ok += _brk("Ignoring LeaderAndIsr request from controller 9 with correlation id 1 since its controller epoch 4 "
               "is old. Latest known controller epoch is 5")
    assert _check(ok).ok


def test_update_metadata_shares_the_brokers_controller_epoch_fence():
    cached = ("Cached leader info UpdateMetadataPartitionState(topicName='t', partitionIndex=0, controllerEpoch={e}, "
              "leader=1, leaderEpoch=3, isr=[1], zkVersion=3, replicas=[1], offlineReplicas=[]) for partition t-0 in "
              "response to UpdateMetadata request sent by controller 1 epoch {e} with correlation id 1")
    handled = "Handling LeaderAndIsr request correlationId 2 from controller 1 epoch {e} starting the become-leader " \
              "transition for partition t-0"
    assert _check(_brk(cached.format(e=4)) + _brk(handled.format(e=5)) + _brk(cached.format(e=5))).ok
    r = _check(_brk(handled.format(e=5)) + _brk(cached.format(e=4)))
    assert (r.first_violation.line, r.first_violation.rule) == (2, "EpochFencing")
    # each broker has its own fence
    assert _check(_brk(handled.format(e=5), node=2) + _brk(cached.format(e=4), node=3)).ok
    legacy = ("[2015-01-01 00:00:00,000] TRACE Broker 2 cached leader info (LeaderAndIsrInfo:(Leader:1,ISR:1,"
              "LeaderEpoch:0,ControllerEpoch:{e}),ReplicationFactor:1),AllReplicas:1) for partition [t,0] in response "
              "to UpdateMetadata request sent by controller 1 epoch {e} with correlation id 7" + S + "\n")
    r = _check(legacy.format(e=3) + legacy.format(e=2))
    assert (r.first_violation.line, r.first_violation.state_before["partition"]) == (2, "t-0")


def test_leader_epoch_and_one_leader_per_epoch():
    def send(leader: int, epoch: int, broker: int = 1) -> str:
        return _ctl(f"Sending become-leader LeaderAndIsr request PartitionState(controllerEpoch=3, leader={leader}, "
                    f"leaderEpoch={epoch}, isr={leader}, zkVersion=0, replicas=1,2, isNew=false) to broker {broker} "
                    f"for partition t-0")
    assert _check(send(1, 4) + send(1, 4, broker=2) + send(2, 5)).ok
    down = _check(send(1, 4) + send(2, 5) + send(1, 4))
    assert {(down.first_violation.line, down.first_violation.rule)} == {(3, "LeaderEpochMonotone")}
    two = _check(send(1, 4) + send(2, 4))
    assert (two.first_violation.line, two.first_violation.rule) == (2, "OneLeaderPerEpoch")


def test_a_partition_created_again_after_its_deletion_starts_from_leader_epoch_0():
    def send(leader: int, epoch: int) -> str:
        return _ctl(f"Sending become-leader LeaderAndIsr request PartitionState(controllerEpoch=3, leader={leader}, "
                    f"leaderEpoch={epoch}, isr={leader}, zkVersion=0, replicas=1,2, isNew=false) to broker 1 "
                    f"for partition t-0")

    def move(a: str, b: str) -> str:
        return _ctl(f"Changed partition t-0 state from {a} to {b}")

    deleted = (send(1, 4) + move("OnlinePartition", "OfflinePartition")
               + move("OfflinePartition", "NonExistentPartition") + send(-1, 5))
    assert _check(deleted + move("NonExistentPartition", "NewPartition") + send(2, 0)).ok
    # without the creation, epoch 0 is a step back, and the deletion's own decisions are judged too
    for tail, line in ((send(2, 0), 5), (send(1, 3), 5)):
        r = _check(deleted + tail)
        assert (r.first_violation.line, r.first_violation.rule) == (line, "LeaderEpochMonotone")


def test_violation_after_the_detection_window_is_found():
    line = _ctl("Changed state of replica 1 for partition t-0 from OnlineReplica to OnlineReplica")
    n = DETECTION_WINDOW + 7
    log = line * n + _ctl("Changed state of replica 1 for partition t-0 from OnlineReplica to NewReplica")
    r = _check(log)
    assert (r.events, r.first_violation.line) == (n + 1, n + 1)


def test_interleaved_messages_on_one_line_are_both_read():
    a = _ctl("Changed partition t-0 state from OnlinePartition to OfflinePartition").rstrip("\n")
    b = _ctl("Changed partition t-1 state from OnlinePartition to OfflinePartition")
    stats = scl.ReadStats()
    events = list(scl.read_events([a[:50] + b, a], stats))
    assert [(e.line, e.partition) for e in events] == [(1, "t-1"), (2, "t-0")]
    assert (stats.lines, stats.unknown) == (2, 1)


def test_crlf_and_unbracketed_dates_are_read():
    log = ("2020-01-01T00:00:00.000Z TRACE [Controller id=1 epoch=3] Changed partition t-0 state from "
           "NonExistentPartition to NewPartition with assigned replicas 1\r\n"
           "[2020-01-01 00:00:00,001] TRACE [Controller id=1 epoch=3] Changed partition t-0 state from "
           "NewPartition to NonExistentPartition (state.change.logger)\r\n")
    r = _check(log)
    assert (r.events, r.unknown_lines, r.first_violation.line) == (2, 0, 2)


def test_a_cut_epoch_never_reads_as_a_smaller_epoch():
    full = "[2015-01-01 00:00:00,000] TRACE Controller 1 epoch 12 changed partition [t,0] state from " \
           "OnlinePartition to OfflinePartition"
    for cut in range(len(full)):
        for ev in scl.read_events([full[:cut]], scl.ReadStats()):
            assert ev.controller_epoch in (None, 12)


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_never_crash(capsys, tmp_path, seed):
    rnd = random.Random(seed)
    path = tmp_path / "noise.log"
    path.write_bytes(bytes(rnd.randrange(256) for _ in range(20000)))
    code, out = _run(capsys, str(path), "--json")
    doc = json.loads(out)
    assert (code, doc["events"]) == (0, 0)
    assert doc["headerless_lines"] == doc["unknown_lines"] > 0


@pytest.mark.parametrize("sample", [s["file"] for s in MANIFEST])
def test_cut_and_shuffled_samples_never_crash(capsys, tmp_path, sample):
    rnd = random.Random(sample)
    lines = (LOGS / sample).read_bytes().splitlines(keepends=True)
    damaged = []
    for raw in lines:
        cut = rnd.randrange(len(raw) + 1)
        damaged.append(raw[:cut] + (b"\n" if rnd.random() < 0.5 else b"") + bytes([rnd.randrange(256)]))
    rnd.shuffle(damaged)
    path = tmp_path / "damaged.log"
    path.write_bytes(b"".join(damaged))
    code, out = _run(capsys, str(path), "--json")
    assert code in (0, 1)
    doc = json.loads(out)
    assert doc["lines_read"] >= 1 and doc["events"] + doc["unknown_lines"] >= 1
