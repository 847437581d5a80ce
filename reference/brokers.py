"""Broker startup, failure and controlled shutdown (onBrokerStartup, onBrokerFailure, shutdownBroker)."""

from __future__ import annotations

from kcm.model.actions import BrokerBounce, BrokerFail, BrokerStart, ControlledShutdown, SessionExpiry
from kcm.model.cluster import NO_LEADER, replace
from kcm.model.errors import BrokerNotAvailable
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn, draft_lookup, draft_peek, draft_sorted_items
from kcm.reference import broker_logs, requests, selectors
from kcm.reference.context import has_controller, is_deleting, replicas_on
from kcm.reference.controller import elect_controller, reset_context
from kcm.reference.events import enqueue, processes
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import handle_partition_changes, trigger_online_partition_state_change
from kcm.reference.reassignment import on_partition_reassignment
from kcm.reference.replica_machine import handle_replica_changes
from kcm.reference.topics import fail_replica_deletion, resume_deletion


def _registered(t: Txn, broker: int) -> None:
    if broker not in t.brokers:
        raise BrokerNotAvailable(f"broker {broker} is not registered in this cluster")


@handles(BrokerStart)
def broker_start(t: Txn, a: BrokerStart) -> None:
    """The broker (re)registers; the controller runs onBrokerStartup (or it becomes controller if there is none)."""
    _registered(t, a.broker)
    state = t.brokers[a.broker]
    if state.alive:
        raise BrokerNotAvailable(f"broker {a.broker} is already live")
    t.brokers[a.broker] = replace(state, alive=True, shutting_down=False, incarnation=state.incarnation + 1,
                                  leftover_batch=False, half_applied=())
    _restart_locally(t, a.broker)
    t.zk.brokers.add(a.broker)
    if not has_controller(t):
        elect_controller(t)
        return
    enqueue(t, "BrokerChange", (a.broker, True))


@processes("BrokerChange")
def broker_change(t: Txn, change: tuple[int, bool]) -> None:
    """BrokerChange: the controller reads the broker's registration come (onBrokerStartup) or go (onBrokerFailure).

    The event names the incarnation whose registration changed, as Kafka 2.2+ tells incarnations apart by broker
    epoch: a broker that died and registered again before the controller looked is handled as failed, then started.
    """
    broker, up = change
    if up:
        t.ctx.live_brokers.add(broker)
        t.ctx.discard("shutting_down", broker)
        on_broker_startup(t, {broker})
    else:
        t.ctx.live_brokers.discard(broker)
        t.ctx.discard("shutting_down", broker)
        on_broker_failure(t, {broker})


def _restart_locally(t: Txn, broker: int) -> None:
    """A restarted broker has lost its in-memory partition state; its logs and checkpointed HW remain."""
    for key, data in list(t.replicas.items()):
        if key[2] == broker:
            t.replicas[key] = replace(data, leader=NO_LEADER, leader_epoch=-1)
    broker_logs.on_broker_restart(t, broker)


@handles(BrokerBounce)
def broker_bounce(t: Txn, a: BrokerBounce) -> None:
    """The broker restarts and re-registers before the controller reads /brokers/ids (a fast bounce).

    Since KIP-380 (KAFKA-1120's fix, 2.2.0) the controller compares broker epochs (the znode's czxid), sees
    the bounce and runs onBrokerFailure then onBrokerStartup for it. Variant KAFKA-1120: it sees the same id
    set, does nothing, and the restarted broker never learns its partitions.
    """
    _registered(t, a.broker)
    state = t.brokers[a.broker]
    if not state.alive:
        raise BrokerNotAvailable(f"broker {a.broker} is not live")
    if t.zk.controller == a.broker:
        raise BrokerNotAvailable(f"broker {a.broker} is the controller: its restart is a controller failover "
                                 "(broker_fail, then broker_start)")
    requests.drop_inflight(t, a.broker)
    broker_logs.on_broker_crash(t, a.broker)
    restarted = replace(state, shutting_down=False, incarnation=state.incarnation + 1, leftover_batch=False,
                        half_applied=())
    if has_controller(t) and not t.config.has("KAFKA-1120"):
        # The controller handles the old incarnation's failure first; nothing it sends reaches the old one.
        t.brokers[a.broker] = replace(restarted, alive=False)
        t.ctx.live_brokers.discard(a.broker)
        t.ctx.discard("shutting_down", a.broker)
        on_broker_failure(t, {a.broker})
    t.brokers[a.broker] = restarted
    _restart_locally(t, a.broker)
    if not has_controller(t):
        return
    if t.config.has("KAFKA-1120"):
        t.note(f"broker {a.broker} re-registered before the controller looked: same broker ids, nothing done")
        return
    t.ctx.live_brokers.add(a.broker)
    on_broker_startup(t, {a.broker})


