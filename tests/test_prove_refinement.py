"""Every step of the reference controller is a short run of the symbolic relation (explicit within symbolic).

Breadth-first over the reference controller (three brokers, one partition, rules kafka, three ops deep), each
step's ZooKeeper/controller view of the partition (controller epoch and id, live brokers, partition and replica
states, leader, leader epoch, ISR, AR, reassignment) must be reachable from the view before it in at most
SYMBOLIC_STEPS steps of the Z3 relation: a reference op is composite (creation moves every replica and elects).
The encoding starts leader epochs one higher (its first election bumps from 0), hence the offset.
"""

from __future__ import annotations

import z3
from kcm.checkers.prove.encoding import NONE, PARTITION_CODES, REPLICA_CODES, Encoding, State
from kcm.model import actions as A
from kcm.model.cluster import Cluster, ClusterConfig
from kcm.model.errors import KcmError
from kcm.model.fmap import get
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.tables import rule_set
from kcm.reference import api

N = 3
TP = ("t", 0)
SYMBOLIC_STEPS = 7
CONFIG = ClusterConfig(brokers=tuple(range(N)), rules="kafka")
OPS = (
    A.CreateTopic("t", ((0, (0, 1)),)),
    *(A.BrokerFail(b) for b in range(N)),
    *(A.BrokerStart(b) for b in range(N)),
    *(A.ControlledShutdown(b) for b in range(N)),
    A.ControllerResign(),
    A.PreferredElection(),
    A.Reassign(TP, (1, 2)),
)


def _view(c: Cluster) -> dict:
    lai, r = get(c.zk.partitions, TP), get(c.ctx.reassignments, TP)
    return {
        "ce": c.zk.controller_epoch,
        "ctl": c.zk.controller,
        "alive": tuple(c.zk.brokers),
        "ps": get(c.ctx.partition_states, TP, P.NON_EXISTENT),
        "rs": tuple(get(c.ctx.replica_states, (*TP, b), R.NON_EXISTENT) for b in range(N)),
        "leader": lai.leader if lai else NONE,
        "le": lai.leader_epoch if lai else None,
        "isr": tuple(lai.isr) if lai else (),
        "ar": tuple(get(c.zk.assignments, TP, ())),
        "oar": tuple(r.original) if r else (),
        "rar": tuple(r.target) if r else (),
    }


def _bits(xs: tuple[int, ...]) -> int:
    return sum(1 << b for b in xs)


def _matches(s: State, v: dict) -> z3.BoolRef:
    parts = [
        s.controller_epoch == v["ce"],
        s.controller == v["ctl"],
        *[s.alive[b] == (b in v["alive"]) for b in range(N)],
        s.partition_state == PARTITION_CODES[v["ps"]],
        *[s.replica_state[b] == REPLICA_CODES[v["rs"][b]] for b in range(N)],
        s.leader == v["leader"],
        s.isr == _bits(v["isr"]),
        s.ar == _bits(v["ar"]),
        s.reassigning == bool(v["rar"]),
        s.original_replicas == _bits(v["oar"]),
        s.target_replicas == _bits(v["rar"]),
    ]
    if v["le"] is not None:
        parts.append(s.leader_epoch == v["le"] + 1)
    return z3.And(parts)


def _reference_steps():
    state, _ = api.start(CONFIG)
    frontier, seen = [state], {state}
    for _ in range(3):
        following = []
        for c in frontier:
            for op in OPS:
                try:
                    d, _ = api.step(CONFIG, c, op)
                except KcmError:
                    continue
                yield op, c, d
                if d not in seen:
                    seen.add(d)
                    following.append(d)
        frontier = following


def test_every_reference_step_is_a_short_symbolic_run() -> None:
    enc = Encoding(rule_set("kafka"), N)
    states = [enc.state(str(i)) for i in range(SYMBOLIC_STEPS + 1)]
    steps = [enc.next(states[i], states[i + 1]) for i in range(SYMBOLIC_STEPS)]
    solver = z3.Solver()
    missing, checked = [], 0
    for op, before, after in _reference_steps():
        v0, v1 = _view(before), _view(after)
        if v0 == v1 or (isinstance(op, A.Reassign) and v0["rar"]):
            continue  # unchanged view, or a replacement (not followed here)
        checked += 1
        for k in range(SYMBOLIC_STEPS + 1):
            solver.push()
            solver.add(_matches(states[0], v0), *steps[:k], _matches(states[k], v1))
            found = solver.check() == z3.sat
            solver.pop()
            if found:
                break
        else:
            missing.append((op, v0, v1))
    assert checked > 100
    assert missing == []
