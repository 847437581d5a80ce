"""The bounded system the explorers walk: the reference controller and data plane behind the Model interface.

A bounded configuration (JSON, `specs/configs/`) names the brokers, the initial topics, which action families
are on and the bounds. This module only enumerates actions and reads bounds; every rule is the reference's
(`api.step`), every property the `properties` modules'.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from kcm.model import actions as A
from kcm.model import channels, strictjson
from kcm.model.canonical import VERSIONED_PARTS, NoZnode, relative_part, relative_zk_versions
from kcm.model.cluster import Cluster, ClusterConfig
from kcm.model.effects import Effects
from kcm.model.errors import KcmError
from kcm.model.fingerprint import PartFingerprints, combine, fingerprint
from kcm.model.interface import (
    EVENTUALLY,
    NEXT,
    OUTSIDE,
    REFUSED,
    SOMETIMES,
    SOMETIMES_STEP,
    UNCHANGED,
    ModelBase,
    Property,
)
from kcm.model.txn import OutOfBounds, Txn, draft_lookup
from kcm.model.variants import SWITCHES, known_switch
from kcm.properties import catalogue
from kcm.reference import api, dataplane, partition_machine, preferred, selectors

FAMILIES = ("broker_failure", "controlled_shutdown", "controller_failover", "reassignment", "preferred",
            "data_plane", "acks_one", "consume", "deletion", "topic_creation", "zombie_controller", "fast_bounce",
            "session_expiry", "controller_move")
FAIR_ACTIONS = (A.Replicate, A.Deliver, A.IsrShrink)
# The only steps in which a partition leader writes its own view of the znode (`dataplane._write_isr`).
LEADER_ISR_WRITES = (A.Replicate, A.IsrShrink)
# Sound reductions a config may ask for (`reductions`; argued in docs/exploration.md). "ignored_requests": a request
# at the head of a queue whose delivery would change nothing but that queue is delivered at once, inside the step.
REDUCTIONS = ("ignored_requests",)
_BOUNDS = {"max_failures": 1, "max_restarts": 1, "max_controller_epoch": 2, "max_leader_epoch": 3, "max_records": 1,
           "reassign_targets": [], "max_inflight": 6}


class BadConfig(ValueError):
    """A bounded configuration that cannot be explored; the message names the key."""


# A config is a few hundred bytes; anything past this is not one (documented in docs/robustness.md).
MAX_CONFIG_BYTES = 1 << 20


def _config_validator() -> Any:
    global _CONFIG_VALIDATOR
    if _CONFIG_VALIDATOR is None:
        text = resources.files("kcm.specs").joinpath("config.schema.json").read_text(encoding="utf-8")
        _CONFIG_VALIDATOR = strictjson.validator(json.loads(text))
    return _CONFIG_VALIDATOR


_CONFIG_VALIDATOR: Any = None


def config_file(name_or_path: str) -> Path:
    """The file a config argument stands for: a path as given, else the shipped specs/configs/NAME.json."""
    path = Path(name_or_path)
    if _is_path(name_or_path):
        return path
    return Path(str(resources.files("kcm.specs").joinpath("configs", f"{name_or_path}.json")))


def _is_path(name_or_path: str) -> bool:
    """Whether a config argument names a file rather than a shipped config: a `.json` name, or anything there
    but a folder called by a bare name (a folder `large` where kcm runs does not hide the shipped `large`; `./large`
    is that folder, refused as one)."""
    path = Path(name_or_path)
    bare = path.name == name_or_path
    return path.suffix == ".json" or not name_or_path or (path.exists() and not (bare and path.is_dir()))


def load_config(name_or_path: str) -> dict[str, Any]:
    """A config from a file path, or by name from specs/configs/; BadConfig (naming the file) if missing or
    malformed."""
    try:
        if _is_path(name_or_path):
            raw = strictjson.read_bounded(Path(name_or_path), MAX_CONFIG_BYTES)
        else:  # read through importlib: kcm may be imported from a zip (spark-submit --py-files), with no file
            raw = resources.files("kcm.specs").joinpath("configs", f"{name_or_path}.json").read_bytes()
    except strictjson.InputError as err:
        raise BadConfig(f"{name_or_path}: {err}") from None
    except OSError as err:
        known = sorted(p.name[:-5] for p in resources.files("kcm.specs").joinpath("configs").iterdir()
                       if p.name.endswith(".json"))
        why = "a folder, not a config file" if Path(name_or_path).is_dir() else \
            err.strerror or err.__class__.__name__
        raise BadConfig(f"no config {name_or_path!r} ({why}); shipped: {', '.join(known)}") from None
    try:
        cfg = strictjson.loads(raw)
        validate_config(cfg)
    except strictjson.InputError as err:
        raise BadConfig(f"{name_or_path}: {err}") from None
    except BadConfig as err:
        raise BadConfig(f"{name_or_path}: {err}") from None
    return cfg


def validate_config(cfg: Any) -> None:
    """Check a bounded configuration against specs/config.schema.json, then its meaning (brokers named are the
    config's, variants and properties are known); BadConfig names the first problem by its JSON path."""
    try:
        strictjson.check_depth(cfg)
    except strictjson.InputError as err:
        raise BadConfig(str(err)) from None
    problem = strictjson.first_error(_config_validator(), cfg)
    if problem:
        raise BadConfig(problem)
    brokers = cfg["brokers"]
    for i, name in enumerate(cfg.get("variants", [])):
        if not known_switch(name):
            raise BadConfig(f"$.variants[{i}]: unknown variant {strictjson.cut(name)}; "
                            f"switches: {', '.join(SWITCHES)}")
    for key in ("topics", "late_topics"):
        for topic, assignment in cfg.get(key, {}).items():
            for part, replicas in assignment.items():
                unknown = [b for b in replicas if b not in brokers]
                if unknown:
                    raise BadConfig(f"$.{key}.{topic}.{part}: brokers {unknown} are not in brokers {brokers}")
    for i, target in enumerate(cfg.get("bounds", {}).get("reassign_targets", [])):
        unknown = [b for b in target if b not in brokers]
        if unknown:
            raise BadConfig(f"$.bounds.reassign_targets[{i}]: brokers {unknown} are not in brokers {brokers}")
    names = set(catalogue.ids())
    for i, name in enumerate(cfg.get("properties", [])):
        if name not in names:
            raise BadConfig(f"$.properties[{i}]: unknown property {strictjson.cut(name)}")
    goals = {p.name for p in catalogue.CATALOGUE if p.expectation in (SOMETIMES, SOMETIMES_STEP)}
    for name in cfg.get("unreached_goals", {}):
        if name not in goals:
            raise BadConfig(f"$.unreached_goals: {strictjson.cut(name)} is not a reachability goal; goals: "
                            f"{', '.join(sorted(goals))}")
    if "ignored_requests" in cfg.get("reductions", ()):
        # The soundness argument (docs/exploration.md) rests on requests waiting in queues and on the model's own
        # fencing rules: a request ignored now stays ignored. A variant switch may relax those rules.
        if cfg.get("delivery", "sync") != "async":
            raise BadConfig("$.reductions: ignored_requests needs \"delivery\": \"async\" (no request waits otherwise)")
        if cfg.get("variants"):
            raise BadConfig("$.reductions: ignored_requests is argued for the model's own fencing rules; a config "
                            "with variant switches cannot use it")
        left_out = catalogue.not_judged("ignored_requests")
        for i, name in enumerate(cfg.get("properties", [])):
            if name in left_out:
                raise BadConfig(f"$.properties[{i}]: {name} cannot be judged under reductions ignored_requests: "
                                f"{left_out[name]}")
    if "controller_move" in cfg.get("families", ()) and cfg.get("grain", "coarse") != "event":
        raise BadConfig("$.families: controller_move needs \"grain\": \"event\" (at the coarse grain the old "
                        "controller holds no event, and a move is controller_resign)")
    _check_topics(cfg)


def cluster_config(cfg: dict[str, Any]) -> ClusterConfig:
    """The model's configuration a (valid) bounded configuration describes."""
    return ClusterConfig(
        brokers=tuple(cfg["brokers"]), rules=cfg.get("rules", "seeds"),
        unclean_leader_election=cfg.get("unclean_leader_election", False),
        min_insync_replicas=cfg.get("min_insync_replicas", 1),
        truncation=cfg.get("truncation", "high_watermark"),
        variants=tuple(cfg.get("variants", ())), delivery=cfg.get("delivery", "sync"),
        zombie_controller="zombie_controller" in cfg.get("families", ()), grain=cfg.get("grain", "coarse"),
        controller_message_queue_size=cfg.get("controller_message_queue_size", 10))


def _create_steps(topics: dict[str, Any]) -> list[A.CreateTopic]:
    return [A.CreateTopic(t, tuple(sorted((int(p), tuple(r)) for p, r in a.items())))
            for t, a in sorted(topics.items())]


def _check_topics(cfg: dict[str, Any]) -> None:
    """The reference itself judges the initial topics (partition numbering, replicas): its refusal is BadConfig."""
    config = cluster_config(cfg)
    try:
        state, _ = api.start(config)
        for action in _create_steps(cfg.get("topics", {})):
            state, _ = api.step(config, state, action)
            # grain "event": the controller's part of the creation is a step of its own (taken once a controller
            # blocked on a full request queue, variant KAFKA-1305, is free: the settling of `init_states`)
            while state.ctx.events and channels.blocked(config, state) is None:
                state, _ = api.step(config, state, A.ControllerEvent())
    except KcmError as err:
        raise BadConfig(f"$.topics: {err.name}: {err.message}") from None


def preferred_election_is_idle(config: ClusterConfig, state: Cluster, t: Txn | None = None) -> bool:
    """Whether a preferred election of every partition would change nothing (so the explorer need not try it).

    Asked of the reference: the partitions `preferred.tried` names are re-elected only where the preferred
    selector (`partition_machine.choose`) finds a leader in the znode's ISR; a partition without a znode is left to
    the step itself. If no partition would be re-elected, nothing is written or sent (only notes), and a step that
    changes nothing is never a transition, so not trying it changes no count. `t`: a Txn of `state` to read it
    through (one is made if not given); nothing is written.
    """
    if t is None:
        t = Txn(config, state)
    for tp in preferred.tried(t, [tp for tp, _ in state.zk.assignments if tp[0] not in state.zk.delete_topics]):
        znode = draft_lookup(t.zk, "partitions", tp)
        if znode is None or partition_machine.choose(t, tp, selectors.PREFERRED, znode.isr) is not None:
            return False
    return True


_PART_NAMES = Cluster._fields
_INFLIGHT = _PART_NAMES.index("inflight")
_APPLIED_MEMO = 1 << 16  # entries of BoundedSystem._applied before it starts afresh


class _AppliedDeliveries(dict):
    """BoundedSystem's memo of deliveries seen to change more than their queue; travels empty (pickled for Spark)."""

    def __reduce__(self) -> tuple[type, tuple]:
        """An empty memo: it holds states, and each process fills its own."""
        return (type(self), ())


class BoundedSystem(ModelBase):
    """The Model of one bounded configuration (see the module docstring)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.config = cluster_config(cfg)
        self.families = set(cfg.get("families", []))
        self._fold_ignored = "ignored_requests" in cfg.get("reductions", ())
        self._left_out = catalogue.not_judged("ignored_requests") if self._fold_ignored else {}
        self._applied = _AppliedDeliveries()  # deliveries seen to change more than their queue (deliver_ignored)
        # Only a leader's own ISR writes add zkVersions without a new leader epoch (see kcm.model.canonical).
        self._leader_isr_writes = "data_plane" in self.families
        self.part_fingerprints = PartFingerprints(len(Cluster._fields))  # memo of `fingerprint`
        self.bounds = dict(_BOUNDS, **cfg.get("bounds", {}))
        self.topic_steps = _create_steps(cfg.get("topics", {}))
        # Topics the `topic_creation` family creates during the run (their replicas' brokers may be down).
        self.late_steps = _create_steps(cfg.get("late_topics", {}))
        self.tps = [(c.topic, p) for c in self.topic_steps for p, _ in c.assignment]
        wanted = set(cfg.get("properties", []))
        # A config that names its properties gets exactly those; one that names none gets every property it can
        # reach (a reachability goal of a family that is off would only print a "never reached" that means nothing)
        # except the EVENTUALLY ones, whose check keeps the whole graph (checkers/explore/liveness.py): those are named.
        self._properties = [p for p in catalogue.CATALOGUE if p.name in wanted
                            or not wanted and self.can_reach(p.name) and p.expectation != EVENTUALLY]
        for p in self._properties:
            if p.expectation == EVENTUALLY and not self.can_reach(p.name):
                raise BadConfig(f"properties: {p.name} needs the families {sorted(catalogue.facts(p.name).needs)} "
                                f"(without them no run can settle, and the verdict would mean nothing)")
        self._targets = [tuple(x) for x in self.bounds["reassign_targets"]]
        self.settle_steps: list[Any] = []  # deliveries that settle the initial state (delivery "async")
        # Where a step may stop as soon as a write passes a bound (`successor`). The controller epoch only grows.
        # A partition znode's leader epoch only grows within a step unless a topic is deleted (its znode goes), a
        # zombie writes from its stale cache, or a leader rewrites the ISR with its own view (data plane).
        grows = not self.families & {"deletion", "zombie_controller"} and self.config.grain == "coarse"
        self._limits = (self.bounds["max_leader_epoch"] if grows else None, self.bounds["max_controller_epoch"])
        # A leader's own ISR write happens only in the steps of LEADER_ISR_WRITES: only those run to their end.
        self._own_write_limits = (None if "data_plane" in self.families else self._limits[0], self._limits[1])
        self._max_records = self.bounds["max_records"]
        # The actions offered, built once: `actions` hands out these very (immutable) values state after state.
        self._by_broker = {kind: {b: kind(b) for b in self.config.brokers}
                           for kind in (A.BrokerFail, A.BrokerStart, A.ControlledShutdown, A.ControllerResign,
                                        A.SessionExpiry, A.BrokerBounce, A.ControllerMove)}
        self._resign = A.ControllerResign()
        self._next_event, self._zombie_event = A.ControllerEvent(), A.ControllerEvent(zombie=True)
        self._preferred = A.PreferredElection()
        self._reassign = {tp: [A.Reassign(tp, t) for t in self._targets] for tp in self.tps}
        self._produce = {tp: (A.Produce(tp), A.Replicate(tp), A.Produce(tp, 1, "1")) for tp in self.tps}
        self._per_replica = {(tp, b): (A.Replicate(tp, b), A.IsrShrink(tp, b)) for tp in self.tps
                             for b in self.config.brokers}

    def can_reach(self, name: str) -> bool:
        """Whether this configuration's families and delivery can reach the named property (its facts' `needs`).

        A config that names no properties gets only those it can reach: a goal of a family that is off would only
        print a "never reached" that means nothing ("delivery:async": a broker meets a stale controller epoch only
        in a `deliver` step); an EVENTUALLY property named without them is a BadConfig.
        """
        if self._fold_ignored and name in self._left_out:
            return False
        facts = catalogue.facts(name)
        needs = facts.needs if facts is not None else frozenset()
        return not needs or bool(needs & (self.families | {"delivery:" + self.config.delivery}))

    def init_states(self) -> list[Cluster]:
        """The first election, then the configured topics created."""
        state, _ = api.start(self.config)
        for action in self.topic_steps:
            state, _ = api.step(self.config, state, action)
        self.settle_steps = []
        while state.inflight or state.ctx.events:
            # the set-up's controller events (grain "event") are processed, and its requests (delivery "async") all
            # arrive, before exploring starts
            # (a controller blocked on a full request queue, variant KAFKA-1305, takes no event until it is drained)
            if state.ctx.events and channels.blocked(self.config, state) is None:
                self.settle_steps.append(self._next_event)
            else:
                (broker, epoch), _queue = state.inflight[0]
                self.settle_steps.append(A.Deliver(broker, epoch))
            state, _ = api.step(self.config, state, self.settle_steps[-1])
        return [state]

    def actions(self, state: Cluster) -> list[Any]:
        """The actions of the enabled families that the bounds still allow."""
        out: list[Any] = []
        brokers = dict(state.brokers)
        down = [b for b, s in brokers.items() if not s.alive or s.shutting_down]
        budget = len(down) < self.bounds["max_failures"]
        fam = self.families
        made = self._by_broker
        if "broker_failure" in fam:
            fail = made[A.BrokerFail]
            out += [fail[b] for b, s in brokers.items() if s.alive and budget]
            # A restart past max_restarts would only leave the boundary: not offered (same states, less work).
            start = made[A.BrokerStart]
            out += [start[b] for b, s in brokers.items()
                    if not s.alive and s.incarnation < self.bounds["max_restarts"]]
        if "controlled_shutdown" in fam and budget:
            shutdown = made[A.ControlledShutdown]
            out += [shutdown[b] for b, s in brokers.items() if s.alive and not s.shutting_down]
        if "controller_failover" in fam and state.zk.controller_epoch < self.bounds["max_controller_epoch"]:
            if self.config.grain == "event":
                # which broker wins the race for /controller matters once the old one may still hold events
                resign = made[A.ControllerResign]
                out += [resign[b] for b, s in brokers.items() if s.alive and b != state.zk.controller]
            else:
                out.append(self._resign)
        if ("controller_move" in fam and state.ctx.events and state.zombie is None
                and state.zk.controller_epoch < self.bounds["max_controller_epoch"]):
            # Only a controller holding events can be moved otherwise than by a resignation: with none queued the
            # move is controller_resign. The model keeps one old controller, so none moves while one is left.
            move = made[A.ControllerMove]
            out += [move[b] for b, s in brokers.items() if s.alive and b != state.zk.controller]
        if state.ctx.events:
            out.append(self._next_event)
        if state.zombie is not None and state.zombie.events:
            out.append(self._zombie_event)
        if "zombie_controller" in fam:
            if state.zk.controller_epoch < self.bounds["max_controller_epoch"]:
                # another broker wins the election while the old controller is still busy
                resign = made[A.ControllerResign]
                out += [resign[b] for b, s in brokers.items() if s.alive and b != state.zk.controller]
            if state.zombie is not None:
                out += [A.ZombieElect(tp) for tp in self.tps]
        if "session_expiry" in fam:
            expire = made[A.SessionExpiry]
            out += [expire[b] for b, s in brokers.items() if s.alive and b != state.zk.controller]
        if "fast_bounce" in fam:
            bounce = made[A.BrokerBounce]
            out += [bounce[b] for b, s in brokers.items() if s.alive and b != state.zk.controller]
        out += [A.Deliver(b, e) for (b, e), queue in state.inflight if queue]
        if "preferred" in fam and not preferred_election_is_idle(self.config, state):
            out.append(self._preferred)
        assignments = dict(state.zk.assignments)
        moving = {k for k, _ in state.ctx.reassignments}
        for tp in self.tps:
            if tp not in assignments:
                continue
            if "reassignment" in fam and tp not in moving:
                out += self._reassign[tp]
            if "data_plane" in fam:
                produce, replicate, produce_one = self._produce[tp]
                out.append(produce)
                if self.config.delivery == "async":
                    # each follower fetches from the leader it last heard of, on its own schedule
                    out += [self._per_replica[(tp, b)][0] for b, s in brokers.items() if s.alive]
                else:
                    out.append(replicate)
                if "acks_one" in fam:  # acks=1: the leader acknowledges alone
                    out.append(produce_one)
                lai = dict(state.zk.partitions).get(tp)
                if "consume" in fam and lai is not None and self._consumable(state, tp):
                    # A consumer reads everything below the leader's HW (from offset 0: a consumer that has read
                    # part of it adds nothing the ghost record does not already hold).
                    out.append(A.Consume(tp, 0))
                if lai is not None:
                    # The leader shrinks the ISR as it sees it (under async delivery its view may be behind ZK's).
                    # A leader that is not live shrinks nothing (the step refuses every shrink): the steps offered
                    # are then named from ZK's ISR, never from what the dead broker kept in memory, which the
                    # dead-broker reduction forgets (checkers/reductions/dead_brokers.py).
                    leader = brokers.get(lai.leader)
                    own = dict(state.replicas).get((tp[0], tp[1], lai.leader)) \
                        if leader is not None and leader.alive else None
                    out += [self._per_replica[(tp, b)][1] for b in (own.isr if own is not None else lai.isr)
                            if b != lai.leader]
        if "deletion" in fam:
            out += [A.DeleteTopic(t.topic) for t in self.topic_steps + self.late_steps
                    if any(k[0] == t.topic for k in assignments)]
        if "topic_creation" in fam:
            out += [c for c in self.late_steps if not any(k[0] == c.topic for k in assignments)]
        return out

    def _consumable(self, state: Cluster, tp: tuple) -> bool:
        """Whether a consumer fetch from offset 0 would hand over a record no consumer had yet (the reference's
        `consumed_records` and `unseen`): a fetch that adds nothing to the ghost record changes nothing, and a step
        that changes nothing is never a transition."""
        t = Txn(self.config, state)
        try:
            return bool(dataplane.unseen(t, tp, dataplane.consumed_records(t, tp, 0)))
        except KcmError:
            return False  # refused: no acting leader

    def step(self, state: Cluster, action: Any) -> tuple[Cluster, Effects]:
        """The reference's next state and effects (KcmError when refused)."""
        return api.step(self.config, state, action)

    def next_state(self, state: Cluster, action: Any) -> Cluster | None:
        """The next state, or None when the action is refused or changes nothing (with ignored requests delivered
        when the config asks for that reduction)."""
        try:
            nxt, _ = api.step(self.config, state, action)
        except KcmError:
            return None
        if nxt == state:
            return None
        return self.deliver_ignored(nxt) if self._fold_ignored else nxt

    def deliver_ignored(self, state: Cluster, done: list[Any] | None = None) -> Cluster:
        """The state once every request at the head of a queue that its broker would ignore has been delivered.

        "Ignored" is told by the reference itself: the `deliver` step is run, and it counts only when it changes
        nothing but that queue (a LeaderAndIsr of a leader epoch the replica already has, an UpdateMetadata of the
        controller epoch the broker has, a request of an older controller epoch refused). Queues are independent,
        so the result does not depend on the order. `done` collects the deliveries made.
        """
        config = self.config
        applied = self._applied
        while True:
            rest = state[:_INFLIGHT] + state[_INFLIGHT + 1:]
            for (broker, epoch), queue in state.inflight:
                if not queue:
                    continue
                # A delivery from a queue reads that queue and every part of the state but the other queues; one
                # seen to change something, from these very objects, is not run again (most heads are not ignored).
                key = (id(queue), *map(id, rest))
                seen = applied.get(key)
                if seen is not None and seen[0] is queue and all(a is b for a, b in zip(seen[1], rest, strict=True)):
                    continue
                action = A.Deliver(broker, epoch)
                try:
                    nxt, _ = api.step(config, state, action)
                except KcmError:
                    continue
                if all(a is b or a == b for a, b in zip(nxt[:_INFLIGHT] + nxt[_INFLIGHT + 1:], rest, strict=True)):
                    state = nxt
                    if done is not None:
                        done.append(action)
                    break
                if len(applied) >= _APPLIED_MEMO:
                    applied.clear()
                applied[key] = (queue, rest)  # the objects are kept, so their ids stay theirs
            else:
                return state

    def expand(self, actions: list[Any]) -> list[Any]:
        """The reference's steps a trace stands for: with ignored_requests, each folded delivery made explicit."""
        if not self._fold_ignored:
            return list(actions)
        state = self.init_states()[0]
        out: list[Any] = []
        for action in actions:
            state, _ = api.step(self.config, state, action)
            out.append(action)
            state = self.deliver_ignored(state, out)
        return out

    def successor(self, state: Cluster, action: Any) -> tuple[Cluster, Effects] | None:
        """(next state, effects) of a transition the explorer keeps; None when refused, a no-op or out of bounds.

        The same as `step` followed by the no-op and `within_boundary` tests, except that a step whose writes
        already pass the leader- or controller-epoch bound is stopped there instead of being run to its end.
        """
        if type(action) is A.Produce and self._log_full(state, action):
            return None
        kind, found = self.outcome(state, action)
        return found if kind == NEXT else None

    def _log_full(self, state: Cluster, action: A.Produce) -> bool:
        """Whether a produce is refused or leaves the bounds, told before it runs: its leader's log is full.

        A produce appends its records to the acting leader's log and shortens no log, so when that log has no
        room left for them the step ends past `max_records` (or is refused when there is no acting leader).
        """
        t = Txn(self.config, state)
        try:
            leader = dataplane.acting_leader(t, action.tp)
        except KcmError:
            return True
        data = t.lookup("replicas", (action.tp[0], action.tp[1], leader))
        return len(data.log) + action.records > self._max_records

    def outcome(self, state: Cluster, action: Any) -> tuple[str, tuple[Cluster, Effects] | None]:
        """What an action does in a state: (NEXT, (next state, effects)), or (REFUSED | UNCHANGED | OUTSIDE, None).

        OUTSIDE: the step leads past the bounds (liveness checks must not take that for a disabled action).
        """
        try:
            limits = self._own_write_limits if isinstance(action, LEADER_ISR_WRITES) else self._limits
            nxt, effects = api.step(self.config, state, action, limits)
        except OutOfBounds:
            return OUTSIDE, None
        except KcmError:
            return REFUSED, None
        # A step that changes nothing returns its very state (Txn.commit); an equal copy is still no change.
        if nxt is state or nxt == state:
            return UNCHANGED, None
        if not self.within_boundary(nxt, state):
            return OUTSIDE, None
        if self._fold_ignored:
            # The bounds were judged on the reference's own next state; the deliveries only shorten queues.
            nxt = self.deliver_ignored(nxt)
        return NEXT, (nxt, effects)

    def fair(self, action: Any) -> bool:
        """Whether weak fairness applies to the action: what brokers do on their own timers, not clients or faults.

        Followers fetch, the controller's request threads deliver, and a leader drops a lagging follower from the
        ISR (replica.lag.time.max.ms); a produce, a consumer, an admin request or a failure may never come.
        """
        return isinstance(action, FAIR_ACTIONS)

    def properties(self) -> list[Property]:
        """The properties this configuration checks."""
        return self._properties

    def add_properties(self, extra: list[Property], only: set[str] | None = None) -> None:
        """Check also `extra` (users' own properties, `kcm.properties.user`); with `only`, just those ids."""
        self._properties = [p for p in self._properties + list(extra) if only is None or p.name in only]

    def within_boundary(self, state: Cluster, parent: Cluster | None = None) -> bool:
        """Controller epoch, leader epochs, broker restarts and log lengths within the bounds.

        With `parent` (a state within the bounds that `state` follows), parts `state` shares with it are not
        judged again: a step hands back every part it left unchanged as the very same object.
        """
        # Plain loops, not any()/all() over generators: this runs on every transition, and the compiled build
        # makes a generator object and a closure for each generator expression.
        b = self.bounds
        if parent is None or state.brokers is not parent.brokers:
            limit = b["max_restarts"]
            for _, s in state.brokers:
                if s.incarnation > limit:
                    return False
        if parent is None or state.zk is not parent.zk:
            if state.zk.controller_epoch > b["max_controller_epoch"]:
                return False
            limit = b["max_leader_epoch"]
            for _, lai in state.zk.partitions:
                if lai.leader_epoch > limit:
                    return False
        if parent is None or state.inflight is not parent.inflight:
            total = 0
            for _, q in state.inflight:
                total += len(q)
            if total > b["max_inflight"]:
                return False
        if parent is None or state.replicas is not parent.replicas:
            limit = b["max_records"]
            for _, r in state.replicas:
                if len(r.log) > limit:
                    return False
        return True

    def fingerprint(self, state: Cluster) -> int:
        """The stable 64-bit fingerprint (of the canonical form when leaders update ISRs themselves).

        Combined from the fingerprints of the state's parts, each memoized by value: a successor shares most
        parts with its parent, so only the parts a step changed are serialized. Under the canonical form a
        versioned part's key also holds the znodes' versions, which its relative versions depend on.
        """
        memos = self.part_fingerprints.memos
        canonical = self._leader_isr_writes
        if not canonical:  # every part keyed by its value alone: the loop below without its canonical-form tests
            fps = []
            for i, part in enumerate(state):
                fp = memos[i].get(part)
                if fp is None:
                    fp = self.part_fingerprints.store(i, part, part)
                fps.append(fp)
            return combine(fps)
        versions = tuple((tp, lai.zk_version) for tp, lai in state.zk.partitions) if canonical else ()
        current: dict[tuple, int] | None = None
        fps = []
        for i, part in enumerate(state):
            shifted = canonical and _PART_NAMES[i] in VERSIONED_PARTS
            key = (part, versions) if shifted else part
            fp = memos[i].get(key)
            if fp is None:
                if shifted:
                    if current is None:
                        current = dict(versions)
                    try:
                        part = relative_part(_PART_NAMES[i], part, current)
                    except NoZnode:  # a deleted partition's versions: shifted by the lowest one in any part
                        return combine([fingerprint(p) for p in relative_zk_versions(state)])
                fp = self.part_fingerprints.store(i, key, part)
            fps.append(fp)
        return combine(fps)

    def scenario(self, actions: list[Any]) -> dict[str, Any]:
        """A `kcm run` scenario that replays a trace of this system from its initial state."""
        c = self.config
        config: dict[str, Any] = {"brokers": list(c.brokers), "rules": c.rules, "truncation": c.truncation,
                                  "unclean_leader_election": c.unclean_leader_election,
                                  "min_insync_replicas": c.min_insync_replicas}
        if c.variants:
            config["variants"] = list(c.variants)
        if c.delivery != "sync":
            config["delivery"] = c.delivery
        if c.zombie_controller:
            config["zombie_controller"] = True
        if c.grain != "coarse":
            config["grain"] = c.grain
        if c.controller_message_queue_size != 10:
            config["controller_message_queue_size"] = c.controller_message_queue_size
        return {"name": f"counterexample in config {self.cfg.get('name', '?')}",
                "config": config,
                "steps": [a.to_step() for a in self.topic_steps + self.settle_steps + list(actions)]}


__all__ = ["BadConfig", "BoundedSystem", "FAMILIES", "REDUCTIONS", "load_config"]
