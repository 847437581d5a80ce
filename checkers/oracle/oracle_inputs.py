"""The oracles' inputs written from a run of the model: a trace (`kcm check-trace`) and a state-change log
(`kcm check-log`), as an implementation that behaves as the model would write them.

Each step of a run becomes, in this order, the events its changes imply: brokers going down or up, a controller
elected, the state changes it logged (from its effects), the partition znodes it wrote (one net write per znode),
the LeaderAndIsr, UpdateMetadata and StopReplica requests it sent and how each broker took them. This lets the
oracles be compared with the catalogue's predicates on explored states: the oracle must name, at the same step,
a property the predicates find violated (tests/test_oracles_on_explored_states.py).

What the formats cannot carry is left out rather than guessed: the data plane (produce, fetch) and asynchronous
delivery are not written (`unsupported` names why for a step), nor is a topic's deletion (its writes of a znode it
then removes are not in a step's net changes). The golden trace of a scenario (`scenario_trace`) writes them all.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from itertools import count
from typing import Any, NamedTuple

from kcm.model import actions as A
from kcm.model.cluster import NO_LEADER, Cluster, ClusterConfig, ControllerContext, LeaderAndIsr, initial_cluster
from kcm.model.effects import Effects, LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from kcm.model.names import tp_name
from kcm.reference import api

# Steps whose moves the formats carry no event for, with the reason.
UNSUPPORTED: dict[type, str] = {
    A.Produce: "the data plane (produce, fetch) is not written: a step's net log changes are no fetch events",
    A.Replicate: "the data plane (produce, fetch) is not written: a step's net log changes are no fetch events",
    A.IsrShrink: "the data plane (produce, fetch) is not written: a step's net log changes are no fetch events",
    A.Consume: "the data plane (produce, fetch) is not written: a step's net log changes are no fetch events",
    A.Deliver: "asynchronous delivery is not written: a request's sending and its receipt are different steps",
    A.DeleteTopic: "one net write per znode: a deletion's writes of a znode it then removes would be lost, and its "
                   "requests would carry leader epochs never written",
}
_KIND = {LeaderAndIsrRequest: "LeaderAndIsr", UpdateMetadataRequest: "UpdateMetadata",
         StopReplicaRequest: "StopReplica"}


def unsupported(config: ClusterConfig, action: Any) -> str:
    """Why a step of this action cannot be written in the oracles' formats ('' when it can)."""
    if config.delivery != "sync":
        return UNSUPPORTED[A.Deliver]
    return UNSUPPORTED.get(type(action), "")


def _refusals(effects: Effects) -> Counter:
    """(broker, request kind, controller epoch) -> how many such requests the broker refused (from the notes the
    reference writes for a stale controller epoch), and (broker, partition) -> LeaderAndIsr partitions ignored."""
    out: Counter = Counter()
    for note in effects.notes:
        words = note.split()
        if len(words) > 7 and words[0] == "broker" and words[2] == "refused":
            out[(int(words[1]), words[3], int(words[7].rstrip(":")))] += 1
        elif len(words) > 5 and words[0] == "broker" and words[2:4] == ["ignored", "LeaderAndIsr"]:
            out[(int(words[1]), words[5].rstrip(":"))] += 1
    return out


def _zombie_step(before: Cluster, action: Any) -> bool:
    """Whether the step is the deposed controller's (which has not yet handled the loss of its session)."""
    return before.zombie is not None and (isinstance(action, A.ZombieElect)
                                          or (isinstance(action, A.ControllerEvent) and action.zombie))


def _actor(before: Cluster, action: Any, after: Cluster) -> ControllerContext:
    """The controller whose decisions the step logs: the zombie in its own steps, else the active controller."""
    if before.zombie is not None and _zombie_step(before, action):
        return before.zombie
    return after.ctx if after.ctx.controller_id >= 0 else before.ctx


def _written(before: Cluster, after: Cluster) -> list[tuple[tuple, LeaderAndIsr, LeaderAndIsr | None]]:
    """(partition, znode after, znode before or None) for each partition znode the step wrote."""
    if after.zk.partitions is before.zk.partitions:
        return []
    old = dict(before.zk.partitions)
    return [(tp, lai, old.get(tp)) for tp, lai in after.zk.partitions if old.get(tp) != lai]


