"""Partial-order reduction by persistent sets over partitions: a wrapped model whose `actions` is an ample set.

The claim (argued in full in docs/exploration.md, "Partial-order reduction"):

- **Groups.** An action whose fields name one partition (a `tp` field: produce, replicate, ISR shrink, consume,
  reassignment) is *local* to that partition; every other action is *global*. A local step reads and writes
  only the entries of its own partition in the state's partition-keyed maps (every map of the cluster whose keys
  start with a topic and a partition number), and reads the rest of the state without writing it
  (`footprint_escape` checks the write half on every step the reduced search keeps; an escape ends the run with
  `ReductionClaimFailed`, never a silently smaller space). So local steps of different partitions commute and
  cannot enable or disable one another.
- **Ample sets.** In a state where no global action is offered, the enabled actions of the least partition that
  has any form the ample set (if two or more partitions have enabled actions); otherwise every action is
  expanded. The global actions the reduction allows (`GLOBAL_SAFE_FAMILIES`) are offered on parts no local step
  writes (broker liveness, failure budgets, controller epochs), so a local step never makes one offered: along
  any path that avoids the ample set, only other partitions' local steps run, and they are independent of it
  (persistent sets, conditions C0 and C1).
- **Visibility.** Every property the run checks must be partition-local (`@partition_local` next to its
  predicate): a state predicate holds exactly when it holds on each partition's restriction of the state, a step
  predicate judges a local step by that step's own partition. A violation or goal in a state that the reduced
  search postpones is then met, for the same partition, on a state it does keep.
- **Cycles.** A state is expanded in full unless every ample step strictly raises a measure of progress
  (`progress`): no cycle of the reduced graph can postpone a partition forever (the cycle proviso, C3).

Configs it cannot argue for are refused (`why_unsound`): asynchronous delivery (controller operations queue
requests in a shared map), zombie controllers, deletion and topic creation (global actions offered on a
topic's partitions), the preferred election of every partition (offered when a partition's leader or ISR
changes), EVENTUALLY properties (liveness reads whole runs), and any property not declared partition-local.
The reduced search can find a longer path to a violation than the full one: `kcm explore` then searches the
full space up to that violation's level, so the printed counterexample is the full search's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcm.checkers.reductions.reduced_model import ReducedModel
from kcm.model.interface import EVENTUALLY
from kcm.properties.reads import is_partition_local

# Families whose actions are all global and offered on parts that no local step writes, or all local.
GLOBAL_SAFE_FAMILIES = frozenset({"broker_failure", "controlled_shutdown", "controller_failover", "fast_bounce",
                                  "session_expiry", "reassignment", "data_plane", "acks_one", "consume"})


class ReductionClaimFailed(RuntimeError):
    """A local step wrote outside its partition: the reduction's independence claim does not hold here."""


def group_of(action: Any) -> tuple | None:
    """The partition an action is local to (its `tp` field), or None for a global action."""
    fields = getattr(type(action), "_fields", ())
    return action.tp if "tp" in fields else None


def _partition_keyed(value: Any) -> bool:
    """Whether a state field is a map keyed by partition: pairs whose keys start with (topic, partition)."""
    if not isinstance(value, tuple) or not value:
        return False
    first = value[0]
    return (isinstance(first, tuple) and len(first) == 2 and isinstance(first[0], tuple) and len(first[0]) >= 2
            and isinstance(first[0][0], str) and isinstance(first[0][1], int))


def _others(value: tuple, tp: tuple) -> tuple:
    """The entries of a partition-keyed map that belong to other partitions than tp."""
    return tuple(kv for kv in value if kv[0][:2] != tp)


def footprint_escape(before: Any, after: Any, tp: tuple) -> str | None:
    """Where a step from `before` to `after` changed something besides partition tp's entries (None: nowhere)."""
    return _escape(before, after, tp, "state")


def _escape(before: Any, after: Any, tp: tuple, path: str) -> str | None:
    if before is after or before == after:
        return None
    fields = getattr(type(before), "_fields", None)
    if fields is not None and type(after) is type(before):
        for name, b, a in zip(fields, before, after, strict=True):
            found = _escape(b, a, tp, f"{path}.{name}")
            if found is not None:
                return found
        return None
    if (_partition_keyed(before) or not before) and (_partition_keyed(after) or not after):
        if isinstance(before, tuple) and isinstance(after, tuple) and _others(before, tp) == _others(after, tp):
            return None
    return path


def restrict(state: Any, tp: tuple) -> Any:
    """The state with every partition-keyed map cut down to tp's entries (what a partition-local predicate reads)."""
    fields = getattr(type(state), "_fields", None)
    if fields is not None:
        return tuple.__new__(type(state), [restrict(v, tp) for v in state])
    if _partition_keyed(state):
        return tuple(kv for kv in state if kv[0][:2] == tp)
    return state


