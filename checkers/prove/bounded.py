"""The bounded system of an explorer config as a Z3 transition relation, one macro step per reference operation.

Where encoding.py over-approximates the controller with fine-grained moves (for induction over every cluster),
this encoding is exact for one bounded configuration (`checkers/core/bounded.py`): each enabled action of the
configured families (broker failure and restart, controller failover, preferred election) is one step, written
symbolically as the reference handler runs it (state-machine moves guarded by the rule set's tables, the offline
and preferred selectors in AR order, leader-epoch bumps, the LeaderAndIsr / UpdateMetadata / StopReplica batch
delivered to live brokers with their controller-epoch fencing), then the config's bounds.

A symbolic state is the shared view (vocabulary.Sym, with the model's field names) of BMC_FIELDS, for the
config's one partition: /controller and /controller_epoch, each broker's
liveness, incarnation and accepted controller epoch, the controller's partition and replica states, the
partition znode (leader, leader epoch, ISR, the controller epoch that wrote it), each broker's own view (the
leader it follows and that leader epoch) and the ghost record of the leader elected per leader epoch.
`project(cluster)` maps an explicit state onto those fields. Left out, because in these families they are copies
or constants: zkVersions (the partition's equals its leader epoch, /controller_epoch's equals the epoch), the
controller context's copies of ZooKeeper (controller id, epoch, live brokers, assignment, leadership),
ghost.max_controller_epoch (= the controller epoch), the assignment (never changes), shutting-down flags (no
controlled shutdown) and the replica logs, high watermarks and cached ISR / replica lists (no data plane). The
view's AR is the config's assignment, a constant. A trace shows the fields under short names (`SHOWN`).
"""

from __future__ import annotations

from typing import Any

import z3
from kcm.checkers.core.bounded import BoundedSystem
from kcm.checkers.prove.vocabulary import (
    BMC_FIELDS,
    NONE,
    PARTITION_CODES,
    REPLICA_CODES,
    Delivery,
    Move,
    Step,
    Sym,
    partition_allows,
    replica_allows,
)
from kcm.model.cluster import Cluster
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R

SUPPORTED_FAMILIES = ("broker_failure", "controller_failover", "preferred")
# The short names a trace shows each field under (`kcm prove --bmc` output), in the order shown.
SHOWN = {"controller": "ctl", "controller_epoch": "ce", "partition_state": "ps", "leader": "leader",
         "leader_epoch": "le", "isr": "isr", "znode_controller_epoch": "lai_ce", "alive": "alive",
         "incarnation": "inc", "broker_controller_epoch": "bce", "replica_state": "rs", "replica_leader": "rleader",
         "replica_leader_epoch": "rle", "elected": "elected"}
PER_BROKER = ("alive", "incarnation", "broker_controller_epoch", "replica_state", "replica_leader",
              "replica_leader_epoch")


def shown(values: dict[str, Any]) -> dict[str, Any]:
    """A state's values (as `project` and `values` give them) under the names a trace shows."""
    return {SHOWN[f]: values[f] for f in SHOWN}


class UnsupportedConfig(ValueError):
    """A bounded config this encoding does not cover; the message names what is missing."""


def supported(system: BoundedSystem) -> None:
    """Raise UnsupportedConfig unless the config is one partition with only the encoded families."""
    extra = sorted(system.families - set(SUPPORTED_FAMILIES))
    if extra:
        raise UnsupportedConfig(
            f"families {', '.join(extra)} are not encoded symbolically (encoded: {', '.join(SUPPORTED_FAMILIES)})"
        )
    if len(system.tps) != 1:
        raise UnsupportedConfig(f"the symbolic bounded encoding covers one partition, the config has {len(system.tps)}")
    if list(system.config.brokers) != sorted(system.config.brokers):
        raise UnsupportedConfig("brokers must be listed in increasing id order")


