"""The controller's ZooKeeper record (`cluster.Zk`) laid out as Kafka's znodes: paths, data, versions, owners.

One function, `layout`, says where each field of `Zk` lives in Kafka's ZooKeeper tree and what its data is (JSON
in Kafka's formats, trimmed to what the model keeps). The versions the model tracks (the partition state znodes'
zkVersion, /controller_epoch's zkVersion) come with it, so a real server's versions can be compared with them.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from kcm.model.cluster import NO_CONTROLLER, Zk

# Persistent znodes a Kafka cluster has from its first broker's start (KafkaZkClient.createTopLevelPaths).
BASE_PATHS = ("/admin", "/admin/delete_topics", "/brokers", "/brokers/ids", "/brokers/topics")
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"


class Layout(NamedTuple):
    """One znode as the model says it is: its data, the version the model knows (None: not tracked), its owner."""

    data: bytes
    version: int | None
    owner: int | None  # the broker whose session owns this ephemeral znode; None: persistent


def broker_path(broker: int) -> str:
    """/brokers/ids/<id>: a broker's registration, ephemeral to its session."""
    return f"/brokers/ids/{broker}"


def topic_path(topic: str) -> str:
    """/brokers/topics/<topic>: the topic's replica assignment."""
    return f"/brokers/topics/{topic}"


def state_path(tp: tuple) -> str:
    """/brokers/topics/<topic>/partitions/<p>/state: the partition's leader and ISR."""
    return f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"


def is_partition_state(path: str) -> bool:
    """Whether path is a partition state znode (written conditionally on its zkVersion)."""
    parts = path.split("/")
    return len(parts) == 6 and parts[1:3] == ["brokers", "topics"] and parts[4] == "partitions" and parts[5] == "state"


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def layout(zk: Zk) -> dict[str, Layout]:
    """Every znode of a `Zk` value, path -> Layout (parents included)."""
    out: dict[str, Layout] = {p: Layout(b"", None, None) for p in BASE_PATHS}
    out[CONTROLLER_EPOCH] = Layout(str(zk.controller_epoch).encode(), zk.controller_epoch_zk_version, None)
    if zk.controller != NO_CONTROLLER:
        out[CONTROLLER] = Layout(_json({"version": 1, "brokerid": zk.controller}), None, zk.controller)
    for b in zk.brokers:
        out[broker_path(b)] = Layout(_json({"version": 5, "host": f"broker-{b}", "port": 9092}), None, b)
    topics: dict[str, dict[str, list[int]]] = {}
    for (topic, part), replicas in zk.assignments:
        topics.setdefault(topic, {})[str(part)] = list(replicas)
    original = dict(zk.reassign_original)
    targets = dict(zk.reassign_partitions)
    for topic, parts in topics.items():
        doc: dict[str, object] = {"version": 2, "partitions": parts}
        # KIP-455: a reassignment in flight is recorded in the topic znode (adding and removing replicas).
        adding = {p: [b for b in ar if b not in original[(topic, int(p))]]
                  for p, ar in parts.items() if (topic, int(p)) in original}
        if adding:
            doc["adding_replicas"] = adding
            doc["removing_replicas"] = {
                p: [b for b in original[(topic, int(p))] if b not in targets.get((topic, int(p)), ar)]
                for p, ar in parts.items() if (topic, int(p)) in original}
        out[topic_path(topic)] = Layout(_json(doc), None, None)
    for tp, lai in zk.partitions:
        out[topic_path(tp[0]) + "/partitions"] = Layout(b"", None, None)
        out[topic_path(tp[0]) + f"/partitions/{tp[1]}"] = Layout(b"", None, None)
        out[state_path(tp)] = Layout(_json({"version": 1, "leader": lai.leader, "leader_epoch": lai.leader_epoch,
                                            "isr": list(lai.isr), "controller_epoch": lai.controller_epoch}),
                                     lai.zk_version, None)
        out.setdefault(topic_path(tp[0]), Layout(b"", None, None))
    if zk.reassign_partitions:
        out[REASSIGN_PARTITIONS] = Layout(_json({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in zk.reassign_partitions]}), None, None)
    for topic in zk.delete_topics:
        out[f"/admin/delete_topics/{topic}"] = Layout(b"", None, None)
    return out
