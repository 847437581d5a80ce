"""ControllerBrokerRequestBatch and the broker side of the control requests.

Kafka's controller collects LeaderAndIsr, UpdateMetadata and StopReplica requests in a batch per state
machine call and sends them per broker in that order. Under the contract (delivery "sync") each request
reaches its broker within the operation that sends it. Under delivery "async" a sent request waits in the
broker's queue (`Cluster.inflight`, one FIFO per broker like Kafka's RequestSendThread) until a `deliver`
step, so brokers can act on old information and requests of a controller that has since lost its epoch can
still arrive. The controller's own bookkeeping does not wait for responses in either mode. Under variant
KAFKA-1305 (Kafka 0.8.1) each queue holds `controller_message_queue_size` requests besides the one its send thread
holds; a controller with more to put waits, holding its lock, and a send thread holding topic deletion's
StopReplica waits for that lock to run the response's callback (`kcm.model.channels`).
"""

from __future__ import annotations

from typing import Any

from kcm.model import channels
from kcm.model.actions import Deliver
from kcm.model.cluster import NO_LEADER, BrokerState, ReplicaData, replace
from kcm.model.effects import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from kcm.model.errors import ControllerBlocked, NoRequestInFlight
from kcm.model.fmap import EMPTY
from kcm.model.names import tp_name
from kcm.model.txn import Txn, draft_has, draft_lookup, draft_peek
from kcm.reference import broker_logs
from kcm.reference.handlers import handles

# Records built per request are built with tuple.__new__ from all their fields in order (what the NamedTuple
# constructors do, without their Python-level __new__ or _replace's keyword machinery), which fills in no
# defaults: the field layouts this module builds are checked here.
_new = tuple.__new__
if BrokerState._fields.index("controller_epoch") != 2:
    raise ImportError("kcm.reference.requests: BrokerState.controller_epoch moved; update deliver")
if tuple(len(r._fields) for r in (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest)) != (8, 3, 4) or \
        LeaderAndIsrRequest._fields != ("broker", "tp", "leader", "leader_epoch", "isr", "replicas",
                                        "controller_epoch", "zk_version"):
    raise ImportError("kcm.reference.requests: the request records' fields changed; update flush and "
                      "_apply_leader_and_isr")
if ReplicaData._fields != ("log", "hw", "leader", "leader_epoch", "isr", "zk_version", "replicas", "remote_leo",
                           "truncating"):
    raise ImportError("kcm.reference.requests: ReplicaData's fields changed; update _apply_leader_and_isr")


class RequestBatch:
    """Requests of one state-machine call, keyed like Kafka's batch (the last LeaderAndIsr per broker wins)."""

    def __init__(self) -> None:
        self.leader_and_isr: dict[tuple[int, tuple], tuple[int, tuple, Any, tuple]] = {}
        self.update_metadata: dict[int, set[tuple]] = {}  # broker -> partitions (sent sorted)
        self.stop_replica: list[tuple[int, tuple, bool]] = []


def batch(t: Txn) -> RequestBatch:
    """The batch of the operation in progress (one per Txn, created on first use)."""
    b = t.request_batch
    if b is None:
        b = RequestBatch()
        t.request_batch = b  # type: ignore[attr-defined]
    return b


def add_leader_and_isr(t: Txn, brokers: Any, tp: tuple, replicas: tuple | None = None) -> None:
    """Queue LeaderAndIsr with the controller's current leadership of tp to brokers, plus UpdateMetadata."""
    ctx = t.ctx
    lai = draft_lookup(ctx, "leadership", tp)
    if lai is None:
        return
    ar = tuple(replicas) if replicas is not None else tuple(draft_lookup(ctx, "assignments", tp, ()))
    queued = (t.request_batch or batch(t)).leader_and_isr
    for broker in brokers:
        queued[(broker, tp)] = (broker, tp, lai, ar)
    add_update_metadata(t, draft_peek(ctx, "live_brokers"), (tp,))  # in any order: flush sends by broker


def add_update_metadata(t: Txn, brokers: Any, tps: Any) -> None:
    """Queue UpdateMetadata for tps to brokers; partitions without a leader and ISR in the context are left out."""
    queued = (t.request_batch or batch(t)).update_metadata
    ctx = t.ctx
    # As Kafka: nothing to tell of a partition with no leader and ISR.
    tps = [tp for tp in tps if draft_has(ctx, "leadership", tp)]
    for broker in brokers:
        mine = queued.get(broker)
        if mine is None:
            queued[broker] = set(tps)
        else:
            mine.update(tps)


def add_stop_replica(t: Txn, broker: int, tp: tuple, delete: bool) -> None:
    """Queue StopReplica for tp to broker (delete: remove the log too); once queued with delete, it keeps it."""
    b = batch(t)
    kept = []
    for r in b.stop_replica:
        if r[0] == broker and r[1] == tp:
            delete = delete or r[2]
        else:
            kept.append(r)
    kept.append((broker, tp, delete))
    b.stop_replica = kept