class BoundedEncoding:
    """The Z3 transition relation of one bounded system (see the module docstring)."""

    def __init__(self, system: BoundedSystem, *, bump_leader_epoch: bool = True) -> None:
        supported(system)
        self.bump_leader_epoch = bump_leader_epoch  # False: the seeded bug "no leader-epoch bump" on every write
        self.system = system
        self.rules = system.config.rule_set()
        self.ids = tuple(system.config.brokers)
        self.n = len(self.ids)
        self.tp = system.tps[0]
        assignment = dict(system.topic_steps[0].assignment)[self.tp[1]]
        self.ar = tuple(self.ids.index(b) for b in assignment)  # AR as broker positions, in AR order
        self.bounds = system.bounds
        self.max_le = int(self.bounds["max_leader_epoch"])
        self.unclean = system.config.unclean_leader_election
        self.action_names = self._action_names()
        # Numbers (ids, epochs, state codes) are signed bit-vectors, wide enough for the bounds plus the writes
        # of one step (at most one per replica and an election): bit-blasting beats integer arithmetic here.
        top = max(self.max_le + self.n + 2, int(self.bounds["max_controller_epoch"]) + 1,
                  int(self.bounds["max_restarts"]) + 1, len(R.ALL), len(P.ALL), *self.ids)
        self.width = top.bit_length() + 1

    def num(self, x: int) -> Any:
        """A number of the encoding (a signed bit-vector)."""
        return z3.BitVecVal(x, self.width)

    # ---- states ---------------------------------------------------------------------------------------

    def state(self, tag: str) -> Sym:
        """Fresh Z3 constants for a whole state; AR is the config's constant assignment."""
        fields: dict[str, Any] = {}
        for f in BMC_FIELDS:
            name = SHOWN[f]
            if f == "isr":
                fields[f] = z3.BitVec(f"isr_{tag}", self.n)
            elif f == "elected":
                fields[f] = tuple(z3.BitVec(f"elected{e}_{tag}", self.width) for e in range(self.max_le + 1))
            elif f in PER_BROKER:
                fields[f] = tuple(z3.Bool(f"{name}{i}_{tag}") if f == "alive" else
                                  z3.BitVec(f"{name}{i}_{tag}", self.width) for i in range(self.n))
            else:
                fields[f] = z3.BitVec(f"{name}_{tag}", self.width)
        return Sym(ids=self.ids, ar=z3.BitVecVal(sum(1 << i for i in self.ar), self.n), **fields)

    def project(self, c: Cluster) -> dict[str, Any]:
        """The fields of an explicit state this encoding represents, as plain values."""
        topic, part = self.tp
        lai = get(c.zk.partitions, self.tp)
        brokers = dict(c.brokers)
        replicas = dict(c.replicas)
        out: dict[str, Any] = {
            "controller": c.zk.controller,
            "controller_epoch": c.zk.controller_epoch,
            "partition_state": PARTITION_CODES[get(c.ctx.partition_states, self.tp, P.NON_EXISTENT)],
            "leader": lai.leader if lai else NONE,
            "leader_epoch": lai.leader_epoch if lai else NONE,
            "isr": sum(1 << self.ids.index(b) for b in lai.isr) if lai else 0,
            "znode_controller_epoch": lai.controller_epoch if lai else 0,
            "alive": tuple(brokers[b].alive for b in self.ids),
            "incarnation": tuple(brokers[b].incarnation for b in self.ids),
            "broker_controller_epoch": tuple(brokers[b].controller_epoch for b in self.ids),
            "replica_state": tuple(REPLICA_CODES[get(c.ctx.replica_states, (topic, part, b), R.NON_EXISTENT)]
                                   for b in self.ids),
            "replica_leader": tuple(replicas[(topic, part, b)].leader if (topic, part, b) in replicas else NONE
                                    for b in self.ids),
            "replica_leader_epoch": tuple(replicas[(topic, part, b)].leader_epoch if (topic, part, b) in replicas
                                          else NONE for b in self.ids),
            "elected": tuple(get(c.ghost.elected, (topic, part, e), NONE) for e in range(self.max_le + 1)),
        }
        return out

    def equals(self, s: Sym, values: dict[str, Any]) -> Any:
        """The symbolic state s has exactly these (projected) values."""
        parts = []
        for f, v in values.items():
            if isinstance(v, tuple):
                parts += [x == y for x, y in zip(getattr(s, f), v, strict=True)]
            else:
                parts.append(getattr(s, f) == v)
        return z3.And(parts)

    def same(self, s: Sym, t: Sym) -> Any:
        """Two symbolic states are equal on every field."""
        parts = []
        for f in BMC_FIELDS:
            a, b = getattr(s, f), getattr(t, f)
            if isinstance(a, tuple):
                parts += [x == y for x, y in zip(a, b, strict=True)]
            else:
                parts.append(a == b)
        return z3.And(parts)

    def values(self, model: z3.ModelRef, s: Sym) -> dict[str, Any]:
        """The plain values of s in a Z3 model (the shape `project` returns)."""

        width = self.width

        def val(x: Any, signed: bool) -> Any:
            v = model.eval(x, model_completion=True)
            if z3.is_bool(v):
                return z3.is_true(v)
            return v.as_signed_long() if signed and v.size() == width else v.as_long()

        out = {}
        for f in BMC_FIELDS:
            x = getattr(s, f)
            out[f] = tuple(val(y, True) for y in x) if isinstance(x, tuple) else val(x, f != "isr")
        return out

    def init(self, s: Sym) -> Any:
        """The config's initial state (first controller election, topic created), as the reference builds it."""
        (first,) = self.system.init_states()
        return self.equals(s, self.project(first))

    def within_boundary(self, s: Sym) -> Any:
        """The config's bounds: restarts, controller epoch and leader epoch."""
        return z3.And(
            *[x <= self.bounds["max_restarts"] for x in s.incarnation],
            s.controller_epoch <= self.bounds["max_controller_epoch"],
            s.leader_epoch <= self.max_le,
        )

    # ---- the transition relation --------------------------------------------------------------------------

    def _action_names(self) -> list[str]:
        names = []
        fam = self.system.families
        if "broker_failure" in fam:
            names += [f"BrokerFail({b})" for b in self.ids] + [f"BrokerStart({b})" for b in self.ids]
        if "controller_failover" in fam:
            names.append("ControllerResign")
        if "preferred" in fam:
            names.append("PreferredElection")
        return names

    def steps(
        self, s: Sym, t: Sym, changes_only: bool = True
    ) -> list[tuple[str, Any, Step]]:
        """(action name, formula relating s to t, the step's record) for every action of the configured families.

        The record is what the step formulas read besides the states: the state-machine moves the step logs and
        the LeaderAndIsr requests brokers applied. With changes_only (the explorer's rule) a step must change the
        state.
        """
        out = []
        for name in self.action_names:
            w = _Work(self, s)
            enabled = self._run(name, w)
            formula = z3.And(enabled, self.same(w.v, t), self.within_boundary(t))
            if changes_only:
                formula = z3.And(formula, z3.Not(self.same(s, t)))
            out.append((name, formula, Step(self.rules, tuple(w.moves), tuple(w.deliveries))))
        return out

    def next(self, s: Sym, t: Sym) -> Any:
        """The whole transition relation."""
        return z3.Or([f for _, f, _ in self.steps(s, t)])

    def _run(self, name: str, w: _Work) -> Any:
        s = w.v
        if name.startswith("BrokerFail("):
            b = self.ids.index(int(name[len("BrokerFail("):-1]))
            down = sum(z3.If(a, self.num(0), self.num(1)) for a in s.alive)
            enabled = z3.And(s.alive[b], down < self.bounds["max_failures"])
            w.broker_fail(enabled, b)
            return enabled
        if name.startswith("BrokerStart("):
            b = self.ids.index(int(name[len("BrokerStart("):-1]))
            enabled = z3.Not(s.alive[b])
            w.broker_start(enabled, b)
            return enabled
        if name == "ControllerResign":
            enabled = z3.And(s.controller_epoch < self.bounds["max_controller_epoch"], z3.Or(s.alive))
            w.elect_controller(enabled)
            return enabled
        if name == "PreferredElection":
            w.preferred_election(z3.BoolVal(True))
            return z3.BoolVal(True)
        raise ValueError(f"unknown action {name!r}")

    # ---- tables ---------------------------------------------------------------------------------------------

    def partition_allows(self, from_code: Any, to: str) -> Any:
        """The rule set's partition table: from_code may move to `to`."""
        return partition_allows(self.rules, from_code, to)

    def replica_allows(self, from_code: Any, to: str) -> Any:
        """The rule set's replica table: from_code may move to `to`."""
        return replica_allows(self.rules, from_code, to)