def trace_events(config: ClusterConfig, before: Cluster, action: Any, after: Cluster,
                 effects: Effects) -> list[dict[str, Any]]:
    """The trace events of one step (`specs/trace.schema.json`), in the order an implementation writes them."""
    events: list[dict[str, Any]] = []
    old_brokers = dict(before.brokers)
    for b, s in after.brokers:
        was = old_brokers.get(b)
        if was is not None and was.alive and (not s.alive or s.incarnation != was.incarnation):
            events.append({"type": "broker_down", "broker": b})
        if s.alive and (was is None or not was.alive or s.incarnation != was.incarnation):
            events.append({"type": "broker_up", "broker": b})
    if after.zk.controller_epoch > before.zk.controller_epoch:
        events.append({"type": "controller_elected", "broker": after.zk.controller,
                       "epoch": after.zk.controller_epoch})
    # A deposed controller's state changes are moves of its own stale state machines, and a trace's state changes
    # carry no controller epoch to tell them from the active controller's: they are left out (its writes and
    # requests, which carry its epoch, are written). A state-change log names the epoch (`log_lines` writes them).
    changes = () if _zombie_step(before, action) else effects.state_changes
    for c in changes:
        if c.machine == "partition":
            events.append({"type": "partition_state_change", "partition": c.subject, "from": c.from_state,
                           "to": c.to_state})
        else:
            partition, _, replica = c.subject.rpartition("@")
            events.append({"type": "replica_state_change", "partition": partition, "replica": int(replica),
                           "from": c.from_state, "to": c.to_state})
    assignments = dict(after.zk.assignments)
    for tp, lai, prev in _written(before, after):
        ev = {"type": "leader_and_isr_write", "partition": tp_name(tp), "leader": lai.leader,
              "leader_epoch": lai.leader_epoch, "isr": list(lai.isr), "zk_version": lai.zk_version,
              "controller_epoch": lai.controller_epoch}
        if tp in assignments:
            ev["replicas"] = list(assignments[tp])
        if lai.leader != NO_LEADER and prev is not None and prev.leader != lai.leader:
            # the selector the implementation ran: the preferred one in a preferred election; the unclean one
            # (configured on) when it chose outside the ISR it found
            if isinstance(action, A.PreferredElection):
                ev["election"] = "preferred"
            elif config.unclean_leader_election and lai.leader not in prev.isr:
                ev["election"] = "unclean"
        events.append(ev)
    refused = _refusals(effects)
    for req in effects.requests:
        fields = _request_fields(req)
        events.append({"type": "request_sent", **fields})
        key = (req.broker, type(req).__name__, req.controller_epoch)
        if refused[key]:
            refused[key] -= 1
            events.append({"type": "request_received", **fields, "accepted": False})
            continue
        if isinstance(req, LeaderAndIsrRequest) and refused[(req.broker, tp_name(req.tp))]:
            refused[(req.broker, tp_name(req.tp))] -= 1
            # The broker ignored the partition (not its replica, or not a newer leader epoch).
            fields = {**fields, "partitions": []}
        events.append({"type": "request_received", **fields})
    return events


# ------------------------------------------------------------------------------------------- state-change log

_STAMP = "[2024-01-01 00:00:00,000]"


def _lai_text(req: LeaderAndIsrRequest) -> str:
    """Kafka 3.x's LeaderAndIsrPartitionState text of a request."""
    return (f"LeaderAndIsrPartitionState(topicName='{req.tp[0]}', partitionIndex={req.tp[1]}, "
            f"controllerEpoch={req.controller_epoch}, leader={req.leader}, leaderEpoch={req.leader_epoch}, "
            f"isr={sorted(req.isr)}, partitionEpoch={req.zk_version}, replicas={list(req.replicas)}, "
            f"addingReplicas=[], removingReplicas=[], isNew=false, leaderRecoveryState=0)")


