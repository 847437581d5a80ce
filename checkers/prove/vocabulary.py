"""One symbolic view of a partition's state, shared by the induction (encoding.py) and BMC (bounded.py) encodings.

A `Sym` holds Z3 terms for what the controller, ZooKeeper and the brokers know about one partition, each field
named as the model names it (model/cluster.py): `controller` and `controller_epoch` are /controller and
/controller_epoch, `broker_controller_epoch[i]` is `brokers[b].controller_epoch`, `leader`, `leader_epoch` and
`isr` are the partition znode's, `replica_leader[i]` and `replica_leader_epoch[i]` are what broker b's replica
follows (`replicas[tp, b].leader` / `.leader_epoch`), `elected` is `ghost.elected`. Per-broker fields are tuples
indexed by broker position (`ids[i]` is the broker id); sets of brokers (ISR, AR, OAR, RAR) are bit-vectors over
positions. Each encoding fills the fields it keeps and leaves the others None (`INDUCTION_FIELDS`,
`BMC_FIELDS`); a field that is a constant of the encoding (the BMC's AR) holds that constant.

The property formulas (formulas.py) read nothing but a Sym, so one formula serves both encodings.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, NamedTuple

import z3
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import RuleSet

NONE = -1  # no leader / no controller, Kafka's -1
PARTITION_CODES = {s: i for i, s in enumerate(P.ALL)}
REPLICA_CODES = {s: i for i, s in enumerate(R.ALL)}


class Sym(NamedTuple):
    """One symbolic state of one partition, with the model's field names (see the module docstring)."""

    ids: tuple[int, ...]  # broker id at each position
    controller: Any  # zk.controller
    controller_epoch: Any  # zk.controller_epoch
    alive: tuple[Any, ...]  # brokers[b].alive
    broker_controller_epoch: tuple[Any, ...]  # brokers[b].controller_epoch: the newest one b accepted
    partition_state: Any  # ctx.partition_states[tp], as a code of PARTITION_CODES
    replica_state: tuple[Any, ...]  # ctx.replica_states[tp, b], as codes of REPLICA_CODES
    leader: Any  # zk.partitions[tp].leader
    leader_epoch: Any  # zk.partitions[tp].leader_epoch
    isr: Any  # zk.partitions[tp].isr, a set
    ar: Any  # zk.assignments[tp], a set
    replica_leader: tuple[Any, ...]  # replicas[tp, b].leader: the leader b's replica follows (itself: it leads)
    replica_leader_epoch: tuple[Any, ...]  # replicas[tp, b].leader_epoch
    elected: Any  # ghost.elected[tp, e]: an Array over epochs, or a tuple indexed by epoch
    reassigning: Any = None  # tp is in ctx.reassignments
    original_replicas: Any = None  # its OAR, a set
    target_replicas: Any = None  # its RAR, a set
    written_by: Any = None  # ghost of the induction: leader epoch -> controller epoch of the controller that wrote it
    incarnation: tuple[Any, ...] | None = None  # brokers[b].incarnation
    znode_controller_epoch: Any = None  # zk.partitions[tp].controller_epoch

    # ---- sets of brokers (bit-vectors over positions) ----------------------------------------------------

    def bit(self, i: int) -> Any:
        """The set holding position i."""
        return z3.BitVecVal(1 << i, len(self.ids))

    def empty(self) -> Any:
        """The empty set of brokers."""
        return z3.BitVecVal(0, len(self.ids))

    def has(self, v: Any, i: int) -> Any:
        """Position i is in the set v."""
        return z3.Extract(i, i, v) == 1

    def has_id(self, v: Any, x: Any) -> Any:
        """The (symbolic) broker id x is in the set v."""
        return z3.Or([z3.And(x == b, self.has(v, i)) for i, b in enumerate(self.ids)])

    def subset(self, a: Any, b: Any) -> Any:
        """a is a subset of b."""
        return a & ~b == 0

    def single(self, v: Any) -> Any:
        """v holds exactly one broker."""
        return z3.And(v != self.empty(), v & (v - 1) == self.empty())

    def alive_set(self) -> Any:
        """The set of live brokers."""
        empty = self.empty()
        return reduce(lambda acc, i: acc | z3.If(self.alive[i], self.bit(i), empty), range(len(self.ids)), empty)

    def alive_id(self, x: Any) -> Any:
        """The broker with (symbolic) id x is alive."""
        return z3.Or([z3.And(x == b, self.alive[i]) for i, b in enumerate(self.ids)])

    # ---- derived reads -----------------------------------------------------------------------------------

    def leads(self, i: int) -> Any:
        """The broker at position i is alive and its replica acts as the leader."""
        return z3.And(self.alive[i], self.replica_leader[i] == self.ids[i])

    def elected_at(self, epoch: Any) -> Any:
        """ghost.elected at a (symbolic) leader epoch; NONE outside a tuple ghost's epochs."""
        if not isinstance(self.elected, tuple):
            return self.elected[epoch]
        out: Any = NONE
        for e in reversed(range(len(self.elected))):
            out = z3.If(epoch == e, self.elected[e], out)
        return out