class _Work:
    """A symbolic working copy of one step: every update is guarded, so branches are applied one after another."""

    def __init__(self, enc: BoundedEncoding, s: Sym) -> None:
        self.enc = enc
        self.v = s
        self.moves: list[Move] = []  # every state-machine move logged, guarded
        self.deliveries: list[Delivery] = []  # every LeaderAndIsr applied, guarded
        self._reset_batch()

    def _reset_batch(self) -> None:
        self.lai_q: dict[int, tuple[Any, Any, Any, Any]] = {}  # broker -> (queued, leader, epoch, isr), last wins
        self.um_q: dict[int, Any] = {}
        self.stop_q: dict[int, Any] = {}

    def put(self, g: Any, field: str, value: Any, i: int | None = None) -> None:
        """Set a field (or broker i's entry of a per-broker field) when g holds."""
        old = getattr(self.v, field)
        if i is None:
            self.v = self.v._replace(**{field: z3.If(g, value, old)})
        else:
            items = list(old)
            items[i] = z3.If(g, value, items[i])
            self.v = self.v._replace(**{field: tuple(items)})

    # ---- small reads ----------------------------------------------------------------------------------------

    def in_isr(self, i: int) -> Any:
        """Broker position i is in the ISR now."""
        return self.v.has(self.v.isr, i)

    def has_controller(self) -> Any:
        """A controller is active."""
        return self.v.controller != NONE

    # ---- moves, writes and requests ---------------------------------------------------------------------

    def set_ps(self, g: Any, target: str) -> None:
        """A partition state-machine move, logged (so checked against the table)."""
        self.moves.append(Move("partition", g, self.v.partition_state, target))
        self.put(g, "partition_state", self.enc.num(PARTITION_CODES[target]))

    def set_rs(self, g: Any, i: int, target: str) -> None:
        """A replica state-machine move, logged (so checked against the table)."""
        self.moves.append(Move("replica", g, self.v.replica_state[i], target))
        self.put(g, "replica_state", self.enc.num(REPLICA_CODES[target]), i)

    def write_lai(self, g: Any, leader: Any, isr: Any) -> None:
        """Write the partition znode with the next leader epoch, recording the elected leader in the ghost."""
        epoch = self.v.leader_epoch + 1 if self.enc.bump_leader_epoch else self.v.leader_epoch
        for e in range(self.enc.max_le + 1):
            self.put(z3.And(g, epoch == e, leader != NONE), "elected", leader, e)
        self.put(g, "leader", leader)
        self.put(g, "isr", isr)
        self.put(g, "znode_controller_epoch", self.v.controller_epoch)
        self.put(g, "leader_epoch", epoch)

    def add_lai(self, g: Any, recipients: list[int]) -> None:
        """Queue LeaderAndIsr with the current znode to recipients, and UpdateMetadata to the live brokers."""
        for i in recipients:
            queued, leader, epoch, isr = self.lai_q.get(i, (z3.BoolVal(False), NONE, NONE, self.v.isr))
            self.lai_q[i] = (
                z3.Or(queued, g),
                z3.If(g, self.v.leader, leader),
                z3.If(g, self.v.leader_epoch, epoch),
                z3.If(g, self.v.isr, isr),
            )
        self.add_um(g, list(range(self.enc.n)))

    def add_um(self, g: Any, recipients: list[int]) -> None:
        """Queue UpdateMetadata (delivery drops it for brokers that are not live)."""
        for i in recipients:
            self.um_q[i] = z3.Or(self.um_q.get(i, z3.BoolVal(False)), g)

    def add_stop(self, g: Any, i: int) -> None:
        """Queue StopReplica (no delete) to broker position i."""
        self.stop_q[i] = z3.Or(self.stop_q.get(i, z3.BoolVal(False)), g)

    def _accept(self, g: Any, i: int) -> Any:
        """Deliver one request of the current controller to broker i: live and not stale; its epoch is taken."""
        ce, bce = self.v.controller_epoch, self.v.broker_controller_epoch[i]
        accepted = z3.And(g, self.v.alive[i], ce >= bce)
        self.put(z3.And(accepted, ce > bce), "broker_controller_epoch", ce, i)
        return accepted

    def flush(self) -> None:
        """Send the batch: per broker LeaderAndIsr, then UpdateMetadata, then StopReplica."""
        for i in range(self.enc.n):
            if i in self.lai_q:
                queued, leader, epoch, _isr = self.lai_q[i]
                bce_before = self.v.broker_controller_epoch[i]
                applied = z3.And(self._accept(queued, i), epoch > self.v.replica_leader_epoch[i])
                self.deliveries.append(Delivery(applied, self.v.controller_epoch, bce_before))
                self.put(applied, "replica_leader", leader, i)
                self.put(applied, "replica_leader_epoch", epoch, i)
            if i in self.um_q:
                self._accept(self.um_q[i], i)
            if i in self.stop_q:
                self.put(self._accept(self.stop_q[i], i), "replica_leader", self.enc.num(NONE), i)
        self._reset_batch()

    # ---- the controller's procedures (names as in the reference) ----------------------------------------

    def online_partition_change(self, g: Any) -> None:
        """triggerOnlinePartitionStateChange: New/Offline -> Online with the offline selector, if any is eligible."""
        ids, ps = self.enc.ids, self.v.partition_state
        cond = z3.And(
            g,
            self.has_controller(),
            z3.Or(ps == PARTITION_CODES[P.NEW], ps == PARTITION_CODES[P.OFFLINE]),
            self.enc.partition_allows(ps, P.ONLINE),
        )
        live_isr = self.v.isr & self.v.alive_set()
        clean = [z3.And(self.v.alive[i], self.in_isr(i)) for i in self.enc.ar]
        leader: Any = self.enc.num(NONE)
        for i, ok in reversed(list(zip(self.enc.ar, clean, strict=True))):
            leader = z3.If(ok, self.enc.num(ids[i]), leader)
        isr, found = live_isr, z3.Or(clean)
        if self.enc.unclean:
            dirty: Any = self.enc.num(NONE)
            dirty_isr: Any = z3.BitVecVal(0, self.enc.n)
            for i in reversed(self.enc.ar):
                dirty = z3.If(self.v.alive[i], self.enc.num(ids[i]), dirty)
                dirty_isr = z3.If(self.v.alive[i], self.v.bit(i), dirty_isr)
            leader = z3.If(found, leader, dirty)
            isr = z3.If(found, isr, dirty_isr)
            found = z3.Or(found, *[self.v.alive[i] for i in self.enc.ar])
        w = z3.And(cond, found)
        self.write_lai(w, leader, isr)
        self.add_lai(w, list(self.enc.ar))
        self.set_ps(w, P.ONLINE)
        self.flush()

    def remove_from_isr(self, g: Any, i: int) -> None:
        """The controller takes broker i out of the ISR and the leadership (never emptying the ISR)."""
        me = self.enc.ids[i]
        w = z3.And(g, z3.Or(self.in_isr(i), self.v.leader == me))
        only = z3.Or([self.v.isr == self.v.bit(j) for j in range(self.enc.n)])
        leader = z3.If(self.v.leader == me, self.enc.num(NONE), self.v.leader)
        isr = z3.If(only, self.v.isr, self.v.isr & ~self.v.bit(i))
        self.write_lai(w, leader, isr)
        self.add_lai(w, [j for j in self.enc.ar if j != i])

    def replicas_offline(self, g: Any, brokers: list[int]) -> None:
        """Replicas of the given dead brokers -> OfflineReplica (when the table allows), each out of the ISR."""
        for i in brokers:
            m = z3.And(g, z3.Not(self.v.alive[i]), self.enc.replica_allows(self.v.replica_state[i], R.OFFLINE))
            self.set_rs(m, i, R.OFFLINE)
            self.add_stop(m, i)
            self.remove_from_isr(m, i)
        self.flush()

    def elect_controller(self, g: Any) -> None:
        """The lowest live broker wins /controller with the next epoch, then onControllerFailover."""
        alive = self.v.alive
        nobody = z3.And(g, z3.Not(z3.Or(alive)))
        self.put(nobody, "controller", self.enc.num(NONE))
        self.put(nobody, "partition_state", self.enc.num(PARTITION_CODES[P.NON_EXISTENT]))
        for i in range(self.enc.n):
            self.put(nobody, "replica_state", self.enc.num(REPLICA_CODES[R.NON_EXISTENT]), i)
        g = z3.And(g, z3.Or(alive))
        winner: Any = self.enc.num(NONE)
        for i in reversed(range(self.enc.n)):
            winner = z3.If(alive[i], self.enc.num(self.enc.ids[i]), winner)
        self.put(g, "controller", winner)
        self.put(g, "controller_epoch", self.v.controller_epoch + 1)
        # Replica state machine start-up: live replicas Online, dead ones (KAFKA-8152) through Offline.
        deletion = self.enc.rules.has_deletion_states()
        first_offline = R.DELETION_INELIGIBLE if deletion else R.OFFLINE
        for i in range(self.enc.n):
            code = z3.If(alive[i], self.enc.num(REPLICA_CODES[R.ONLINE]), self.enc.num(REPLICA_CODES[first_offline]))
            if i not in self.enc.ar:
                code = self.enc.num(REPLICA_CODES[R.NON_EXISTENT])  # the context was reset; no replica here
            self.put(g, "replica_state", code, i)  # initialisation, not a logged move
        for i in self.enc.ar:
            m = z3.And(g, alive[i], self.enc.replica_allows(self.v.replica_state[i], R.ONLINE))
            self.set_rs(m, i, R.ONLINE)
            self.add_lai(m, [i])
        self.flush()
        if deletion:
            self.replicas_offline(g, list(self.enc.ar))
        # Partition state machine start-up: Online with a live leader, else Offline; then elections.
        leader = self.v.leader
        up = z3.And(leader != NONE, self.v.alive_id(leader))
        self.put(g, "partition_state",
                 z3.If(up, self.enc.num(PARTITION_CODES[P.ONLINE]), self.enc.num(PARTITION_CODES[P.OFFLINE])))
        self.online_partition_change(g)
        self.add_um(g, list(range(self.enc.n)))
        self.flush()

    def broker_fail(self, g: Any, i: int) -> None:
        """The broker's session expires: failover if it was the controller, else onBrokerFailure."""
        me = self.enc.ids[i]
        self.put(g, "alive", z3.BoolVal(False), i)
        was_controller = z3.And(g, self.v.controller == me)
        self.put(was_controller, "controller", self.enc.num(NONE))
        self.elect_controller(was_controller)
        g = z3.And(g, z3.Not(was_controller), self.has_controller())
        leaderless = z3.And(g, self.v.leader == me)
        self.set_ps(z3.And(leaderless, self.enc.partition_allows(self.v.partition_state, P.OFFLINE)), P.OFFLINE)
        self.online_partition_change(g)
        if i in self.enc.ar:
            self.replicas_offline(g, [i])
        self.add_um(z3.And(g, z3.Not(leaderless)), list(range(self.enc.n)))
        self.flush()

    def broker_start(self, g: Any, i: int) -> None:
        """The broker registers again (its in-memory leadership lost): onBrokerStartup, or it becomes controller."""
        self.put(g, "alive", z3.BoolVal(True), i)
        self.put(g, "incarnation", self.v.incarnation[i] + 1, i)
        self.put(g, "replica_leader", self.enc.num(NONE), i)
        self.put(g, "replica_leader_epoch", self.enc.num(NONE), i)
        had_controller = self.has_controller()
        self.elect_controller(z3.And(g, z3.Not(had_controller)))
        g = z3.And(g, had_controller)
        self.add_um(g, [i])
        self.flush()
        if i in self.enc.ar:
            was_new = self.v.replica_state[i] == REPLICA_CODES[R.NEW]
            m = z3.And(g, self.enc.replica_allows(self.v.replica_state[i], R.ONLINE))
            self.set_rs(m, i, R.ONLINE)
            self.add_lai(z3.And(m, z3.Not(was_new)), [i])
            self.flush()
        self.online_partition_change(g)

    def preferred_election(self, g: Any) -> None:
        """Preferred replica election: skipped when the first AR replica leads; it must be live and in the ISR."""
        first = self.enc.ar[0]
        g = z3.And(g, self.has_controller(), self.v.leader != self.enc.ids[first])
        m = z3.And(g, self.enc.partition_allows(self.v.partition_state, P.ONLINE))
        w = z3.And(m, self.v.alive[first], self.in_isr(first))
        self.write_lai(w, self.enc.num(self.enc.ids[first]), self.v.isr)
        self.add_lai(w, list(self.enc.ar))
        self.set_ps(w, P.ONLINE)
        self.flush()