def log_lines(config: ClusterConfig, before: Cluster, action: Any, after: Cluster, effects: Effects,
              correlation: Iterator[int]) -> list[str]:
    """The Kafka 3.x state-change log lines of one step: the acting controller's state changes and LeaderAndIsr
    requests, and each broker's receipt of them (applied or ignored as stale)."""
    actor = _actor(before, action, after)
    head = f"{_STAMP} TRACE [Controller id={actor.controller_id} epoch={actor.epoch}] "
    lines = []
    for c in effects.state_changes:
        if c.machine == "replica":
            partition, _, replica = c.subject.rpartition("@")
            lines.append(f"{head}Changed state of replica {replica} for partition {partition} from {c.from_state} "
                         f"to {c.to_state} (state.change.logger)")
            continue
        # Without the leader a partition went online with: a step holds only the net value of a znode it wrote
        # twice, while the LeaderAndIsr requests below carry each decision's own.
        lines.append(f"{head}Changed partition {c.subject} state from {c.from_state} to {c.to_state} "
                     f"(state.change.logger)")
    refused = _refusals(effects)
    for req in effects.requests:
        if not isinstance(req, LeaderAndIsrRequest):
            continue
        body = _lai_text(req)
        role = "leader" if req.leader == req.broker else "follower"
        sender = f"{_STAMP} TRACE [Controller id={actor.controller_id} epoch={req.controller_epoch}] "
        lines.append(f"{sender}Sending become-{role} LeaderAndIsr request {body} to broker {req.broker} for "
                     f"partition {tp_name(req.tp)} (state.change.logger)")
        cid = next(correlation)
        receiver = f"{_STAMP} TRACE [Broker id={req.broker}] "
        lines.append(f"{receiver}Received LeaderAndIsr request {body} correlation id {cid} from controller "
                     f"{actor.controller_id} epoch {req.controller_epoch} for partition {tp_name(req.tp)} "
                     f"(state.change.logger)")
        key = (req.broker, "LeaderAndIsrRequest", req.controller_epoch)
        if refused[key]:
            refused[key] -= 1
            lines.append(f"{_STAMP} WARN [Broker id={req.broker}] Ignoring LeaderAndIsr request from controller "
                         f"{actor.controller_id} with correlation id {cid} since its controller epoch "
                         f"{req.controller_epoch} is old (state.change.logger)")
        elif refused[(req.broker, tp_name(req.tp))]:
            refused[(req.broker, tp_name(req.tp))] -= 1
        else:
            lines.append(f"{receiver}Handling LeaderAndIsr request correlationId {cid} from controller "
                         f"{actor.controller_id} epoch {req.controller_epoch} starting the become-{role} "
                         f"transition for partition {tp_name(req.tp)} (state.change.logger)")
    return lines


# ---------------------------------------------------------------------------------------------------- runs


class Step(NamedTuple):
    """One step of a run: the state before, the action (None for the cluster's start), the state after, effects."""

    before: Cluster
    action: Any
    after: Cluster
    effects: Effects


def replay(config: ClusterConfig, actions: list[Any]) -> list[Step]:
    """The run of the actions from the cluster's start (the first controller election), step by step."""
    first = initial_cluster(config)
    state, effects = api.start(config)
    steps = [Step(first, None, state, effects)]
    for action in actions:
        nxt, effects = api.step(config, state, action)
        steps.append(Step(state, action, nxt, effects))
        state = nxt
    return steps


def trace_of(config: ClusterConfig, steps: list[Step]) -> tuple[list[dict[str, Any]], list[int]]:
    """The run's trace events and, for each, the index of the step that wrote it; the brokers a run starts with
    come up first."""
    events = [{"type": "broker_up", "broker": b} for b, s in steps[0].before.brokers if s.alive]
    owner = [0] * len(events)
    for i, (before, action, after, effects) in enumerate(steps):
        written = trace_events(config, before, action, after, effects)
        events += written
        owner += [i] * len(written)
    return events, owner


def log_of(config: ClusterConfig, steps: list[Step]) -> tuple[list[str], list[int]]:
    """The run's state-change log lines and, for each, the index of the step that wrote it."""
    correlation = count(1)
    lines: list[str] = []
    owner: list[int] = []
    for i, (before, action, after, effects) in enumerate(steps):
        written = log_lines(config, before, action, after, effects, correlation)
        lines += written
        owner += [i] * len(written)
    return lines, owner


# ------------------------------------------------------------------------------------------- golden traces


@contextlib.contextmanager
def _leader_writes(into: list[tuple[tuple, LeaderAndIsr]]) -> Iterator[None]:
    """Record every ISR write a partition leader makes while the block runs (the reference calls
    `reassignment.on_isr_change` right after each one), so that a step's intermediate znode values are known."""
    from kcm.model.txn import draft_lookup
    from kcm.reference import reassignment

    original = reassignment.on_isr_change

    def on_isr_change(t: Any, tp: tuple) -> None:
        into.append((tp, draft_lookup(t.zk, "partitions", tp)))
        original(t, tp)

    reassignment.on_isr_change = on_isr_change
    try:
        yield
    finally:
        reassignment.on_isr_change = original


