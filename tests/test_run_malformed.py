"""Two hundred malformed scenario files: every one exits 2 naming the place, none with a traceback."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys

import pytest

from kcm.cli import main

GOOD = {
    "name": "good",
    "config": {"brokers": [0, 1, 2], "rules": "kafka"},
    "steps": [
        {"op": "create_topic", "topic": "t", "assignment": {"0": [0, 1, 2]}},
        {"op": "broker_fail", "broker": 1},
        {"op": "reassign", "partition": "t-0", "replicas": [2, 0]},
        {"op": "produce", "partition": "t-0", "records": 2, "acks": "all"},
        {"op": "replica_transition", "replicas": ["t-0@0"], "target": "OnlineReplica"},
        {"op": "partition_transition", "partitions": ["t-0"], "target": "OnlinePartition", "selector": "preferred"},
    ],
    "expect": {"live_brokers": [0, 2]},
}


def _mutations() -> list[tuple[str, bytes, str]]:
    """(label, file bytes, a fragment the error message must contain)."""
    out: list[tuple[str, bytes, str]] = []

    def doc(label: str, fn, where: str) -> None:
        d = copy.deepcopy(GOOD)
        fn(d)
        out.append((label, json.dumps(d).encode(), where))

    rng = random.Random(7)
    junk_values = [None, "x", 3.5, -1, [], {}, True, "0", [None], {"a": 1}]
    step_keys = ["topic", "assignment", "broker", "partition", "replicas", "records", "acks", "target", "selector",
                 "partitions"]
    for i in range(6):
        for key in step_keys:
            if key in GOOD["steps"][i]:
                for v in (None, 3.5, -1, [], True, {"a": 1}, [None]):
                    if key == "acks" and v == -1:
                        continue  # acks=-1 is Kafka's spelling of acks=all: valid
                    doc(f"steps[{i}].{key}={v!r}", lambda d, i=i, k=key, v=v: d["steps"][i].__setitem__(k, v),
                        f"$.steps[{i}]")
    for i in range(6):
        doc(f"steps[{i}] op unknown", lambda d, i=i: d["steps"][i].__setitem__("op", "explode"), f"$.steps[{i}]")
        doc(f"steps[{i}] no op", lambda d, i=i: d["steps"][i].pop("op"), f"$.steps[{i}]")
        doc(f"steps[{i}] extra key", lambda d, i=i: d["steps"][i].__setitem__("bogus", 1), f"$.steps[{i}]")
        doc(f"steps[{i}] bad expect_error", lambda d, i=i: d["steps"][i].__setitem__("expect_error", "Oops"),
            f"$.steps[{i}]")
    for b in (3, 7, 99):
        doc(f"unknown broker {b} in broker_fail", lambda d, b=b: d["steps"][1].__setitem__("broker", b),
            "$.steps[1].broker")
        doc(f"unknown broker {b} in assignment", lambda d, b=b: d["steps"][0]["assignment"].__setitem__("0", [0, b]),
            "$.steps[0].assignment")
        doc(f"unknown broker {b} in reassign", lambda d, b=b: d["steps"][2].__setitem__("replicas", [b]),
            "$.steps[2].replicas")
        doc(f"unknown broker {b} in replica name",
            lambda d, b=b: d["steps"][4].__setitem__("replicas", [f"t-0@{b}"]), "$.steps[4].replicas[0]")
        doc(f"controller {b}", lambda d, b=b: d["config"].__setitem__("controller", b), "$.config.controller")
    for name in ("u-0", "t-1", "t-9", "x-y-0"):
        doc(f"uncreated {name} produce", lambda d, n=name: d["steps"][3].__setitem__("partition", n),
            "$.steps[3].partition")
        doc(f"uncreated {name} transition", lambda d, n=name: d["steps"][5].__setitem__("partitions", [n]),
            "$.steps[5].partitions[0]")
        doc(f"uncreated replica {name}", lambda d, n=name: d["steps"][4].__setitem__("replicas", [n + "@0"]),
            "$.steps[4].replicas[0]")
    doc("delete uncreated topic", lambda d: d["steps"].append({"op": "delete_topic", "topic": "zz"}),
        "$.steps[6].topic")
    for key in ("config", "steps"):
        doc(f"missing {key}", lambda d, k=key: d.pop(k), "$")
        for v in junk_values[:6]:
            if key == "steps" and v == []:
                continue  # a scenario with no steps is valid
            doc(f"{key}={v!r}", lambda d, k=key, v=v: d.__setitem__(k, v), f"$.{key}")
    for key, v in [("brokers", []), ("brokers", [0, 0]), ("brokers", ["a"]), ("rules", "zk"),
                   ("truncation", "kip999"), ("min_insync_replicas", 0), ("unclean_leader_election", "yes"),
                   ("colour", "red"), ("brokers", None), ("controller", "0")]:
        doc(f"config.{key}={v!r}", lambda d, k=key, v=v: d["config"].__setitem__(k, v), "$.config")
    doc("config without brokers", lambda d: d["config"].pop("brokers"), "$.config")
    doc("unknown top-level key", lambda d: d.__setitem__("stepz", []), "$")
    doc("expect not an object", lambda d: d.__setitem__("expect", [1]), "$.expect")
    doc("expect unknown key", lambda d: d["expect"].__setitem__("leaders", 1), "$.expect")
    doc("bad partition name", lambda d: d["steps"][3].__setitem__("partition", "t0"), "$.steps[3].partition")
    doc("bad replica name", lambda d: d["steps"][4].__setitem__("replicas", ["t-0"]), "$.steps[4].replicas[0]")
    doc("bad target", lambda d: d["steps"][5].__setitem__("target", "Online"), "$.steps[5].target")
    doc("bad selector", lambda d: d["steps"][5].__setitem__("selector", "random"), "$.steps[5].selector")
    doc("steps item not object", lambda d: d["steps"].__setitem__(0, 5), "$.steps[0]")
    raw = json.dumps(GOOD)
    for cut in sorted(rng.sample(range(1, len(raw) - 1), 20)):
        out.append((f"truncated at {cut}", raw[:cut].encode(), "broken JSON"))
    out.append(("empty file", b"", "broken JSON"))
    out.append(("binary", bytes(range(256)), "not UTF-8"))
    out.append(("top-level list", b"[1, 2]", "$"))
    out.append(("top-level string", b'"scenario"', "$"))
    out.append(("duplicate key", b'{"config": {"brokers": [0]}, "config": {"brokers": [1]}, "steps": []}',
                "duplicate key"))
    out.append(("deep nesting", b"[" * 100000 + b"]" * 100000, "JSON"))
    out.append(("nan", b'{"config": {"brokers": [NaN]}, "steps": []}', "$.config.brokers[0]"))
    return out


MUTATIONS = _mutations()


def test_there_are_at_least_two_hundred():
    assert len(MUTATIONS) >= 200


@pytest.mark.parametrize("label,raw,where", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_malformed_exits_2_naming_the_place(label, raw, where, tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_bytes(raw)
    assert main(["run", str(f)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was run
    assert where in captured.err, captured.err
    assert "Traceback" not in captured.err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("label,raw,where", MUTATIONS[::40], ids=[m[0] for m in MUTATIONS[::40]])
def test_malformed_through_the_real_command(label, raw, where, tmp_path):
    f = tmp_path / "bad.json"
    f.write_bytes(raw)
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", str(f)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr and where in done.stderr