def flush(t: Txn) -> None:
    """Send the batch: LeaderAndIsr, then UpdateMetadata, then StopReplica, each delivered at once."""
    b = t.request_batch
    # Most calls find nothing queued (every state-machine call flushes): return before any other work.
    if b is None or not (b.leader_and_isr or b.update_metadata or b.stop_replica):
        return
    t.request_batch = None  # the next add_* starts a fresh batch (see `batch`)
    epoch = t.ctx.epoch
    for broker, tp, lai, ar in b.leader_and_isr.values():
        send(t, _new(LeaderAndIsrRequest,
                     (broker, tp, lai.leader, lai.leader_epoch, lai.isr, ar, epoch, lai.zk_version)))
    for broker, tps in sorted(b.update_metadata.items()):
        send(t, _new(UpdateMetadataRequest, (broker, tuple(sorted(tps)), epoch)))
    for broker, tp, delete in b.stop_replica:
        send(t, _new(StopReplicaRequest, (broker, tp, delete, epoch)))


def send(t: Txn, req: Any) -> None:
    """Send one request: delivered at once (delivery "sync") or queued for its broker (delivery "async")."""
    if t.config.delivery != "async":
        queue = t.lookup("inflight", (req.broker, req.controller_epoch)) if t.config.grain == "event" else None
        if not queue:
            deliver(t, req)
            return
        # Grain "event": the connection waits for the broker to finish a request it applied in part; what follows
        # is sent now and applied in order after it (its `deliver` step lists it no second time).
        t.requests.append(req)
        t.inflight[(req.broker, req.controller_epoch)] = queue + (req,)
        return
    state = t.lookup("brokers", req.broker)
    if state is None or not state.alive:
        return  # no connection to a dead broker: dropped, as under "sync"
    t.requests.append(req)
    key = (req.broker, req.controller_epoch)
    queue = t.inflight.get(key, ())
    if isinstance(req, UpdateMetadataRequest) and queue and not t.config.has("KAFKA-1305"):
        # The model keeps no metadata cache: an UpdateMetadata only raises the broker's controller epoch, which
        # the request already queued ahead of it on this connection does first. Not queueing it keeps the
        # explored space small without losing a behaviour. Not under variant KAFKA-1305, where every put counts
        # against the queue's capacity.
        return
    t.inflight[key] = queue + (req,)


@handles(Deliver)
def deliver_next(t: Txn, a: Deliver) -> None:
    """The `deliver` step: the oldest request in flight to the broker (from one epoch) is applied or refused."""
    epochs = sorted([e for b, e in t.inflight if b == a.broker and t.inflight[(b, e)]])
    epoch = a.controller_epoch if a.controller_epoch >= 0 else (epochs[0] if epochs else -1)
    queue = t.inflight.get((a.broker, epoch), ())
    if not queue:
        raise NoRequestInFlight(f"no control request of controller epoch {epoch} is in flight to broker {a.broker}"
                                if a.controller_epoch >= 0 else f"no control request is in flight to broker {a.broker}")
    if t.config.has("KAFKA-1305") and channels.needs_controller_lock(queue[0]):
        waited = channels.blocked(t.config, t.base)
        if waited is not None:
            # Variant KAFKA-1305: the send thread runs the response's callback under the controller lock, which the
            # controller holds while it waits for room in a full queue.
            raise ControllerBlocked(f"the send thread to broker {a.broker} waits for the controller lock to run the "
                                    f"callback of {type(queue[0]).__name__}: the controller holds it, blocked on "
                                    f"the full queue of broker {waited[0]}")
    t.inflight[(a.broker, epoch)] = queue[1:]
    if _is_rest(t, queue[0]):
        t.result = _apply_leader_and_isr(t, queue[0])  # the rest of a request taken already: not sent again
        return
    listed = len(t.requests)
    t.result = deliver(t, queue[0])
    if t.config.delivery != "async":
        del t.requests[listed:]  # listed when it was sent, behind a request applied in part (`send`)


def _is_rest(t: Txn, req: Any) -> bool:
    """Whether a request waiting in a connection is the rest of a LeaderAndIsr its broker applied in part."""
    if type(req) is not LeaderAndIsrRequest:
        return False
    half = t.lookup("brokers", req.broker).half_applied
    if not half or req.tp not in half:
        return False
    data = t.lookup("replicas", (req.tp[0], req.tp[1], req.broker))
    return data is not None and data.leader_epoch == req.leader_epoch


def finish_half_applied(t: Txn, broker: int) -> None:
    """The broker applies the rest of the LeaderAndIsr requests it applied in part, before any other request: it
    takes one request at a time."""
    for key, queue in t.items("inflight"):
        if key[0] == broker and queue and _is_rest(t, queue[0]):
            t.inflight[key] = queue[1:]
            _apply_leader_and_isr(t, queue[0])


def drop_inflight(t: Txn, broker: int) -> None:
    """The broker's connections are gone (it died or restarted): requests queued for it are lost."""
    for key, _ in t.items("inflight"):
        if key[0] == broker:
            del t.inflight[key]