@contextlib.contextmanager
def _elections(into: list[tuple[tuple, str, int]]) -> Iterator[None]:
    """Record (partition, selector, leader chosen) for every leader selector the reference runs while the block runs,
    so that each write of a new leader can say which election made it."""
    from kcm.reference import partition_machine

    original = partition_machine.choose

    def choose(t: Any, tp: tuple, selector: str, isr: tuple[int, ...]) -> Any:
        found = original(t, tp, selector, isr)
        if found is not None:
            into.append((tp, selector, found[0]))
        return found

    partition_machine.choose = choose
    try:
        yield
    finally:
        partition_machine.choose = original


# The trace format's name of each leader selector's election.
_ELECTION = {"offline": "offline", "reassigned": "reassignment", "preferred": "preferred",
             "controlled_shutdown": "controlled_shutdown"}


def _znode_writes(before: Cluster, after: Cluster, effects: Effects,
                  leader_writes: list[tuple[tuple, LeaderAndIsr]]) -> list[tuple[tuple, LeaderAndIsr]]:
    """Every partition znode value a step wrote, in order of zkVersion: the controller's (each carried by the
    LeaderAndIsr requests it sent), the leaders' own ISR writes, and the value the znode ends the step with."""
    old = dict(before.zk.partitions)
    found: dict[tuple, dict[int, LeaderAndIsr]] = {}

    def add(tp: tuple, lai: LeaderAndIsr) -> None:
        prev = old.get(tp)
        if prev is None or lai.zk_version > prev.zk_version or lai.leader_epoch > prev.leader_epoch:
            found.setdefault(tp, {}).setdefault(lai.zk_version, lai)

    for req in effects.requests:
        if isinstance(req, LeaderAndIsrRequest):
            add(req.tp, LeaderAndIsr(req.leader, req.leader_epoch, tuple(sorted(req.isr)), req.controller_epoch,
                                     req.zk_version))
    for tp, lai in leader_writes:
        if lai is not None:
            add(tp, lai)
    for tp, lai, _ in _written(before, after):
        found.setdefault(tp, {})[lai.zk_version] = lai  # the value the znode holds: it wins over a request's copy
    # A znode the step deleted (its topic's deletion completed) keeps its writes: the oracle remembers a znode until
    # its partition is created again, so the deletion's writes are judged against the znode's earlier ones.
    return [(tp, lai) for tp in sorted(found) for _, lai in sorted(found[tp].items())]


def golden_events(config: ClusterConfig, before: Cluster, action: Any, after: Cluster, effects: Effects,
                  leader_writes: list[tuple[tuple, LeaderAndIsr]],
                  elections: list[tuple[tuple, str, int]] | None = None) -> list[dict[str, Any]]:
    """The trace events of one step of a scenario as the reference ran it: as `trace_events`, but with every znode
    value the step wrote (not only the last), each new leader's write marked with the election that chose it
    (`elections`: the selectors run, in order), the data plane's appends and fetches, and asynchronous delivery
    written as it happens (a request is sent in the step that queues it and received in the `deliver` step that
    delivers it)."""
    unused = list(elections or [])
    events = [e for e in trace_events(config, before, action, after, effects)
              if e["type"] not in ("leader_and_isr_write", "request_sent", "request_received")]
    assignments = dict(after.zk.assignments)
    previous = dict(before.zk.partitions)
    first_change = next((i for i, e in enumerate(events) if e["type"].endswith("_state_change")), len(events))
    for tp, lai in _znode_writes(before, after, effects, leader_writes):
        prev = previous.get(tp)
        ev = {"type": "leader_and_isr_write", "partition": tp_name(tp), "leader": lai.leader,
              "leader_epoch": lai.leader_epoch, "isr": list(lai.isr), "zk_version": lai.zk_version,
              "controller_epoch": lai.controller_epoch}
        if tp in assignments and lai == dict(after.zk.partitions).get(tp):
            ev["replicas"] = list(assignments[tp])
        if lai.leader != NO_LEADER and prev is not None and prev.leader != lai.leader:
            chosen = next((e for e in unused if e[0] == tp and e[2] == lai.leader), None)
            if chosen is not None:
                unused.remove(chosen)
            if config.unclean_leader_election and lai.leader not in prev.isr:
                ev["election"] = "unclean"
            elif chosen is not None:
                ev["election"] = _ELECTION[chosen[1]]
            elif isinstance(action, A.PreferredElection):
                ev["election"] = "preferred"
        events.append(ev)
        previous[tp] = lai
    events[first_change:first_change] = _data_events(action, before, after)
    if config.delivery == "sync":
        return events + [e for e in trace_events(config, before, action, after, effects)
                         if e["type"] in ("request_sent", "request_received")]
    for req in effects.requests:  # queued: received in a later `deliver` step
        events.append({"type": "request_sent", **_request_fields(req)})
    if isinstance(action, A.Deliver):
        queues_after = dict(after.inflight)
        for key, queue in before.inflight:
            if queue and len(queues_after.get(key, ())) < len(queue):
                req = queue[0]
                refused = _refusals(effects)
                accepted = not refused[(req.broker, type(req).__name__, req.controller_epoch)]
                fields = _request_fields(req)
                if isinstance(req, LeaderAndIsrRequest) and refused[(req.broker, tp_name(req.tp))]:
                    fields["partitions"] = []
                events.append({"type": "request_received", **fields, **({} if accepted else {"accepted": False})})
    return events