# The fields each encoding keeps (and so frames, compares and reads back); the others stay None or constant.
INDUCTION_FIELDS = ("controller_epoch", "controller", "alive", "broker_controller_epoch", "replica_leader",
                    "replica_leader_epoch", "partition_state", "replica_state", "leader", "leader_epoch", "isr", "ar",
                    "reassigning", "original_replicas", "target_replicas", "elected", "written_by")
BMC_FIELDS = ("controller", "controller_epoch", "partition_state", "leader", "leader_epoch", "isr",
              "znode_controller_epoch", "alive", "incarnation", "broker_controller_epoch", "replica_state",
              "replica_leader", "replica_leader_epoch", "elected")


# ---- the rule set's tables ----------------------------------------------------------------------------

def _allows(table: dict[str, Any], codes: dict[str, int], from_code: Any, to: Any) -> Any:
    if isinstance(to, str):
        return z3.Or([from_code == codes[f] for f in sorted(table.get(to, ()))])
    return z3.Or([z3.And(from_code == codes[f], to == codes[t]) for t, prev in table.items() for f in sorted(prev)])


def partition_allows(rules: RuleSet, from_code: Any, to: Any) -> Any:
    """The partition table: the state coded from_code may move to `to` (a state name or a symbolic code)."""
    return _allows(rules.partition, PARTITION_CODES, from_code, to)


def replica_allows(rules: RuleSet, from_code: Any, to: Any) -> Any:
    """The replica table: the state coded from_code may move to `to` (a state name or a symbolic code)."""
    return _allows(rules.replica, REPLICA_CODES, from_code, to)


class Move(NamedTuple):
    """A state-machine move a step makes when `guard` holds: machine ("partition" or "replica"), from, to."""

    machine: str
    guard: Any
    from_code: Any
    to: Any  # a state name or a symbolic code


class Delivery(NamedTuple):
    """A LeaderAndIsr a broker applied when `applied` holds, with the sender's and the broker's controller epochs."""

    applied: Any
    sender_epoch: Any
    broker_epoch: Any  # the broker's accepted controller epoch before the request


class Step(NamedTuple):
    """What a step did besides changing the state: its logged moves and its LeaderAndIsr deliveries."""

    rules: RuleSet
    moves: tuple[Move, ...] = ()
    deliveries: tuple[Delivery, ...] = ()


def moves_between(rules: RuleSet, s: Sym, t: Sym) -> Step:
    """The step from s to t seen as its state changes: every changed partition or replica state is a move."""
    moves = [Move("partition", t.partition_state != s.partition_state, s.partition_state, t.partition_state)]
    moves += [Move("replica", b != a, a, b) for a, b in zip(s.replica_state, t.replica_state, strict=True)]
    return Step(rules, tuple(moves))
