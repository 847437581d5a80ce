"""Symmetry reduction over interchangeable brokers: the configuration's symmetry group and a reduced model.

A broker permutation is a symmetry of a bounded configuration when it renames the initial state to itself (so
it keeps the first controller and every topic's ordered assignment) and maps the set of reassignment targets
to itself. Two rules of the reference depend on the order of broker ids rather than on the state, so a
permutation must also leave alone the brokers those rules can tell apart:

- a controller election is won by the lowest live id, and at most `max_failures` brokers are down at once
  (none when no failure family is on), so the lowest `max_failures + 1` ids are fixed;
- with the data plane on, a `Replicate` fetches followers in broker-id order, so every broker that can hold a
  replica (an initial assignment or a reassignment target) is fixed.

`SymmetricModel` is the same model with one change: a state's fingerprint is the smallest fingerprint of its
renamings under the group, so the engines keep one state per orbit. Traces stay real traces: an engine
stores the state it actually reached and applies actions to it; only deduplication uses the orbit.
`equivariance_failures` checks the soundness claim on concrete states.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from kcm.checkers.explore.verdicts import state_checks, step_checks, successors
from kcm.checkers.reductions.reduced_model import ReducedModel
from kcm.model.symmetry import Perm, rename_action, rename_cluster

MAX_BROKERS = 8  # every permutation is tried; 8! = 40,320 is still quick, more is not


def order_fixed_brokers(model: Any) -> set[int]:
    """The brokers every symmetry must fix because a rule of the reference tells them apart by id order."""
    brokers = sorted(model.config.brokers)
    families = model.families
    failures = model.bounds["max_failures"] if families & {"broker_failure", "controlled_shutdown"} else 0
    fixed = set(brokers[:failures + 1])
    if "data_plane" in families:
        for t in model.topic_steps:
            for _, replicas in t.assignment:
                fixed.update(replicas)
        for target in model.bounds["reassign_targets"]:
            fixed.update(target)
    return fixed


def symmetry_group(model: Any) -> list[Perm]:
    """Every broker permutation that maps the configuration to itself, identity first (see the module docstring)."""
    brokers = sorted(model.config.brokers)
    if len(brokers) > MAX_BROKERS:
        raise ValueError(f"symmetry reduction tries every broker permutation: at most {MAX_BROKERS} brokers, "
                         f"the config has {len(brokers)}")
    fixed = order_fixed_brokers(model)
    movable = [b for b in brokers if b not in fixed]
    inits = model.init_states()
    init_set = set(inits)
    targets = {tuple(t) for t in model.bounds["reassign_targets"]}
    group: list[Perm] = []
    for image in itertools.permutations(movable):
        perm = {b: p for b, p in zip(movable, image, strict=True) if b != p}
        if {rename_cluster(perm, s) for s in inits} != init_set:
            continue
        if {tuple(perm.get(b, b) for b in t) for t in targets} != targets:
            continue
        group.append(perm)
    return group  # the identity ({}) comes first: permutations() yields the sorted order first


class SymmetricModel(ReducedModel):
    """A bounded model whose fingerprint identifies states that differ only by a symmetry of its group."""

    def __init__(self, base: Any, group: list[Perm] | None = None) -> None:
        super().__init__(base)
        self.group = symmetry_group(base) if group is None else group
        self._renamings = [p for p in self.group if p]  # the identity is the base fingerprint itself

    def fingerprint(self, state: Any) -> int:
        """The smallest fingerprint among the state's renamings: one fingerprint per orbit."""
        fp = self.base.fingerprint
        best = fp(state)
        for perm in self._renamings:
            other = fp(rename_cluster(perm, state))
            if other < best:
                best = other
        return best


def equivariance_failures(model: Any, group: list[Perm], states: Iterable[Any]) -> list[str]:
    """Where renaming does not commute with the model: each state, permutation and what differs (empty: sound).

    For a symmetry p and a state s, the successors of p(s) must be exactly p applied to the successors of s
    (action and next state), and every property must judge p(s) and each renamed transition as it judges the
    original.
    """
    props = model.properties()
    out: list[str] = []
    for s in states:
        own = successors(model, s)
        for perm in (p for p in group if p):
            r = rename_cluster(perm, s)
            if state_checks(model, r, props) != state_checks(model, s, props):
                out.append(f"{perm}: state verdicts differ on {s}")
            renamed = {(rename_action(perm, a), rename_cluster(perm, n)) for a, n, _ in own}
            theirs = successors(model, r)
            if {(a, n) for a, n, _ in theirs} != renamed:
                out.append(f"{perm}: successors differ on {s}")
                continue
            by_action = {a: (n, e) for a, n, e in theirs}
            for a, n, e in own:
                ra = rename_action(perm, a)
                rn, re = by_action[ra]
                if step_checks(model, r, ra, rn, re, props) != step_checks(model, s, a, n, e, props):
                    out.append(f"{perm}: step verdicts differ on {a} from {s}")
    return out


__all__ = ["MAX_BROKERS", "SymmetricModel", "equivariance_failures", "order_fixed_brokers", "symmetry_group"]
