"""Which sound reductions a run applies: each reduction's gate, and the explored model they make together.

A reduction is a claim about a config (docs/exploration.md, "Reductions"): broker symmetry (symmetry.py)
keeps one state per orbit of the config's symmetry group; partial-order reduction (por.py) expands one
partition's steps where they commute with every other step; the dead-broker reduction (dead_brokers.py) keeps one
state per class of states that differ only in what brokers down for good kept in memory. Each is applied where its
argument holds and refused, with the reason, elsewhere. Symmetry and partial-order reduction are not combined:
where symmetry applies, partial-order reduction is refused (its argument is made for the unreduced graph;
combining them needs an ample-set choice invariant under the group, which this engine does not make). The
dead-broker reduction wraps either: its classes are unions of bisimilar states that every offered action list,
ample set, renaming and verdict treats alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NAMES = ("symmetry", "por", "dead-brokers")
DEFAULT = "auto"  # every reduction whose argument holds for the config


class BadReductions(ValueError):
    """A --reductions value names no known reduction, or a reduction that cannot be applied to the config."""


@dataclass
class Choice:
    """The reductions a run applies, the model it explores, and why each other reduction was left out."""

    model: Any
    applied: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    shortened: str = ""  # how the counterexamples were made as short as the full search's, once they were

    def identity(self) -> str:
        """The reductions' part of a checkpoint's identity: resuming needs the same reduced graph."""
        return "+".join(self.applied) or "none"

    def to_dict(self) -> dict[str, Any]:
        """The summary's `reductions` entry: applied names and each refused reduction's reason."""
        out: dict[str, Any] = {"applied": list(self.applied), "refused": dict(self.refused)}
        if self.shortened:
            out["counterexamples"] = self.shortened
        return out

    def full_model(self) -> Any:
        """The unreduced model under the reductions."""
        from kcm.checkers.reductions.reduced_model import ReducedModel

        model = self.model
        while isinstance(model, ReducedModel):
            model = model.base
        return model


def parse(text: str) -> tuple[str, ...] | None:
    """The reductions a --reductions value asks for (None: every sound one); BadReductions if it names others."""
    text = text.strip()
    if text == DEFAULT:
        return None
    if text == "none":
        return ()
    names = tuple(n.strip() for n in text.split(","))
    if "" in names:
        raise BadReductions(f"--reductions: an empty name in {text!r} (names are separated by single commas)")
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise BadReductions(f"--reductions: unknown reduction {', '.join(map(repr, unknown))} "
                            f"(choose from {', '.join(NAMES)}, 'auto' or 'none')")
    return names


def choose(base: Any, wanted: tuple[str, ...] | None, user_properties: bool = False,
           exhaustive: bool = True) -> Choice:
    """The explored model with the wanted reductions (None: every sound one); BadReductions if one asked for by
    name cannot be argued for this config. `user_properties`: the run checks predicates of the user's, which
    may tell brokers or partitions apart; `exhaustive` False: random walks, which partial-order reduction does
    not serve."""
    from kcm.checkers.reductions import dead_brokers, por
    from kcm.checkers.reductions.symmetry import SymmetricModel, symmetry_group

    choice = Choice(base)
    names = NAMES if wanted is None else wanted
    if "symmetry" in names and user_properties:
        choice.refused["symmetry"] = "a --property predicate may tell brokers apart"
    elif "symmetry" in names and getattr(base.config, "grain", "coarse") != "coarse":
        # the renaming of a state (model/symmetry.py) leaves out the requests waiting behind a half-applied one
        choice.refused["symmetry"] = "at the event grain requests wait in connections, which renaming leaves out"
    elif "symmetry" in names:
        try:
            group = symmetry_group(base)
        except ValueError as err:
            group, why = [], str(err)
        else:
            why = "the config's assignment and id-ordered rules leave no broker permutation"
        if len(group) > 1 or group and wanted is not None:  # asked for by name: a group of one is sound, if useless
            choice.model = SymmetricModel(base, group)
            choice.applied.append("symmetry")
        else:
            choice.refused["symmetry"] = why
    if "por" in names:
        why_not = ("random walks follow single paths: the reduction serves exhaustive search" if not exhaustive
                   else "broker symmetry applies (the two are not combined)" if choice.applied
                   else por.why_unsound(base))
        if why_not is None:
            choice.model = por.PartialOrderModel(base)
            choice.applied.append("por")
        else:
            choice.refused["por"] = why_not
    if "dead-brokers" in names:
        why_not = dead_brokers.why_unsound(base, user_properties)
        if why_not is None:
            choice.model = dead_brokers.DeadBrokersModel(choice.model, base)
            choice.applied.append("dead-brokers")
        else:
            choice.refused["dead-brokers"] = why_not
    if wanted:  # asked for by name: a refusal is an error, not a silently bigger run
        for name in wanted:
            if name in choice.refused:
                raise BadReductions(f"--reductions {name}: not sound for this config: {choice.refused[name]}")
    return choice


def shorten(choice: Choice, found: Any, max_states: int | None, stop_at: Any) -> Any:
    """The exploration with counterexamples as short as the full search's (partial-order reduction can postpone a
    violation to a later level): the reduced run itself where nothing needs shortening.

    A run that stops at its first violation is replaced by the full search stopped the same way (it ends at or
    before the reduced run's level, and prints exactly what an unreduced run prints); a run that goes on keeps its
    verdicts and takes each violated property's trace from a full search stopped at that property's first level.
    """
    from kcm.checkers.explore import bfs

    if "por" not in choice.applied or not found.violations:
        return found
    full = choice.full_model()
    if stop_at is not None:
        again = bfs.explore(full, max_states, stop_at=stop_at)
        again.engine = found.engine
        choice.shortened = "the full search's, which stopped at the first violation's level"
        return again
    left = set(found.violations)
    while left:
        again = bfs.explore(full, max_states, stop_at=left)
        hits = left & set(again.violations)
        if not hits:
            break  # beyond --max-states: the reduced run's traces stand
        for name in hits:
            found.violations[name] = again.violations[name]
        left -= hits
    choice.shortened = ("the full search's, stopped at each violated property's first level" if not left else
                        f"the full search's except {', '.join(sorted(left))} (beyond --max-states)")
    return found


__all__ = ["DEFAULT", "NAMES", "BadReductions", "Choice", "choose", "parse", "shorten"]
