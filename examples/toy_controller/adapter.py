#!/usr/bin/env python3
"""Adapter between `kcm conform` and the toy controller.

Reads one scenario (JSON) on stdin, runs its steps on controller.Controller, prints the trace (one JSON event per
line) on stdout and, when KCM_RESULT is set, writes the result document there. Exit 0 when the scenario ran, 3 when
it uses an operation or setting this controller does not implement, 1 on a bad document.

    python examples/toy_controller/adapter.py [--bug NAME]... < scenario.json
    TOY_BUG=no-leader-epoch-bump python examples/toy_controller/adapter.py < scenario.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controller import BUGS, Controller, Refused  # noqa: E402

SUPPORTED_OPS = {"create_topic", "broker_fail", "broker_start", "controlled_shutdown", "controller_resign",
                 "preferred_election", "partition_transition", "replica_transition", "isr_shrink", "reassign",
                 "add_partitions", "replicate", "delete_topic", "produce", "consume",
                 "broker_bounce"}
IGNORED_SETTINGS = {"brokers", "controller", "unclean_leader_election", "rules", "min_insync_replicas",
                    "truncation"}


def partition(name: str) -> tuple[str, int]:
    """('t', 0) for 't-0'."""
    topic, _, number = name.rpartition("-")
    return topic, int(number)


def replica(name: str) -> tuple[tuple[str, int], int]:
    """(('t', 0), 2) for 't-0@2'."""
    part, _, broker = name.rpartition("@")
    return partition(part), int(broker)


def unsupported(doc: dict[str, Any]) -> str:
    """Why this controller cannot run the scenario ('' when it can)."""
    config = doc.get("config", {})
    for key, value in config.items():
        if key == "variants" and value:
            return "bug variants of kcm's reference"
        if key == "delivery" and value != "sync":
            return "asynchronous delivery"
        if key == "zombie_controller" and value:
            return "zombie controllers"
        if key not in IGNORED_SETTINGS | {"variants", "delivery", "zombie_controller"}:
            return f"setting {key}"
    if config.get("rules", "seeds") not in ("seeds", "kafka"):
        return f"rule set {config.get('rules')}"
    ops = {step.get("op") for step in doc.get("steps", [])}
    for op in sorted(ops - SUPPORTED_OPS):
        return f"operation {op}"
    return ""


def run_step(c: Controller, step: dict[str, Any], fenced_epochs: bool = False) -> None:
    """Apply one scenario step to the controller (fenced_epochs: fetches carry the leader epoch, KIP-320)."""
    op = step["op"]
    if op == "create_topic":
        c.create_topic(step["topic"], step.get("assignment"), step.get("partitions", 0),
                       step.get("replication_factor", 0))
    elif op == "broker_fail":
        c.broker_fail(step["broker"])
    elif op == "broker_bounce":
        c.broker_bounce(step["broker"])
    elif op == "broker_start":
        c.broker_start(step["broker"])
    elif op == "controlled_shutdown":
        c.controlled_shutdown(step["broker"])
    elif op == "controller_resign":
        c.controller_resign(step.get("broker", -1))
    elif op == "preferred_election":
        names = step.get("partitions")
        c.preferred_election(None if names is None else [partition(n) for n in names])
    elif op == "partition_transition":
        c.partition_transition([partition(n) for n in step["partitions"]], step["target"], step.get("selector"))
    elif op == "replica_transition":
        c.replica_transition([replica(n) for n in step["replicas"]], step["target"])
    elif op == "replicate":
        c.replicate(partition(step["partition"]), step.get("broker", -1), fenced_epochs)
    elif op == "produce":
        c.produce(partition(step["partition"]), step.get("records", 1), str(step.get("acks", "all")) in ("all", "-1"))
    elif op == "consume":
        c.consume(partition(step["partition"]))
    elif op == "delete_topic":
        c.delete_topic(step["topic"])
    elif op == "add_partitions":
        c.add_partitions(step["topic"], step["assignment"])
    elif op == "reassign":
        c.reassign(partition(step["partition"]), list(step["replicas"]))
    elif op == "isr_shrink":
        c.isr_shrink(partition(step["partition"]), step["broker"])


def main() -> int:
    """Run the scenario on stdin; see the module's docstring for the exit codes."""
    parser = argparse.ArgumentParser(description="kcm conform adapter for the toy controller")
    parser.add_argument("--bug", action="append", default=[], choices=sorted(BUGS), help="switch a seeded bug on")
    args = parser.parse_args()
    bugs = set(args.bug) | {b for b in os.environ.get("TOY_BUG", "").split(",") if b}
    unknown = bugs - set(BUGS)
    if unknown:
        print(f"toy adapter: unknown bug {sorted(unknown)}", file=sys.stderr)
        return 1
    try:
        doc = json.load(sys.stdin)
        config = doc["config"]
    except (ValueError, KeyError, TypeError) as err:
        print(f"toy adapter: bad scenario document: {err}", file=sys.stderr)
        return 1
    why = unsupported(doc)
    if why:
        print(f"toy adapter: not implemented: {why}", file=sys.stderr)
        return 3
    c = Controller(config["brokers"], config.get("controller"), config.get("unclean_leader_election", False),
                   config.get("rules", "seeds"), bugs, config.get("min_insync_replicas", 1),
                   config.get("truncation", "high_watermark"))
    for step in doc["steps"]:
        saved = c.snapshot()
        try:
            run_step(c, step, config.get("truncation") == "kip320")
        except Refused as err:
            c.restore(saved)
            print(f"toy adapter: {step['op']} refused: {err.name}: {err}", file=sys.stderr)
    out = sys.stdout
    for event in c.events:
        out.write(json.dumps(event) + "\n")
    target = os.environ.get("KCM_RESULT")
    if target:
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(c.result(), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