def _data_events(action: Any, before: Cluster, after: Cluster) -> list[dict[str, Any]]:
    """The produce or fetch events of a data-plane step: a produce's append on its leader, and each follower's fetch
    of a replicate round (from the offset its log kept, as it ends the round), with the leader's LEO and HW after."""
    if not isinstance(action, A.Produce | A.Replicate):
        return []
    old, new = dict(before.replicas), dict(after.replicas)
    tp = action.tp
    name = tp_name(tp)
    changed = sorted(b for (t, p, b), r in new.items() if (t, p) == tp and old.get((t, p, b)) != r)
    if isinstance(action, A.Produce):
        out = []
        for b in changed:
            was, now = old.get((tp[0], tp[1], b)), new[(tp[0], tp[1], b)]
            grown = now.leo - (was.leo if was is not None else 0)
            if now.leader == b and grown > 0:
                out.append({"type": "produce", "partition": name, "broker": b, "offset": now.leo - grown,
                            "count": grown, "leo": now.leo, "hw": now.hw})
        return out
    out = []
    for b in changed:
        was, now = old.get((tp[0], tp[1], b)), new[(tp[0], tp[1], b)]
        if was is None or was.leader in (b, NO_LEADER):
            continue
        # the leader it fetched from is the one it followed when the round began (a reassignment the round
        # completes may move the leader after the fetches)
        key = (tp[0], tp[1], was.leader)
        lead = new.get(key, old.get(key))
        if lead is None:
            continue
        kept = next((i for i, (x, y) in enumerate(zip(was.log, now.log, strict=False)) if x != y),
                    min(len(was.log), len(now.log)))
        out.append({"type": "fetch", "partition": name, "broker": b, "leader": was.leader, "fetch_offset": kept,
                    "leo": now.leo, "hw": now.hw, "leader_leo": lead.leo, "leader_hw": lead.hw})
    return out


def _request_fields(req: Any) -> dict[str, Any]:
    """The request fields of a request_sent or request_received event."""
    if isinstance(req, LeaderAndIsrRequest):
        parts = [{"partition": tp_name(req.tp), "leader": req.leader, "leader_epoch": req.leader_epoch,
                  "isr": sorted(req.isr), "zk_version": req.zk_version, "replicas": list(req.replicas)}]
    elif isinstance(req, StopReplicaRequest):
        parts = [{"partition": tp_name(req.tp), "delete": req.delete}]
    else:
        parts = [{"partition": tp_name(tp)} for tp in req.tps]
    return {"request": _KIND[type(req)], "broker": req.broker, "controller_epoch": req.controller_epoch,
            "partitions": parts}


def scenario_trace(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The golden trace of a validated scenario: the reference's own run of it in the trace format, starting with
    one broker_up for each broker live at the start. A step the reference refuses writes nothing."""
    from kcm.checkers.core.scenario import cluster_config
    from kcm.model.actions import from_step
    from kcm.model.errors import KcmError

    config = cluster_config(doc)
    first = initial_cluster(config)
    writes: list[tuple[tuple, LeaderAndIsr]] = []
    chosen: list[tuple[tuple, str, int]] = []
    events = [{"type": "broker_up", "broker": b} for b, s in first.brokers if s.alive]
    with _leader_writes(writes), _elections(chosen):
        state, effects = api.start(config)
        events += golden_events(config, first, None, state, effects, writes, chosen)
        for step in doc["steps"]:
            writes.clear()
            chosen.clear()
            action = from_step(step)
            try:
                nxt, effects = api.step(config, state, action)
            except KcmError:
                continue
            events += golden_events(config, state, action, nxt, effects, writes, chosen)
            state = nxt
    return events


__all__ = ["UNSUPPORTED", "Step", "golden_events", "log_lines", "log_of", "replay", "scenario_trace", "trace_events",
           "trace_of", "unsupported"]
