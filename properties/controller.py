"""The controller's named invariants, each a function over Cluster values with its rule in words.

State properties take `(model, state)`; step properties take `(model, before, action, after, effects)`.
`model` is anything with a `.config` (a ClusterConfig): engines pass their Model, tests a namespace.
"""

from __future__ import annotations

from typing import Any

from kcm.model import channels
from kcm.model.actions import Deliver, Reassign, Replicate
from kcm.model.cluster import NO_LEADER, Cluster, Reassignment
from kcm.model.effects import Effects, LeaderAndIsrRequest
from kcm.model.fmap import get, search
from kcm.model.interface import ALWAYS, SOMETIMES, SOMETIMES_STEP, STEP, Property
from kcm.model.states import PartitionState, ReplicaState
from kcm.properties import facts
from kcm.properties.facts import (
    LOG_NO,
    NO_CONTROLLER_CACHE,
    NO_DELETION_QUEUE,
    NO_REASSIGNMENT_STATE,
    STOPS_ANYWHERE,
    TRACE_NO,
    declared_in,
    rule,
)
from kcm.properties.reads import partition_local, reads


@rule("LeaderInIsrInAr", ALWAYS, log=LOG_NO + "AR with every leader-and-ISR line, so ISR within AR cannot be judged")
@partition_local()
@reads("zk.assignments", "zk.partitions")
def leader_in_isr_in_ar(model: Any, state: Cluster) -> bool:
    """Every partition znode has no leader, or a leader in its ISR; its ISR is a subset of its AR.

    One exception, Kafka's own: a leaderless partition may keep, as its one ISR member, a replica that left AR.
    The controller never empties the ISR (rule 12), and a replaced reassignment (rule 9) drops the replicas only
    in the abandoned target through OfflineReplica even when one of them is the last ISR member.
    """
    assignments = dict(state.zk.assignments)
    for tp, lai in state.zk.partitions:
        ar = assignments.get(tp, ())
        if lai.leader != NO_LEADER and lai.leader not in lai.isr:
            return False
        if lai.leader == NO_LEADER and len(lai.isr) == 1:
            continue
        for b in lai.isr:  # the ISR is a subset of AR (a few brokers: no sets built)
            if b not in ar:
                return False
    return True


@rule("ElectedLeaderRecorded", ALWAYS,
      trace="the trace's leader-and-ISR writes are the record of elected leaders itself",
      log="the log's leader-and-ISR lines are the record of elected leaders itself",
      induction="the encoding writes the ghost `elected` with the znode in the same step, so it holds by "
                "construction (the lemma BelievedLeadersWereElected states what brokers act on instead)")
@partition_local()
@reads("ghost.elected", "zk.partitions")
def elected_leader_recorded(model: Any, state: Cluster) -> bool:
    """The leader in every partition znode is the one elected for that leader epoch."""
    elected = state.ghost.elected  # every election so far: looked up, not copied into a dict
    for (topic, part), lai in state.zk.partitions:
        if lai.leader != NO_LEADER and search(elected, (topic, part, lai.leader_epoch), lai.leader) != lai.leader:
            return False
    return True


@rule("OneLiveLeaderPerEpoch", ALWAYS, log=LOG_NO + "which broker acts as leader between requests",
      trace="a broker's own leadership is judged by what it applies (LeaderEpochFencing, EpochFencing); a trace "
            "does not say which broker acts as leader between requests")
@partition_local()
@reads("replicas", "brokers")
def one_live_leader_per_epoch(model: Any, state: Cluster) -> bool:
    """No two live brokers act as leader of one partition in the same leader epoch."""
    seen: dict[tuple, int] = {}
    brokers = dict(state.brokers)
    for (topic, part, broker), data in state.replicas:
        if data.leader != broker or not brokers[broker].alive:
            continue
        key = (topic, part, data.leader_epoch)
        if key in seen:
            return False
        seen[key] = broker
    return True


@rule("OneLeaderPerEpoch", STEP,
      induction="the encoding's ghost `elected` is an array indexed by leader epoch, one leader per epoch by "
                "construction; what brokers believe is proved instead (OneLiveLeaderPerEpoch)")