@handles(SessionExpiry)
def session_expiry(t: Txn, a: SessionExpiry) -> None:
    """The broker's ZooKeeper session expires and it registers again, without restarting (a long pause).

    The controller handles the lost session (onBrokerFailure; nothing it sends meanwhile reaches the broker) and
    then the new registration (onBrokerStartup), so the broker learns what changed. Variant KAFKA-2729 (before
    1.1.0): the re-registration is missed; the broker keeps acting on its old leadership and zkVersion.
    """
    _registered(t, a.broker)
    state = t.brokers[a.broker]
    if not state.alive:
        raise BrokerNotAvailable(f"broker {a.broker} is not live")
    if t.zk.controller == a.broker:
        raise BrokerNotAvailable(f"broker {a.broker} is the controller: its session loss is a controller failover")
    requests.drop_inflight(t, a.broker)
    if state.half_applied and t.config.has("KAFKA-9307"):
        # Variant KAFKA-9307 (2.2 - 2.4): the session loss fails the move to follower the broker had begun, but the
        # partitions keep the leader epoch it recorded; the controller's resent LeaderAndIsr carries that same epoch
        # and is ignored, so the broker never completes the move. Fixed (2.4.1): the resent request completes it.
        t.note(f"broker {a.broker}'s move to follower of {[f'{tp[0]}-{tp[1]}' for tp in state.half_applied]} failed "
               "with its session")
        state = replace(state, half_applied=())
        t.brokers[a.broker] = state
    if not has_controller(t):
        return
    t.brokers[a.broker] = replace(state, alive=False)
    t.ctx.live_brokers.discard(a.broker)
    t.ctx.discard("shutting_down", a.broker)
    on_broker_failure(t, {a.broker})
    t.brokers[a.broker] = replace(state, shutting_down=False)
    if t.config.has("KAFKA-2729"):
        t.note(f"broker {a.broker} registered again but the controller missed it; it keeps its old view")
        return
    t.ctx.live_brokers.add(a.broker)
    on_broker_startup(t, {a.broker})


def on_broker_startup(t: Txn, new: set[int]) -> None:
    """UpdateMetadata to the new brokers, their replicas online, elections, reassignments and deletions resumed."""
    requests.add_update_metadata(t, sorted(new), [tp for tp, _ in draft_sorted_items(t.ctx, "assignments")])
    requests.flush(t)
    replicas = replicas_on(t, new)
    # Every replica on the new brokers, those of topics queued for deletion too, goes OnlineReplica first.
    handle_replica_changes(t, replicas, R.ONLINE)
    trigger_online_partition_state_change(t)
    for tp, r in draft_sorted_items(t.ctx, "reassignments"):
        if not new.isdisjoint(r.target) and draft_lookup(t.ctx, "reassignments", tp) == r:
            on_partition_reassignment(t, tp, r)
    for topic in sorted({tp[0] for tp, _ in replicas if is_deleting(t, tp[0])}):
        t.ctx.topics_ineligible.discard(topic)
        resume_deletion(t, topic, despite_reassignment=True)


@handles(BrokerFail)
def broker_fail(t: Txn, a: BrokerFail) -> None:
    """The broker's session expires: a new controller if it was the controller, else onBrokerFailure."""
    _registered(t, a.broker)
    state = t.brokers[a.broker]
    if not state.alive:
        raise BrokerNotAvailable(f"broker {a.broker} is not live")
    t.brokers[a.broker] = replace(state, alive=False, shutting_down=False, half_applied=())
    requests.drop_inflight(t, a.broker)
    if t.zombie is not None and t.zombie.controller_id == a.broker:
        t.zombie = None  # a dead process cannot act
    broker_logs.on_broker_crash(t, a.broker)
    t.zk.brokers.discard(a.broker)
    if t.zk.controller == a.broker:
        t.zk.controller = -1  # the ephemeral /controller dies with the session
        reset_context(t)
        elect_controller(t)  # contract rule 10: lowest live id, next epoch
        return
    if not has_controller(t):
        return
    enqueue(t, "BrokerChange", (a.broker, False))


def on_broker_failure(t: Txn, dead: set[int]) -> None:
    """Leaderless partitions -> Offline -> Online (offline selector); replicas on the dead brokers -> Offline."""
    replicas = replicas_on(t, dead)
    leaderless = [tp for tp, lai in draft_sorted_items(t.ctx, "leadership")
                  if lai.leader in dead and not is_deleting(t, tp[0])]
    handle_partition_changes(t, leaderless, P.OFFLINE)
    trigger_online_partition_state_change(t)
    handle_replica_changes(t, [r for r in replicas if not is_deleting(t, r[0][0])], R.OFFLINE)
    for topic in sorted({tp[0] for tp, _ in replicas if is_deleting(t, tp[0])}):
        fail_replica_deletion(t, topic, [r for r in replicas if r[0][0] == topic])
    if not leaderless:
        requests.add_update_metadata(t, sorted(draft_peek(t.ctx, "live_brokers")), ())
        requests.flush(t)


@handles(ControlledShutdown)
def controlled_shutdown(t: Txn, a: ControlledShutdown) -> None:
    """shutdownBroker: leaders moved with the controlled-shutdown selector, followers -> OfflineReplica (RF > 1)."""
    _registered(t, a.broker)
    state = t.brokers[a.broker]
    if not state.alive or not has_controller(t):
        raise BrokerNotAvailable(f"broker {a.broker} is not live")
    t.brokers[a.broker] = replace(state, shutting_down=True)
    t.ctx.shutting_down.add(a.broker)
    tps = [tp for tp, ar in draft_sorted_items(t.ctx, "assignments")
           if a.broker in ar and len(ar) > 1 and not is_deleting(t, tp[0])]
    led = []
    for tp in tps:
        lai = draft_lookup(t.ctx, "leadership", tp)
        if lai is not None and lai.leader == a.broker:
            led.append(tp)
    followed = [tp for tp in tps if tp not in led]
    for tp in handle_partition_changes(t, led, P.ONLINE, selectors.CONTROLLED_SHUTDOWN):
        t.note(f"{tp[0]}-{tp[1]}: no other ISR replica can lead; broker {a.broker} stays leader")
    for tp in followed:
        requests.add_stop_replica(t, a.broker, tp, delete=False)
    requests.flush(t)
    handle_replica_changes(t, [(tp, a.broker) for tp in followed], R.OFFLINE)