def deliver(t: Txn, req: Any) -> bool:
    """Deliver one request; True when the broker applied it.

    Requests to brokers that are neither live nor shutting down are dropped and not listed (contract
    rule 6). A broker refuses a request older than the newest controller epoch it has accepted.
    """
    state = t.lookup("brokers", req.broker)
    if state is None or not state.alive:
        return False
    if state.half_applied:
        finish_half_applied(t, req.broker)
        state = t.lookup("brokers", req.broker)
    t.requests.append(req)
    accepted, carried = state.controller_epoch, req.controller_epoch
    # Only a request older than the accepted epoch can be refused, however a variant relaxes the rule: the rule is
    # consulted for those alone (most requests carry the epoch the broker already has).
    if carried < accepted and stale_controller_epoch(t, accepted, carried):
        t.note(f"broker {req.broker} refused {type(req).__name__} of controller epoch {carried}: "
               f"it has accepted epoch {accepted} (StaleControllerEpoch)")
        return False
    if carried > accepted:
        # state._replace(controller_epoch=...), without _replace's keyword machinery (this runs per request)
        t.brokers[req.broker] = _new(BrokerState, (state[0], state[1], carried, *state[3:]))
    kind = type(req)
    if kind is LeaderAndIsrRequest:
        return _apply_leader_and_isr(t, req)
    if kind is StopReplicaRequest:
        _apply_stop_replica(t, req)
    return True


def stale_controller_epoch(t: Txn, accepted: int, carried: int) -> bool:
    """The broker's fencing rule: a request older than the newest accepted controller epoch is refused."""
    if t.config.has("no-broker-epoch-check"):
        return False
    return carried < accepted


def _apply_leader_and_isr(t: Txn, req: LeaderAndIsrRequest) -> bool:
    """becomeLeaderOrFollower for one partition: only a higher leader epoch than the replica's is applied."""
    broker, tp, leader, leader_epoch, isr, replicas, _, zk_version = req
    key = (tp[0], tp[1], broker)
    data = t.lookup("replicas", key)
    if broker not in replicas:
        t.note(f"broker {broker} ignored LeaderAndIsr for {tp_name(tp)}: not in its replica list")
        return False
    state = t.lookup("brokers", broker)
    half = state.half_applied
    if half and tp in half and data is not None and leader_epoch >= data.leader_epoch:
        # The rest of a LeaderAndIsr applied in part (or a newer one): the move it began is made now.
        t.brokers[broker] = replace(state, half_applied=tuple([x for x in half if x != tp]))
    elif data is not None and leader_epoch <= data.leader_epoch:
        t.note(_stale_leader_epoch_note(broker, tp, leader_epoch, data.leader_epoch))
        return False
    elif (data is not None and data.leader == broker and leader != broker and leader != NO_LEADER
          and t.config.grain == "event"):
        # Grain "event": a leader made follower stops leading and records the new leader epoch first
        # (Partition.makeFollower), and follows its new leader in a later step, the rest of the request waiting at
        # the head of its connection; a session loss can come between the two (KAFKA-9307).
        t.replicas[key] = _new(ReplicaData, (data[0], data[1], NO_LEADER, leader_epoch, *data[4:]))
        t.brokers[broker] = replace(state, half_applied=tuple(sorted(half + (tp,))))
        connection = (broker, req.controller_epoch)
        t.inflight[connection] = (req,) + t.inflight.get(connection, ())
        return True
    isr, replicas = tuple(sorted(isr)), tuple(replicas)
    if data is None:
        t.replicas[key] = _new(ReplicaData, ((), 0, leader, leader_epoch, isr, zk_version, replicas, EMPTY, False))
    else:
        t.replicas[key] = _new(ReplicaData, (data[0], data[1], leader, leader_epoch, isr, zk_version, replicas,
                                             data[7], data[8]))
    if leader == broker:
        broker_logs.become_leader(t, tp, broker)
    elif leader != NO_LEADER:
        broker_logs.become_follower(t, tp, broker)
    return True


# The note of a LeaderAndIsr ignored for its leader epoch, by (broker, tp, carried epoch, replica's epoch): the
# most frequent note by far (an explorer's controller steps resend leaderships the brokers already have), and the
# same few texts over and over.
_STALE_NOTES: dict[tuple, str] = {}


def _stale_leader_epoch_note(broker: int, tp: tuple, carried: int, known: int) -> str:
    """The note of a LeaderAndIsr the broker ignores: its leader epoch (carried) is not above the replica's."""
    key = (broker, tp, carried, known)
    text = _STALE_NOTES.get(key)
    if text is None:
        if len(_STALE_NOTES) >= 4096:
            _STALE_NOTES.clear()
        text = _STALE_NOTES[key] = (f"broker {broker} ignored LeaderAndIsr for {tp_name(tp)}: leader epoch {carried} "
                                    f"is not above its {known}")
    return text


def _apply_stop_replica(t: Txn, req: StopReplicaRequest) -> None:
    """StopReplica: stop fetching or leading; with delete, remove the local replica and its log."""
    key = (req.tp[0], req.tp[1], req.broker)
    data = t.lookup("replicas", key)
    if data is None:
        return
    if req.delete:
        del t.replicas[key]
    else:
        t.replicas[key] = _new(ReplicaData, (data[0], data[1], NO_LEADER, *data[3:]))
