"""The controller's transition relation over one symbolic partition, as Z3 constraints.

A state is the shared symbolic view (vocabulary.Sym) of one partition on a cluster of N brokers: the controller
epoch in ZooKeeper and the controller's id, each broker's liveness, the controller epoch it last accepted and
the leader its replica follows (with that leader epoch), the partition state, each replica's state, the
LeaderAndIsr (leader, leader epoch, ISR) and the AR, the reassignment (flag, OAR, RAR) and a ghost array
`elected[leader epoch] -> leader` recording every leader the controller ever wrote, which is what LeaderAndIsr
requests still in flight may carry.

Next is a disjunction of named actions mirroring the reference controller's operations. The partition and
replica moves are generated from the rule set's tables (model/tables.py), never restated: each action that
changes a state guards itself with the table's formula for that move. Selectors are over-approximated as
"any eligible replica" (Kafka picks the first eligible one in AR order), which keeps every safety proof sound.

Two seeded-bug switches make the matching proofs fail: `bump_epoch_on_election=False` (an election reuses
the current leader epoch) and `brokers_check_controller_epoch=False` (brokers accept LeaderAndIsr from a
controller epoch older than the one they have seen).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import z3
from kcm.checkers.prove.vocabulary import (
    INDUCTION_FIELDS,
    NONE,
    PARTITION_CODES,
    REPLICA_CODES,
    Step,
    Sym,
    moves_between,
    partition_allows,
    replica_allows,
)
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import RuleSet

State = Sym  # the induction's states are the shared view, brokers 0..N-1 at positions 0..N-1
__all__ = ["NONE", "PARTITION_CODES", "REPLICA_CODES", "Action", "Encoding", "State"]


class Action(NamedTuple):
    """One named disjunct of Next: the constraint relating a state to its successor, and its parameters."""

    name: str
    formula: Any
    params: tuple[Any, ...] = ()


class Encoding:
    """The symbolic controller for one rule set and N brokers, with the seeded-bug switches as parameters."""

    def __init__(
        self,
        rules: RuleSet,
        brokers: int,
        *,
        bump_epoch_on_election: bool = True,
        brokers_check_controller_epoch: bool = True,
        unclean_leader_election: bool = False,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, not {brokers}")
        self.rules = rules
        self.n = brokers
        self.bump_epoch_on_election = bump_epoch_on_election
        self.brokers_check_controller_epoch = brokers_check_controller_epoch
        self.unclean_leader_election = unclean_leader_election
        self._fresh = 0

    # ---- symbolic state ---------------------------------------------------------------------------------

    def state(self, tag: str) -> State:
        """Fresh Z3 constants for a whole state, their names suffixed with tag."""
        n, bv = self.n, z3.BitVecSort(self.n)

        def per(name: str, make: Any) -> tuple[Any, ...]:
            return tuple(make(f"{name}{b}_{tag}") for b in range(n))

        return Sym(
            ids=tuple(range(n)),
            controller_epoch=z3.Int(f"ce_{tag}"),
            controller=z3.Int(f"ctl_{tag}"),
            alive=per("alive", z3.Bool),
            broker_controller_epoch=per("seen", z3.Int),
            replica_leader=per("rl", z3.Int),
            replica_leader_epoch=per("ble", z3.Int),
            partition_state=z3.Int(f"ps_{tag}"),
            replica_state=per("rs", z3.Int),
            leader=z3.Int(f"leader_{tag}"),
            leader_epoch=z3.Int(f"le_{tag}"),
            isr=z3.Const(f"isr_{tag}", bv),
            ar=z3.Const(f"ar_{tag}", bv),
            reassigning=z3.Bool(f"reas_{tag}"),
            original_replicas=z3.Const(f"oar_{tag}", bv),
            target_replicas=z3.Const(f"rar_{tag}", bv),
            elected=z3.Array(f"elected_{tag}", z3.IntSort(), z3.IntSort()),
            written_by=z3.Array(f"written_by_{tag}", z3.IntSort(), z3.IntSort()),
        )

    def step(self, s: State, t: State) -> Step:
        """The record of a step from s to t the step formulas read: its state-machine moves, seen as changes."""
        return moves_between(self.rules, s, t)

    def _param(self, name: str, sort: Any) -> Any:
        self._fresh += 1
        return z3.Const(f"{name}!{self._fresh}", sort)

    # ---- the tables, generated from the rule set -------------------------------------------------------

    def partition_moves(self) -> list[tuple[str, str]]:
        """Every (from, to) partition move the rule set's table allows."""
        return [(f, t) for t, prev in self.rules.partition.items() for f in sorted(prev)]

    def replica_moves(self) -> list[tuple[str, str]]:
        """Every (from, to) replica move the rule set's table allows."""
        return [(f, t) for t, prev in self.rules.replica.items() for f in sorted(prev)]

    def partition_allows(self, from_code: Any, to_code: Any) -> Any:
        """The partition table as a formula over state codes."""
        return partition_allows(self.rules, from_code, to_code)

    def replica_allows(self, from_code: Any, to_code: Any) -> Any:
        """The replica table as a formula over state codes."""
        return replica_allows(self.rules, from_code, to_code)

    def can_enter_partition(self, s: State, target: str) -> Any:
        """The table allows the partition to move from its current state to target."""
        return self.partition_allows(s.partition_state, z3.IntVal(PARTITION_CODES[target]))

    def can_enter_replica(self, s: State, b: int, target: str) -> Any:
        """The table allows replica b to move from its current state to target."""
        return self.replica_allows(s.replica_state[b], z3.IntVal(REPLICA_CODES[target]))

    def well_typed(self, s: State) -> Any:
        """Every code names a state the rule set knows, ids are brokers or -1, epochs are non-negative."""
        ps = [PARTITION_CODES[x] for x in self.rules.partition_states()]
        rs = [REPLICA_CODES[x] for x in self.rules.replica_states()]
        ids = [NONE, *range(self.n)]
        parts = [
            z3.Or([s.partition_state == c for c in ps]),
            z3.Or([s.leader == i for i in ids]),
            z3.Or([s.controller == i for i in ids]),
            s.controller_epoch >= 0,
            s.leader_epoch >= 0,
        ]
        for b in range(self.n):
            parts += [
                z3.Or([s.replica_state[b] == c for c in rs]),
                s.broker_controller_epoch[b] >= 0,
                s.replica_leader_epoch[b] >= NONE,
            ]
        return z3.And(parts)

    # ---- Init and Next ----------------------------------------------------------------------------------

    def init(self, s: State) -> Any:
        """A fresh cluster: every broker up, no controller yet, the partition not created, nothing elected."""
        parts = [
            s.controller_epoch == 0,
            s.controller == NONE,
            s.partition_state == PARTITION_CODES[P.NON_EXISTENT],
            s.leader == NONE,
            s.leader_epoch == 0,
            s.isr == s.empty(),
            s.ar == s.empty(),
            z3.Not(s.reassigning),
            s.original_replicas == s.empty(),
            s.target_replicas == s.empty(),
            s.elected == z3.K(z3.IntSort(), z3.IntVal(NONE)),
            s.written_by == z3.K(z3.IntSort(), z3.IntVal(0)),
        ]
        for b in range(self.n):
            parts += [
                s.alive[b],
                s.broker_controller_epoch[b] == 0,
                s.replica_leader[b] == NONE,
                s.replica_leader_epoch[b] == NONE,
                s.replica_state[b] == REPLICA_CODES[R.NON_EXISTENT],
            ]
        return z3.And(parts)

    def frame(self, s: State, t: State, **changes: Any) -> Any:
        """t equals s except for the named fields, which take the given values."""
        parts = []
        for field in INDUCTION_FIELDS:
            old, new = getattr(s, field), getattr(t, field)
            val = changes.get(field, old)
            if isinstance(old, tuple):
                parts += [n_ == v for n_, v in zip(new, val, strict=True)]
            else:
                parts.append(new == val)
        return z3.And(parts)

    def _set(self, tup: tuple[Any, ...], b: int, value: Any) -> tuple[Any, ...]:
        return tuple(value if i == b else x for i, x in enumerate(tup))

    def _controller_up(self, s: State) -> Any:
        return z3.And(s.controller != NONE, s.alive_id(s.controller))

    def _next_epoch(self, s: State) -> Any:
        # The seeded bug "no leader-epoch bump on election" reuses the epoch; every other bump stays.
        return s.leader_epoch + 1 if self.bump_epoch_on_election else s.leader_epoch

    def _write_leader(self, s: State, t: State, leader: Any, isr: Any, epoch: Any, **more: Any) -> Any:
        """The controller writes a new LeaderAndIsr to ZooKeeper (and records it in the ghost)."""
        return self.frame(
            s,
            t,
            leader=leader,
            isr=isr,
            leader_epoch=epoch,
            elected=z3.Store(s.elected, epoch, leader),
            written_by=z3.Store(s.written_by, epoch, s.controller_epoch),
            **more,
        )

    def actions(self, s: State, t: State) -> list[Action]:
        """Every named disjunct of Next from s to t."""
        acts: list[Action] = []
        acts += self._controller_actions(s, t)
        acts += self._broker_actions(s, t)
        acts += self._election_actions(s, t)
        acts += self._isr_actions(s, t)
        acts += self._reassignment_actions(s, t)
        acts += self._table_actions(s, t)
        return acts

    def next(self, s: State, t: State) -> Any:
        """The whole transition relation."""
        return z3.Or([a.formula for a in self.actions(s, t)])

    def _controller_actions(self, s: State, t: State) -> list[Action]:
        acts = []
        for b in range(self.n):
            # A live broker wins /controller when there is no live controller; /controller_epoch goes up by one.
            acts.append(
                Action(
                    f"ControllerElection(broker={b})",
                    z3.And(
                        s.alive[b],
                        z3.Not(self._controller_up(s)),
                        self.frame(s, t, controller=b, controller_epoch=s.controller_epoch + 1),
                    ),
                )
            )
        acts.append(
            Action("ControllerResigns", z3.And(s.controller != NONE, self.frame(s, t, controller=z3.IntVal(NONE))))
        )
        return acts

    def _broker_actions(self, s: State, t: State) -> list[Action]:
        acts = []
        for b in range(self.n):
            acts.append(
                Action(
                    f"BrokerFails(broker={b})",
                    z3.And(
                        s.alive[b],
                        self.frame(
                            s,
                            t,
                            alive=self._set(s.alive, b, z3.BoolVal(False)),
                            replica_leader=self._set(s.replica_leader, b, z3.IntVal(NONE)),
                        ),
                    ),
                )
            )
            # A restarted broker has lost its in-memory controller epoch and leader epochs.
            acts.append(
                Action(
                    f"BrokerStarts(broker={b})",
                    z3.And(
                        z3.Not(s.alive[b]),
                        self.frame(
                            s,
                            t,
                            alive=self._set(s.alive, b, z3.BoolVal(True)),
                            broker_controller_epoch=self._set(s.broker_controller_epoch, b, z3.IntVal(0)),
                            replica_leader=self._set(s.replica_leader, b, z3.IntVal(NONE)),
                            replica_leader_epoch=self._set(s.replica_leader_epoch, b, z3.IntVal(NONE)),
                        ),
                    ),
                )
            )
            # Any LeaderAndIsr ever written may still be in flight, sent by the controller that wrote it or a later
            # one (a zombie controller resends what it knew), so from any controller epoch since the write.
            epoch, sender = self._param("msg_leader_epoch", z3.IntSort()), self._param("msg_ctl_epoch", z3.IntSort())
            accepts = [epoch > s.replica_leader_epoch[b]]
            if self.brokers_check_controller_epoch:
                accepts.append(sender >= s.broker_controller_epoch[b])
            acts.append(
                Action(
                    f"BrokerAcceptsLeaderAndIsr(broker={b})",
                    z3.And(
                        s.alive[b],
                        epoch >= 0,
                        epoch <= s.leader_epoch,
                        sender >= 0,
                        sender >= s.written_by[epoch],
                        sender <= s.controller_epoch,
                        *accepts,
                        self.frame(
                            s,
                            t,
                            broker_controller_epoch=self._set(s.broker_controller_epoch, b, sender),
                            replica_leader=self._set(s.replica_leader, b, s.elected[epoch]),
                            replica_leader_epoch=self._set(s.replica_leader_epoch, b, epoch),
                        ),
                    ),
                    (epoch, sender),
                )
            )
            # The controller reacts to a dead broker: OfflineReplica, out of the ISR, NoLeader if it led.
            was_leader = s.leader == b
            only_one = s.isr == s.bit(b)
            new_isr = z3.If(z3.And(was_leader, only_one), s.isr, s.isr & ~s.bit(b))
            in_isr = s.has(s.isr, b)
            new_leader = z3.If(was_leader, z3.IntVal(NONE), s.leader)
            new_ps = z3.If(was_leader, z3.IntVal(PARTITION_CODES[P.OFFLINE]), s.partition_state)
            offline = REPLICA_CODES[R.OFFLINE]
            acts.append(
                Action(
                    f"OfflineReplica(broker={b})",
                    z3.And(
                        self._controller_up(s),
                        z3.Not(s.alive[b]),
                        s.has(s.ar, b),
                        self.can_enter_replica(s, b, R.OFFLINE),
                        z3.Implies(
                            was_leader,
                            z3.Or(
                                self.can_enter_partition(s, P.OFFLINE),
                                s.partition_state == PARTITION_CODES[P.OFFLINE],
                            ),
                        ),
                        z3.If(
                            in_isr,
                            self._write_leader(
                                s,
                                t,
                                new_leader,
                                new_isr,
                                s.leader_epoch + 1,
                                partition_state=new_ps,
                                replica_state=self._set(s.replica_state, b, z3.IntVal(offline)),
                            ),
                            self.frame(
                                s,
                                t,
                                leader=new_leader,
                                partition_state=new_ps,
                                replica_state=self._set(s.replica_state, b, z3.IntVal(offline)),
                            ),
                        ),
                    ),
                )
            )
        return acts

    def _election_actions(self, s: State, t: State) -> list[Action]:
        acts = []
        alive = s.alive_set()
        online = z3.IntVal(PARTITION_CODES[P.ONLINE])
        leaderless = z3.Or(s.leader == NONE, z3.Not(s.alive_id(s.leader)))
        is_new = s.partition_state == PARTITION_CODES[P.NEW]
        for b in range(self.n):
            common = [self._controller_up(s), s.alive[b], self.can_enter_partition(s, P.ONLINE)]
            clean = s.has(s.isr, b)
            # Unclean election only when no live ISR replica is left (Kafka tries the ISR first).
            none_clean = s.ar & s.isr & alive == s.empty()
            eligible = z3.Or(clean, is_new, z3.And(self.unclean_leader_election, none_clean))
            offline_isr = z3.If(is_new, s.ar & alive, z3.If(clean, s.isr & alive, s.bit(b)))
            selectors = {
                "offline": (z3.And(leaderless, s.has(s.ar, b), eligible), offline_isr),
                "reassign": (z3.And(s.reassigning, s.has(s.target_replicas, b), clean), s.isr),
                "preferred": (z3.And(s.leader != NONE, s.leader != b, s.has(s.ar, b), clean), s.isr),
            }
            for sel, (guard, isr) in selectors.items():
                acts.append(
                    Action(
                        f"ElectLeader(selector={sel}, leader={b})",
                        z3.And(
                            *common,
                            guard,
                            self._write_leader(s, t, z3.IntVal(b), isr, self._next_epoch(s), partition_state=online),
                        ),
                    )
                )
            for down in range(self.n):
                if down == b:
                    continue
                acts.append(
                    Action(
                        f"ElectLeader(selector=controlled_shutdown, shutting_down={down}, leader={b})",
                        z3.And(
                            *common,
                            s.leader == down,
                            clean,
                            self._write_leader(
                                s, t, z3.IntVal(b), s.isr & ~s.bit(down), self._next_epoch(s), partition_state=online
                            ),
                        ),
                    )
                )
        return acts

    def _isr_actions(self, s: State, t: State) -> list[Action]:
        acts = []
        leader_up = z3.And(s.leader != NONE, s.alive_id(s.leader))
        for b in range(self.n):
            # The leader shrinks or expands the ISR (AlterPartition): zkVersion moves, the leader epoch does not.
            acts.append(
                Action(
                    f"IsrShrink(replica={b})",
                    z3.And(leader_up, s.leader != b, s.has(s.isr, b), self.frame(s, t, isr=s.isr & ~s.bit(b))),
                )
            )
            acts.append(
                Action(
                    f"IsrExpand(replica={b})",
                    z3.And(
                        leader_up,
                        s.alive[b],
                        s.has(s.ar, b),
                        z3.Not(s.has(s.isr, b)),
                        self.frame(s, t, isr=s.isr | s.bit(b)),
                    ),
                )
            )
        return acts

    def _reassignment_actions(self, s: State, t: State) -> list[Action]:
        target = self._param("target", z3.BitVecSort(self.n))
        new_rs = []
        guards = []
        for b in range(self.n):
            adding = z3.And(s.has(target, b), z3.Not(s.has(s.ar, b)))
            guards.append(z3.Implies(adding, self.can_enter_replica(s, b, R.NEW)))
            new_rs.append(z3.If(adding, z3.IntVal(REPLICA_CODES[R.NEW]), s.replica_state[b]))
        start = Action(
            "ReassignmentStart",
            z3.And(
                self._controller_up(s),
                z3.Not(s.reassigning),
                s.partition_state != PARTITION_CODES[P.NON_EXISTENT],
                target != s.empty(),
                *guards,
                # Kafka bumps the leader epoch when a reassignment starts (the new AR reaches every replica).
                self._write_leader(
                    s,
                    t,
                    s.leader,
                    s.isr,
                    s.leader_epoch + 1,
                    reassigning=z3.BoolVal(True),
                    original_replicas=s.ar,
                    target_replicas=target,
                    ar=s.ar | target,
                    replica_state=tuple(new_rs),
                ),
            ),
            (target,),
        )
        # Kafka's reassignTo replacing the one in flight: AR becomes the new target plus OAR; the replicas only in
        # the abandoned target go offline (out of the ISR, never emptying it; a leader among them leaves no leader)
        # and leave AR, the new ones start. Back to the original replicas, it is no longer a reassignment.
        new_target = self._param("new_target", z3.BitVecSort(self.n))
        kept = s.original_replicas | new_target
        abandoned = s.ar & ~kept
        replace_rs, replace_guards = [], []
        for b in range(self.n):
            dropped = z3.And(s.has(s.ar, b), z3.Not(s.has(kept, b)))
            adding = z3.And(s.has(new_target, b), z3.Not(s.has(s.ar, b)))
            replace_guards.append(z3.Implies(dropped, self.can_enter_replica(s, b, R.OFFLINE)))
            replace_guards.append(z3.Implies(adding, self.can_enter_replica(s, b, R.NEW)))
            replace_rs.append(z3.If(dropped, z3.IntVal(REPLICA_CODES[R.OFFLINE]),
                                    z3.If(adding, z3.IntVal(REPLICA_CODES[R.NEW]), s.replica_state[b])))
        rest = s.isr & ~abandoned
        # The replicas leave the ISR one by one and the last member stays: one of them, whichever went last.
        last = self._param("last_isr_member", z3.BitVecSort(self.n))
        last_ok = z3.Implies(rest == s.empty(), z3.And(last != s.empty(), last & (last - 1) == s.empty(),
                                                           s.subset(last, s.isr)))
        cancelled = new_target == s.original_replicas
        replace = Action(
            "ReassignmentReplace",
            z3.And(
                self._controller_up(s),
                s.reassigning,
                new_target != s.empty(),
                new_target != s.target_replicas,
                *replace_guards,
                last_ok,
                self._write_leader(
                    s,
                    t,
                    z3.If(s.has_id(abandoned, s.leader), z3.IntVal(NONE), s.leader),
                    z3.If(rest == s.empty(), last, rest),
                    s.leader_epoch + 1,
                    reassigning=z3.Not(cancelled),
                    original_replicas=z3.If(cancelled, s.empty(), s.original_replicas),
                    target_replicas=z3.If(cancelled, s.empty(), new_target),
                    ar=kept,
                    replica_state=tuple(replace_rs),
                ),
            ),
            (new_target, last),
        )
        # Last step: RAR has joined the ISR and holds the leader; AR becomes RAR, the leftovers go offline.
        removed_rs, removed_guards = [], []
        for b in range(self.n):
            leaving = z3.And(s.has(s.ar, b), z3.Not(s.has(s.target_replicas, b)))
            removed_guards.append(z3.Implies(leaving, self.can_enter_replica(s, b, R.OFFLINE)))
            removed_rs.append(z3.If(leaving, z3.IntVal(REPLICA_CODES[R.OFFLINE]), s.replica_state[b]))
        complete = Action(
            "ReassignmentComplete",
            z3.And(
                self._controller_up(s),
                s.reassigning,
                s.subset(s.target_replicas, s.isr),
                s.has_id(s.target_replicas, s.leader),
                *removed_guards,
                self._write_leader(
                    s,
                    t,
                    s.leader,
                    s.isr & s.target_replicas,
                    s.leader_epoch + 1,
                    ar=s.target_replicas,
                    reassigning=z3.BoolVal(False),
                    original_replicas=s.empty(),
                    target_replicas=s.empty(),
                    replica_state=tuple(removed_rs),
                ),
            ),
        )
        return [start, replace, complete]

    def _table_actions(self, s: State, t: State) -> list[Action]:
        """Direct moves, one per table entry: topic creation and deletion, partitions and replicas offline/online."""
        acts = []
        for f, to in self.partition_moves():
            if to == P.ONLINE:
                continue  # entering OnlinePartition is always an election (above)
            guard = [self._controller_up(s), s.partition_state == PARTITION_CODES[f]]
            changes: dict[str, Any] = {"partition_state": z3.IntVal(PARTITION_CODES[to])}
            params: tuple[Any, ...] = ()
            if to == P.NEW:
                # Topic creation: a fresh non-empty AR, no leader yet.
                ar = self._param("new_ar", z3.BitVecSort(self.n))
                guard += [ar != s.empty(), s.ar == s.empty()]
                changes.update(ar=ar, isr=s.empty(), leader=z3.IntVal(NONE))
                params = (ar,)
            elif to == P.NON_EXISTENT:
                # Topic deletion: the partition znodes go; replicas are deleted by their own moves.
                guard.append(z3.Not(s.reassigning))
                changes.update(ar=s.empty(), isr=s.empty(), leader=z3.IntVal(NONE))
            acts.append(Action(f"PartitionMove({f} -> {to})", z3.And(*guard, self.frame(s, t, **changes)), params))
        for b in range(self.n):
            for f, to in self.replica_moves():
                guard = [self._controller_up(s), s.replica_state[b] == REPLICA_CODES[f]]
                if to in (R.NEW, R.ONLINE, R.OFFLINE):
                    guard.append(s.has(s.ar, b))
                else:
                    guard.append(z3.Not(s.has(s.ar, b)))  # deletion: the replica has left the AR
                rs = self._set(s.replica_state, b, z3.IntVal(REPLICA_CODES[to]))
                acts.append(
                    Action(f"ReplicaMove(replica={b}, {f} -> {to})", z3.And(*guard, self.frame(s, t, replica_state=rs)))
                )
        return acts
