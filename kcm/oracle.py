"""Public oracle API: check another implementation's events in-process against the model's rules.

Every function and the streaming `TraceChecker` judge with the `kafka` rule set unless told otherwise (the same
default as `kcm check-trace`, `kcm check-log` and the pytest plugin). A failed Verdict's `finding` is the `Finding`
every oracle and `kcm conform` report: rule id, message, location, evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kcm.checkers.oracle import oracle_trace
from kcm.checkers.oracle.finding import Finding
from kcm.checkers.oracle.oracle_trace import Verdict
from kcm.model.tables import ORACLE_RULES, rule_set

__all__ = ["ORACLE_RULES", "Finding", "TraceChecker", "Verdict", "assert_valid", "broker_down", "broker_up",
           "check_events", "check_trace_file", "controller_elected", "failure_message", "fetch", "leader_and_isr_write",
           "partition_state_change", "produce", "replica_state_change", "request_partition", "request_received",
           "request_sent"]


class TraceChecker(oracle_trace.TraceChecker):
    """A streaming checker: `feed(event)` or `feed_line(text)` as events happen; each returns None while all is
    legal and the first failure's Verdict from then on; `verdict()` judges everything fed so far."""

    def __init__(self, rules: str = ORACLE_RULES) -> None:
        super().__init__(rule_set(rules))


def check_events(events: Iterable[dict[str, Any]], rules: str = ORACLE_RULES) -> Verdict:
    """Replay a list of trace events (dicts in the specs/trace.schema.json format) and return the verdict."""
    return oracle_trace.check_events(events, rule_set(rules))


def check_trace_file(path: str | Path, rules: str = ORACLE_RULES) -> Verdict:
    """Replay a JSONL trace file and return the verdict (OSError when it cannot be read)."""
    return oracle_trace.check_file(str(path), rule_set(rules))


def failure_message(v: Verdict, source: str = "event") -> str:
    """The assertion message for a failed verdict: kcm's first violation, the event and the state before it that
    the broken rule reads (then the rules the events gave no means to judge)."""
    where = f"{source} {v.line}"
    if v.malformed:
        return f"kcm: {where} is malformed: {v.rule}"
    lines = [f"kcm: {where}: {v.rule}", f"  event: {v.event}", f"  state before: {v.focus} (what {v.rule_id} reads)"]
    lines += [f"  not judged: {rid}: {why}" for rid, why in sorted((v.not_judged or {}).items())]
    return "\n".join(lines)


def assert_valid(events: Iterable[dict[str, Any]], rules: str = ORACLE_RULES) -> None:
    """Fail a test with kcm's first violation (for use in another project's pytest suite)."""
    v = check_events(events, rules)
    if not v.ok:
        raise AssertionError(failure_message(v))


# ------------------------------------------------------------------------------------------------ event builders
# One typed function per event type of specs/trace.schema.json; `from_` stands for the `from` key (a Python keyword).
# Optional fields left at None are left out of the event.


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **{k: v for k, v in fields.items() if v is not None}}


def controller_elected(broker: int, epoch: int, ts: Any = None) -> dict[str, Any]:
    """A controller election: `broker` won with controller epoch `epoch`."""
    return _event("controller_elected", broker=broker, epoch=epoch, ts=ts)


def partition_state_change(partition: str, from_: str, to: str, ts: Any = None) -> dict[str, Any]:
    """A partition state machine move, e.g. partition_state_change("t-0", "NewPartition", "OnlinePartition")."""
    return {**_event("partition_state_change", partition=partition), "from": from_, "to": to,
            **({"ts": ts} if ts is not None else {})}


def replica_state_change(partition: str, replica: int, from_: str, to: str, ts: Any = None) -> dict[str, Any]:
    """A replica state machine move of the replica of `partition` on broker `replica`."""
    return {**_event("replica_state_change", partition=partition, replica=replica), "from": from_, "to": to,
            **({"ts": ts} if ts is not None else {})}


def leader_and_isr_write(partition: str, leader: int, leader_epoch: int, isr: list[int], zk_version: int,
                         controller_epoch: int, replicas: list[int] | None = None, election: str | None = None,
                         ts: Any = None) -> dict[str, Any]:
    """A write of a partition's leader-and-ISR znode (`election`: offline, unclean, preferred, reassignment or
    controlled_shutdown, the selector that chose a new leader)."""
    return _event("leader_and_isr_write", partition=partition, leader=leader, leader_epoch=leader_epoch,
                  isr=list(isr), zk_version=zk_version, controller_epoch=controller_epoch,
                  replicas=None if replicas is None else list(replicas), election=election, ts=ts)


def request_partition(partition: str, leader: int | None = None, leader_epoch: int | None = None,
                      isr: list[int] | None = None, zk_version: int | None = None, replicas: list[int] | None = None,
                      delete: bool | None = None) -> dict[str, Any]:
    """One partition of a request: its leader, leader epoch and ISR for a LeaderAndIsr, `delete` for a StopReplica."""
    return {k: v for k, v in {"partition": partition, "leader": leader, "leader_epoch": leader_epoch,
                              "isr": None if isr is None else list(isr), "zk_version": zk_version,
                              "replicas": None if replicas is None else list(replicas), "delete": delete}.items()
            if v is not None}


def request_sent(request: str, broker: int, controller_epoch: int, partitions: list[dict[str, Any]],
                 ts: Any = None) -> dict[str, Any]:
    """The controller sent a LeaderAndIsr, UpdateMetadata or StopReplica request to `broker`."""
    return _event("request_sent", request=request, broker=broker, controller_epoch=controller_epoch,
                  partitions=list(partitions), ts=ts)


def request_received(request: str, broker: int, controller_epoch: int, partitions: list[dict[str, Any]],
                     accepted: bool = True, ts: Any = None) -> dict[str, Any]:
    """`broker` received a request and applied it (`accepted=False`: refused it, e.g. as stale)."""
    ev = _event("request_received", request=request, broker=broker, controller_epoch=controller_epoch,
                partitions=list(partitions), ts=ts)
    if not accepted:
        ev["accepted"] = False
    return ev


def broker_up(broker: int, ts: Any = None) -> dict[str, Any]:
    """A broker registered (came up); a trace says so for each broker live at its start, before anything else."""
    return _event("broker_up", broker=broker, ts=ts)


def broker_down(broker: int, ts: Any = None) -> dict[str, Any]:
    """A broker went down (its session expired)."""
    return _event("broker_down", broker=broker, ts=ts)


def produce(partition: str, broker: int, offset: int, leo: int, hw: int, count: int | None = None,
            ts: Any = None) -> dict[str, Any]:
    """The leader `broker` appended `count` records (default 1) at `offset`; `leo` and `hw` are its own after."""
    return _event("produce", partition=partition, broker=broker, offset=offset, count=count, leo=leo, hw=hw, ts=ts)


def fetch(partition: str, broker: int, leader: int, fetch_offset: int, leo: int, hw: int,
          leader_leo: int | None = None, leader_hw: int | None = None, ts: Any = None) -> dict[str, Any]:
    """The follower `broker` fetched from `leader` at `fetch_offset`; `leo` and `hw` are the follower's after."""
    return _event("fetch", partition=partition, broker=broker, leader=leader, fetch_offset=fetch_offset, leo=leo,
                  hw=hw, leader_leo=leader_leo, leader_hw=leader_hw, ts=ts)
