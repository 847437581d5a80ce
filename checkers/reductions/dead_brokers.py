"""Dead-broker reduction: a broker down for good is told apart only by what outlives its process.

A broker is *down for good* when it is not live and no step can start it again. Only `broker_start` makes a broker
live (a fast bounce and a session loss act on live brokers and leave them live; a controlled shutdown leaves the
broker live until it fails), and the explorer offers it only with the `broker_failure` family on, while the
broker's restarts stay below `max_restarts` (`BoundedSystem.actions`). Kafka's controller calls these brokers dead
(`onBrokerFailure(deadBrokers)`).

`DeadBrokersModel` is the explored model with one change: a state's fingerprint is that of its *forgotten form*
(`forget`), in which every broker down for good has

- each of its replicas' in-memory fields (`FORGOTTEN`: the leader it follows, its leader epoch, ISR, zkVersion,
  assignment, followers' LEOs and pending truncation) set to fixed values; its log and checkpointed high watermark
  stay (they are on disk, and `LogsAgreeBelowHw` compares every replica's);
- its accepted controller epoch set to 0 when it is not ahead of /controller_epoch (`NoBrokerAheadOfZk` reads every
  broker's; /controller_epoch only grows, so an epoch that is not ahead never becomes so).

So the engines keep one state per class of states that differ only there. They store the state actually reached
and apply actions to it; only deduplication uses the forgotten form. The claim, argued in docs/exploration.md
("Dead-broker reduction"), is that two states with the same forgotten form offer the same actions, in the same
order, their successors by each action again have the same forgotten form, and every property judges them, and
each of their steps, alike: a bisimulation that keeps every verdict. The reduced search then reaches every
violation and goal at the same depth as the full one, so its counterexamples are as short. `bisimulation_failures`
checks the claim on concrete states.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcm.checkers.explore.verdicts import state_checks, step_checks
from kcm.checkers.reductions.reduced_model import ReducedModel
from kcm.model.cluster import BrokerState, Cluster, ReplicaData
from kcm.model.fmap import EMPTY

# The fields of a replica that live in its broker's memory, and the values they take in the forgotten form.
FORGOTTEN = {"leader": -1, "leader_epoch": -1, "isr": (), "zk_version": -1, "replicas": (), "remote_leo": EMPTY,
             "truncating": False}
if ReplicaData._fields[:2] != ("log", "hw") or set(ReplicaData._fields[2:]) != set(FORGOTTEN):
    raise ImportError("kcm.checkers.reductions.dead_brokers: ReplicaData's fields changed; decide what a broker "
                      "down for good forgets of the new ones")
_TAIL = tuple(ReplicaData((), 0, **FORGOTTEN))[2:]  # a forgotten replica is (log, hw, *_TAIL)
_BROKERS, _REPLICAS = Cluster._fields.index("brokers"), Cluster._fields.index("replicas")
_EPOCH = BrokerState._fields.index("controller_epoch")  # the accepted controller epoch, forgotten when not ahead


def why_unsound(model: Any, user_properties: bool = False) -> str | None:
    """Why the dead-broker reduction cannot be argued for (or would change nothing in) this bounded model."""
    if user_properties:
        return "a --property predicate may read a down broker's replicas"
    if "broker_failure" not in model.families:
        return "no broker goes down for good (the broker_failure family is off)"
    if model.bounds["max_failures"] < 1:
        return "no broker goes down for good (max_failures is 0)"
    return None


class DeadBrokersModel(ReducedModel):
    """A bounded model (or a reduced one) whose fingerprint forgets what brokers down for good kept in memory."""

    def __init__(self, inner: Any, full: Any) -> None:
        super().__init__(inner)
        self.restarts = full.bounds["max_restarts"]  # a broker with this many restarts is never started again
        self._last: tuple[Any, frozenset[int]] = ((), frozenset())  # the last brokers map looked at, its dead
        self._brokers: tuple[Any, int, Any] = (None, -1, None)  # the last brokers map forgotten, the epoch, the form
        self._replicas: tuple[Any, frozenset[int], Any] = (None, frozenset(), None)  # the same for the replicas

    def down_for_good(self, state: Cluster) -> frozenset[int]:
        """The brokers of `state` that are not live and have no restart left."""
        brokers = state.brokers
        last, dead = self._last
        if brokers is last:  # a step that leaves every broker as it was hands back the very same map
            return dead
        limit = self.restarts
        dead = frozenset([b for b, s in brokers if not s.alive and s.incarnation >= limit])
        self._last = (brokers, dead)
        return dead

    def forget(self, state: Cluster) -> Cluster:
        """The state with what its brokers down for good kept in memory set to fixed values (module docstring)."""
        dead = self.down_for_good(state)
        if not dead:
            return state
        # Each part's forgotten form is kept for the next call: the successors of one state mostly share its parts.
        brokers, replicas, epoch = state.brokers, state.replicas, state.zk.controller_epoch
        was = self._brokers
        if was[0] is brokers and was[1] == epoch:
            new_brokers = was[2]
        else:
            new_brokers = tuple([(b, tuple.__new__(BrokerState, (*s[:_EPOCH], 0, *s[_EPOCH + 1:]))
                                  if b in dead and 0 < s[_EPOCH] <= epoch else s) for b, s in brokers])
            self._brokers = (brokers, epoch, new_brokers)
        was = self._replicas
        if was[0] is replicas and was[1] == dead:
            new_replicas = was[2]
        else:
            # tuple.__new__: the record without _replace's keyword machinery (this runs for most successors)
            new_replicas = tuple([(k, tuple.__new__(ReplicaData, (d[0], d[1], *_TAIL)) if k[2] in dead else d)
                                  for k, d in replicas])
            self._replicas = (replicas, dead, new_replicas)
        parts = list(state)
        parts[_BROKERS] = new_brokers
        parts[_REPLICAS] = new_replicas
        return tuple.__new__(Cluster, parts)

    def fingerprint(self, state: Any) -> int:
        """The inner model's fingerprint of the forgotten form: one fingerprint per class."""
        return self.base.fingerprint(self.forget(state))


def bisimulation_failures(model: Any, states: Iterable[Any]) -> list[str]:
    """Where a state and its forgotten form are told apart (empty: the claim holds on `states`).

    For each state with a broker down for good: the same actions offered in the same order; for each, both refused
    or both taken to successors with one forgotten form; the same state verdicts, and the same step verdicts on
    each pair of steps.
    """
    reduced = DeadBrokersModel(model, model)
    props = model.properties()
    out: list[str] = []
    for s in states:
        f = reduced.forget(s)
        if f is s:
            continue
        offered = model.actions(s)
        if offered != model.actions(f):
            out.append(f"actions differ on {s}")
            continue
        if state_checks(model, s, props) != state_checks(model, f, props):
            out.append(f"state verdicts differ on {s}")
        for action in offered:
            one, other = model.successor(s, action), model.successor(f, action)
            if (one is None) != (other is None):
                out.append(f"{action!r} is taken from one and not the other, on {s}")
                continue
            if one is None:
                continue
            if reduced.forget(one[0]) != reduced.forget(other[0]):
                out.append(f"{action!r} leads to different classes, from {s}")
            if step_checks(model, s, action, *one, props) != step_checks(model, f, action, *other, props):
                out.append(f"step verdicts differ on {action!r} from {s}")
    return out


__all__ = ["FORGOTTEN", "DeadBrokersModel", "bisimulation_failures", "why_unsound"]