def progress(state: Any) -> int:
    """A measure that the reduced search's ample steps must raise: znode versions, log lengths, HWs, history."""
    total = sum(lai.zk_version for _, lai in state.zk.partitions)
    total += sum(len(d.log) + d.hw for _, d in state.replicas)
    total += sum(len(v) for _, v in state.ghost.acked) + sum(len(v) for _, v in state.ghost.consumed)
    total += sum(len(v) for _, v in state.ghost.pending) + len(state.ghost.elected)
    return total


def why_unsound(model: Any) -> str | None:
    """Why partial-order reduction cannot be argued for this bounded model (None: it can)."""
    if len(getattr(model, "tps", ())) < 2:
        return "one partition: there is no pair of partitions whose steps commute"
    if getattr(model.config, "delivery", "sync") != "sync":
        return "requests wait in a queue shared by every partition (delivery async)"
    if getattr(model.config, "zombie_controller", False):
        return "a zombie controller acts on partitions from a stale context"
    if getattr(model.config, "grain", "coarse") != "coarse":
        return "the controller's event queue is shared by every partition (grain event)"
    other = sorted(set(model.families) - GLOBAL_SAFE_FAMILIES)
    if other:
        return f"the families {', '.join(other)} offer global actions on partitions' state"
    for p in model.properties():
        if p.expectation == EVENTUALLY:
            return f"{p.name} is an EVENTUALLY property (liveness reads whole runs)"
        if not is_partition_local(p.condition, model.families):
            return f"{p.name} is not declared partition-local"
    return None


class PartialOrderModel(ReducedModel):
    """A bounded model explored through persistent sets: `actions` is the ample set of a state (module docstring)."""

    def __init__(self, base: Any) -> None:
        super().__init__(base)
        self.families = base.families
        self.bounds = base.bounds
        self.tps = getattr(base, "tps", ())
        # The successors computed to choose the last ample set, kept for the engine's successor() calls that follow.
        self._memo_state: Any = None
        self._memo: dict[Any, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "base":  # not set yet (unpickling, in a Spark executor): no base to ask
            raise AttributeError(name)
        return getattr(self.base, name)  # what a Model does not declare (topic_steps, ...) is the base model's

    def actions(self, state: Any) -> list[Any]:
        """The ample set of the state: one partition's enabled actions where that is sound, else every action."""
        offered = list(self.base.actions(state))
        groups: dict[tuple, list[Any]] = {}
        for action in offered:
            tp = group_of(action)
            if tp is None:
                return offered
            groups.setdefault(tp, []).append(action)
        if len(groups) < 2:
            return offered
        memo: dict[Any, Any] = {}
        self._memo_state, self._memo = state, memo
        here = progress(state)
        for tp in sorted(groups):
            enabled = []
            for action in groups[tp]:
                found = memo[action] = self.base.successor(state, action)
                if found is not None:
                    enabled.append(action)
            if not enabled:
                continue
            for action in enabled:
                nxt = memo[action][0]
                where = footprint_escape(state, nxt, tp)
                if where is not None:
                    raise ReductionClaimFailed(
                        f"partial-order reduction: {action!r} changed {where}, outside partition {tp}")
                if progress(nxt) <= here:
                    return offered  # the cycle proviso: this state is expanded in full
            return enabled
        return offered

    def successor(self, state: Any, action: Any) -> Any:
        """The base model's kept successor (computed once when the ample set was chosen)."""
        if state is self._memo_state and action in self._memo:
            return self._memo[action]
        return self.base.successor(state, action)


def local_predicate_failures(model: Any, states: Iterable[Any]) -> list[str]:
    """Where a property declared partition-local judges a state unlike its partitions' restrictions (empty: sound)."""
    from kcm.checkers.explore.verdicts import state_checks, step_checks, successors

    tps = sorted(getattr(model, "tps", ()))
    props = [p for p in model.properties() if is_partition_local(p.condition, model.families)]
    out: list[str] = []
    for s in states:
        bad, reached = state_checks(model, s, props)
        whole = set(bad) | set(reached)
        parts: set[str] = set()
        for tp in tps:
            bad, reached = state_checks(model, restrict(s, tp), props)
            parts |= set(bad) | set(reached)
        if whole != parts:
            out.append(f"state verdicts {sorted(whole)} against its partitions' {sorted(parts)} on {s}")
        for action, nxt, effects in successors(model, s):
            tp = group_of(action)
            if tp is None:
                continue
            own = step_checks(model, s, action, nxt, effects, props)
            cut = step_checks(model, restrict(s, tp), action, restrict(nxt, tp), effects, props)
            if (sorted(own[0]), sorted(own[1])) != (sorted(cut[0]), sorted(cut[1])):
                out.append(f"step verdicts {own} against {cut} on {action!r} from {s}")
    return out


__all__ = ["GLOBAL_SAFE_FAMILIES", "PartialOrderModel", "ReductionClaimFailed", "footprint_escape", "group_of",
           "local_predicate_failures", "progress", "restrict", "why_unsound"]