@partition_local()
def one_leader_per_epoch(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A leader epoch, once given to a leader, is never given to another (at most one leader per epoch)."""
    old = before.ghost.elected
    if old == after.ghost.elected:
        return True
    previous = dict(old)
    for key, leader in after.ghost.elected:
        if previous.get(key, leader) != leader:
            return False
    return True


@rule("LeaderEpochMonotone", STEP,
      induction="an election writes the next leader epoch by construction (the seeded bug switch "
                "bump_epoch_on_election=False breaks OneLiveLeaderPerEpoch instead)")
@partition_local()
def leader_epoch_monotone(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A partition znode's leader epoch never decreases while the partition exists."""
    if after.zk.partitions is before.zk.partitions:
        return True  # the step wrote no partition znode
    old = dict(before.zk.partitions)
    for tp, lai in after.zk.partitions:
        prev = old.get(tp)
        if prev is not None and lai.leader_epoch < prev.leader_epoch:
            return False
    return True


@rule("ControllerEpochMonotone", STEP)
@partition_local()
def controller_epoch_monotone(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """/controller_epoch and every broker's newest accepted controller epoch never decrease."""
    if after.zk.controller_epoch < before.zk.controller_epoch:
        return False
    if after.brokers is before.brokers:
        return True
    new, old = after.brokers, before.brokers
    if len(new) == len(old):
        # The registered brokers rarely change: pair them in key order without a dict, while the keys agree.
        for k in range(len(new)):
            now, was = new[k], old[k]
            if now[0] != was[0]:
                break
            if now[1].controller_epoch < was[1].controller_epoch:
                return False
        else:
            return True
    old = dict(old)
    for i, b in after.brokers:
        if i in old and b.controller_epoch < old[i].controller_epoch:
            return False
    return True


@rule("EpochFencing", STEP,
      induction=facts.INDUCTION_NO_REQUESTS + " (what it guards, live brokers never going back, is part of "
                                              "ControllerEpochMonotone's step formula)")
@partition_local()
def epoch_fencing(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """No broker applies a LeaderAndIsr older than the newest controller epoch it has accepted."""
    if not effects.requests or after.replicas is before.replicas:
        return True  # nothing sent, or no broker applied anything
    brokers = dict(before.brokers)
    stale = []
    for req in effects.requests:
        if not isinstance(req, LeaderAndIsrRequest) or req.broker not in brokers:
            continue
        if req.controller_epoch < brokers[req.broker].controller_epoch:
            stale.append(req)
    if not stale:
        return True  # every LeaderAndIsr carried an epoch its broker had accepted (the common case: no dicts built)
    old = dict(before.replicas)
    new = dict(after.replicas)
    for req in stale:
        key = (req.tp[0], req.tp[1], req.broker)
        a, b = old.get(key), new.get(key)
        if b is not None and (a is None or (a.leader, a.leader_epoch) != (b.leader, b.leader_epoch)):
            if (b.leader, b.leader_epoch) == (req.leader, req.leader_epoch):
                return False
    return True


@rule("NoBrokerAheadOfZk", ALWAYS,
      log=LOG_NO + "/controller_epoch itself, only the epochs controllers and brokers print")
@partition_local()
@reads("brokers", "zk.controller_epoch")
def no_broker_ahead_of_zk(model: Any, state: Cluster) -> bool:
    """No broker has accepted a controller epoch that /controller_epoch never reached."""
    epoch = state.zk.controller_epoch
    for _, b in state.brokers:
        if b.controller_epoch > epoch:
            return False
    return True


@rule("ReassignmentArIsUnion", ALWAYS, **NO_REASSIGNMENT_STATE,
      bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
@reads("zk.assignments", "ctx.reassignments")
def reassignment_ar_is_union(model: Any, state: Cluster) -> bool:
    """During a reassignment AR = RAR followed by OAR - RAR (the seeds' OAR + RAR, contract rule 8)."""
    assignments = dict(state.zk.assignments)
    for tp, r in state.ctx.reassignments:
        if assignments.get(tp) != r.replicas:
            return False
    return True


@rule("ArShrinksLast", STEP, **NO_REASSIGNMENT_STATE,
      bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
def ar_shrinks_last(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A replica of the original assignment leaves AR only in the last step of a reassignment (RAR in the ISR);
    a replica that was only in an abandoned target may leave when the reassignment is replaced."""
    if after.zk.assignments is before.zk.assignments:
        return True  # no AR changed
    new = dict(after.zk.assignments)
    moving = dict(before.ctx.reassignments)
    for tp, ar in before.zk.assignments:
        now = new.get(tp)
        if now is None or set(now) >= set(ar):
            continue  # unchanged, grown, or the topic is gone (deletion)
        r = moving.get(tp)
        if r is None and get(before.zk.reassign_partitions, tp) is not None:
            # Written while no controller was active: the next controller resumes (and may complete) it.
            r = Reassignment(tuple(get(before.zk.reassign_original, tp, ar)),
                             tuple(get(before.zk.reassign_partitions, tp)))
        if isinstance(action, Reassign) and action.tp == tp:
            # A new reassignment, or one replacing it from the same original replicas (rule 9).
            r = Reassignment(r.original if r is not None else tuple(ar), tuple(action.replicas))
        if r is None:
            return False  # shrunk outside a reassignment
        lost = set(ar) - set(now)
        if not lost & set(r.original):
            # Only replicas of an abandoned target left: they must not be in the target now in force.
            if lost & set(r.target):
                return False
            continue
        if get(after.ctx.reassignments, tp) is not None:
            return False  # an original replica left before the reassignment finished
        if tuple(now) != r.target:
            return False
        lai = get(after.zk.partitions, tp)
        if lai is None or not set(r.target) <= set(lai.isr):
            return False
    return True


@rule("ValidTransition", STEP)
@partition_local()
def valid_transition(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """Every partition and replica state change a step logs is a move of the active rule set's table."""
    if not effects.state_changes:
        return True
    rules = model.config.rule_set()
    for change in effects.state_changes:
        if change.machine == "partition":
            if not rules.allows_partition(change.from_state, change.to_state):
                return False
        elif not rules.allows_replica(change.from_state, change.to_state):
            return False
    return True


@rule("DeletionStatesOnlyWhileDeleting", ALWAYS, **NO_DELETION_QUEUE,
      induction=facts.INDUCTION_ONE_PARTITION)
@partition_local()
@reads("ctx.topics_to_delete", "ctx.replica_states")
def deletion_states_only_while_deleting(model: Any, state: Cluster) -> bool:
    """Only replicas of topics queued for deletion rest in ReplicaDeletionStarted/Successful/Ineligible.

    It judges the moves the controller makes on its own: a reassignment's last step passes dropped replicas
    through the deletion states within the step. A direct `replica_transition` into them is judged by the table
    alone (as Kafka's) and is outside this property's scope (`hypothesis_machine.outside_controller_paths`).
    """
    deleting = state.ctx.topics_to_delete  # a sorted tuple, usually empty
    deletion = ReplicaState.DELETION
    for (topic, _p, _b), s in state.ctx.replica_states:
        if s in deletion and topic not in deleting:
            return False
    return True


@rule("DeletedTopicsLeaveNothing", ALWAYS, trace=NO_DELETION_QUEUE["trace"], log=LOG_NO + "ZooKeeper's content",
      induction=facts.INDUCTION_ONE_PARTITION, bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local("deletion", "topic_creation")
@reads("zk.assignments", "ctx.topics_to_delete", "ctx.controller_id", "ctx.partition_states", "ctx.replica_states")
def deleted_topics_leave_nothing(model: Any, state: Cluster) -> bool:
    """A topic that is neither in ZooKeeper nor queued for deletion has no partition or replica state left."""
    if state.ctx.controller_id < 0:
        return True
    live = {tp[0] for tp, _ in state.zk.assignments} | set(state.ctx.topics_to_delete)
    for tp, _ in state.ctx.partition_states:
        if tp[0] not in live:
            return False
    for key, _ in state.ctx.replica_states:
        if key[0] not in live:
            return False
    return True


@rule("CleanElection", STEP, log=LOG_NO + "which selector chose a leader, nor always the ISR before",
      induction=facts.INDUCTION_NO_REQUESTS, bmc=facts.BMC_NOT_RESTATED)
@partition_local()
def clean_election(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """With unclean leader election off, every newly elected leader was in the partition's ISR before.

    A fetch (`replicate`) is judged by the ISR it leaves: in one such step followers join the ISR and a
    reassignment that needed them completes and elects among them.
    """
    if model.config.unclean_leader_election:
        return True
    if isinstance(action, Replicate):
        return all(lai.leader == NO_LEADER or lai.leader in lai.isr for _, lai in after.zk.partitions)
    if after.zk.partitions is before.zk.partitions:
        return True  # no znode written, so no leader elected
    old = dict(before.zk.partitions)
    for tp, lai in after.zk.partitions:
        prev = old.get(tp)
        if prev is None or lai.leader == NO_LEADER or prev.leader_epoch == lai.leader_epoch:
            continue
        if lai.leader not in prev.isr:
            return False
    return True


@rule("ZkEpochFencing", STEP, log=LOG_NO + "ZooKeeper's conditional writes",
      induction=facts.INDUCTION_NO_REQUESTS, bmc=facts.BMC_NOT_RESTATED)
@partition_local()
def zk_epoch_fencing(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """Only the controller of the newest epoch elects: a znode whose leader epoch changes carries that epoch.

    A write that keeps the leader epoch is a leader's own ISR update, so it keeps the leader too: a new leader in
    an old leader epoch is an election that escaped the fencing (a zombie's write that no zkVersion stopped).
    """
    if after.zk.partitions is before.zk.partitions:
        return True  # no znode written
    old = dict(before.zk.partitions)
    for tp, lai in after.zk.partitions:
        prev = old.get(tp)
        if prev is not None and prev.leader_epoch == lai.leader_epoch:
            if lai.leader != prev.leader:
                return False
            continue  # unchanged, or a leader's own ISR update (it keeps the writer's controller epoch)
        if lai.controller_epoch != after.zk.controller_epoch:
            return False
    return True


@rule("ControllerCacheMatchesZk", ALWAYS, **NO_CONTROLLER_CACHE,
      induction=facts.ONE_COPY, bmc=facts.ONE_COPY)
@partition_local()
@reads("ctx.controller_id", "zk.partitions", "ctx.leadership")
def controller_cache_matches_zk(model: Any, state: Cluster) -> bool:
    """The active controller's cached leader and ISR of every partition are what ZooKeeper holds."""
    if state.ctx.controller_id < 0 or state.ctx.leadership == state.zk.partitions:
        return True  # no controller, or the cache is ZooKeeper's map itself (compared in C)
    zk = dict(state.zk.partitions)
    for tp, lai in state.ctx.leadership:
        if zk.get(tp) != lai:
            return False
    return True


def replicas_act_on_znode(state: Cluster, judged: Any, wait_for_inflight: bool = True) -> bool:
    """Whether every live, not shutting-down broker in judged(tp, znode) acts on the znode's leader and epoch.

    Topics being deleted (the controller stops their replicas on purpose) are left out, and so are brokers with
    control requests still in flight unless `wait_for_inflight` is off (a liveness goal judges them too).
    """
    brokers = dict(state.brokers)
    local = dict(state.replicas)
    # Both usually empty (delivery "sync", nothing being deleted): then nothing is built for them.
    waiting = {b for (b, _e), q in state.inflight if q} if wait_for_inflight and state.inflight else ()
    deleting = state.zk.delete_topics  # a sorted tuple of topics
    for tp, lai in state.zk.partitions:
        if lai.leader == NO_LEADER or (deleting and tp[0] in deleting):
            continue
        for b in judged(tp, lai):
            s = brokers.get(b)
            if s is None or not s.alive or s.shutting_down or b in waiting:
                continue
            data = local.get((tp[0], tp[1], b))
            if data is None or data.leader != lai.leader or data.leader_epoch != lai.leader_epoch:
                return False
    return True


@rule("LivenessView", ALWAYS, **NO_CONTROLLER_CACHE,
      induction=facts.ONE_COPY, bmc=facts.ONE_COPY)
@partition_local()
@reads("brokers", "replicas", "inflight", "zk.delete_topics", "zk.partitions")
def liveness_view(model: Any, state: Cluster) -> bool:
    """Every live broker in a partition's ISR acts on the znode's leader and leader epoch.

    This is what the controller's view of liveness is for: it sends each live replica what ZooKeeper says.
    Brokers with control requests still in flight (delivery "async") are judged once those arrive; topics being
    deleted are left out.
    """
    return replicas_act_on_znode(state, lambda tp, lai: lai.isr)


@rule("ReplicasFollowZk", ALWAYS, **STOPS_ANYWHERE,
      induction=facts.ONE_COPY, bmc=facts.ONE_COPY)
@partition_local()
@reads("brokers", "replicas", "inflight", "zk.delete_topics", "zk.partitions", "zk.assignments")
def replicas_follow_zk(model: Any, state: Cluster) -> bool:
    """Every live replica of a partition with a leader acts on the znode's leader and leader epoch.

    Any controller write of a leader or leader epoch goes to every live replica in AR; brokers shutting down,
    topics being deleted and brokers with control requests still in flight (delivery "async") are left out.
    """
    assignments = dict(state.zk.assignments)
    return replicas_act_on_znode(state, lambda tp, lai: assignments.get(tp, ()))


@rule("ControllerActive", ALWAYS, **STOPS_ANYWHERE,
      induction=facts.INDUCTION_NO_REQUESTS, bmc=facts.BMC_NOT_RESTATED)
@partition_local()
@reads("brokers", "zk.controller", "ctx.controller_id")
def controller_active(model: Any, state: Cluster) -> bool:
    """While any broker is live, the owner of /controller is a live broker acting as the active controller."""
    live = {b for b, s in state.brokers if s.alive}
    if not live:
        return True
    return state.zk.controller in live and state.ctx.controller_id == state.zk.controller


@rule("ReassignmentEndsComplete", STEP, **NO_REASSIGNMENT_STATE,
      induction=facts.INDUCTION_NO_REQUESTS, bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
def reassignment_ends_complete(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """A reassignment leaves /admin/reassign_partitions only when AR is its target (or the topic is gone).

    A reassignment replaced by a new request (rule 9) is judged by the new target.
    """
    if not before.zk.reassign_partitions or after.zk.reassign_partitions is before.zk.reassign_partitions:
        return True  # none was requested, or none left
    still = dict(after.zk.reassign_partitions)
    ar = dict(after.zk.assignments)
    for tp, target in before.zk.reassign_partitions:
        if isinstance(action, Reassign) and action.tp == tp:
            target = tuple(action.replicas)  # replaced (rule 9): the new target is the one that must be met
        if tp not in still and tp in ar and ar[tp] != tuple(target):
            return False
    return True


@rule("ReassignmentsTracked", ALWAYS, **NO_REASSIGNMENT_STATE,
      induction=facts.ONE_COPY, bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
@reads("ctx.controller_id", "zk.assignments", "zk.reassign_partitions", "ctx.reassignments")
def reassignments_tracked(model: Any, state: Cluster) -> bool:
    """With a controller active, /admin/reassign_partitions holds exactly the reassignments it is carrying out."""
    if state.ctx.controller_id < 0:
        return True
    if not state.zk.reassign_partitions:
        return not state.ctx.reassignments  # none requested: the controller carries none out
    existing = dict(state.zk.assignments)
    pending = {tp for tp, _ in state.zk.reassign_partitions if tp in existing}
    return pending == {tp for tp, _ in state.ctx.reassignments}


@rule("DeletionProgress", ALWAYS, **NO_DELETION_QUEUE,
      induction=facts.INDUCTION_ONE_PARTITION, bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local("deletion", "topic_creation")
@reads("ctx.controller_id", "brokers", "ctx.reassignments", "ctx.topics_to_delete", "ctx.assignments")
def deletion_progress(model: Any, state: Cluster) -> bool:
    """With a controller active, a topic stays queued for deletion only while a replica's broker is down
    (or one of its partitions is being reassigned): otherwise its deletion has finished."""
    if state.ctx.controller_id < 0 or not state.ctx.topics_to_delete:
        return True
    live = {b for b, s in state.brokers if s.alive}
    moving = {tp[0] for tp, _ in state.ctx.reassignments}
    for topic in state.ctx.topics_to_delete:
        ar = [r for tp, r in state.ctx.assignments if tp[0] == topic]
        if topic not in moving and all(b in live for r in ar for b in r):
            return False
    return True


# -- reachability: a model that never reaches these is broken ---------------------------------

@rule("SomeLeaderMoved", SOMETIMES)
@partition_local()
@reads("zk.partitions")
def some_leader_moved(model: Any, state: Cluster) -> bool:
    """Some partition has had a second leader epoch."""
    return any(lai.leader_epoch > 0 for _, lai in state.zk.partitions)


@rule("SomePartitionOffline", SOMETIMES)
@partition_local()
@reads("ctx.partition_states")
def some_partition_offline(model: Any, state: Cluster) -> bool:
    """Some partition is OfflinePartition."""
    return any(s == PartitionState.OFFLINE for _, s in state.ctx.partition_states)


@rule("SomeControllerFailover", SOMETIMES)
@partition_local()
@reads("zk.controller_epoch")
def some_controller_failover(model: Any, state: Cluster) -> bool:
    """A second controller has been elected."""
    return state.zk.controller_epoch > 1


@rule("SomeReassignmentCompletes", SOMETIMES_STEP, needs=("reassignment",),
      bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
def some_reassignment_completes(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """Some step completes a reassignment: AR becomes its target and the request leaves ZooKeeper."""
    targets = dict(before.zk.reassign_partitions)
    if isinstance(action, Reassign):
        targets[action.tp] = tuple(action.replicas)  # a target already in the ISR completes in the same step
    pending = dict(after.zk.reassign_partitions)
    old, new = dict(before.zk.assignments), dict(after.zk.assignments)
    return any(tp not in pending and new.get(tp) == tuple(t) != old.get(tp) for tp, t in targets.items())


@rule("SomeTopicDeletionCompletes", SOMETIMES_STEP, needs=("deletion",),
      bmc=facts.BMC_NO_REASSIGN_OR_DELETE)
@partition_local()
def some_topic_deletion_completes(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """Some step finishes deleting a topic (it leaves the deletion queue with nothing left in ZooKeeper)."""
    remaining = {tp[0] for tp, _ in after.zk.assignments}
    return any(t not in after.ctx.topics_to_delete and t not in remaining for t in before.ctx.topics_to_delete)


@rule("SomeStaleRequestRefused", SOMETIMES_STEP, needs=("delivery:async",),
      ignored_requests="it judges the very deliveries the reduction folds into the step before them (a broker "
                       "refusing a stale request)",
      bmc=facts.BMC_NOT_RESTATED)
@partition_local()
def some_stale_request_refused(model: Any, before: Cluster, action: Any, after: Cluster, effects: Effects) -> bool:
    """Some broker receives a request of an older controller epoch than it has accepted (and refuses it)."""
    if not isinstance(action, Deliver):
        return False
    brokers = dict(before.brokers)
    return any(r.broker in brokers and r.controller_epoch < brokers[r.broker].controller_epoch
               for r in effects.requests)


@rule("ControllerNotDeadlocked", ALWAYS, needs=("delivery:async",),
      trace=TRACE_NO + "controller-to-broker queue or lock: only the requests each broker took",
      log=LOG_NO + "the controller's request queues or its lock",
      induction=facts.INDUCTION_NO_REQUESTS, bmc=facts.BMC_NOT_RESTATED)
@reads("inflight", "ctx.controller_id", "ctx.epoch")
def controller_not_deadlocked(model: Any, state: Cluster) -> bool:
    """The controller never waits, lock held, for room in a request queue whose send thread waits for its lock.

    Only bounded queues (variant KAFKA-1305, Kafka 0.8.1's controller.message.queue.size) can be full; the send
    thread holding topic deletion's StopReplica runs its response callback under the controller lock.
    """
    return not channels.deadlocked(model.config, state)


PROPERTIES: list[Property] = declared_in(globals())
