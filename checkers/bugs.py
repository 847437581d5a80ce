"""Rediscovering Kafka's catalogued bugs: explore each variant's config with the bug in, then with it fixed.

Each variant (`kcm.checkers.bug_catalogue`) has a bounded configuration in `specs/configs/bugs/<NAME>.json`. The bug
is rediscovered when exploring that config with the variant's `on` settings violates one of the properties
the variant names (the search stops after the first level that does); the fixed model is clean when exploring
it with the `off` settings completes with no property violated at all. The shortest counterexample is kept
as a `kcm run` scenario that replays it.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from kcm.checkers import bfs, evidence
from kcm.checkers.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.bug_catalogue import VARIANTS, Variant, by_name


def config_name(v: Variant) -> str:
    """The name of the variant's bounded configuration under specs/configs."""
    return f"bugs/{v.name}"


def with_settings(base: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The config with the variant's settings applied (variant switches are added to any already listed)."""
    cfg = copy.deepcopy(base)
    for key, value in settings.items():
        if key == "variants":
            cfg["variants"] = sorted(set(cfg.get("variants", [])) | set(value))
        else:
            cfg[key] = value
    return cfg


def check_variant(v: Variant, max_states: int | None = None) -> dict[str, Any]:
    """Explore the variant's config with the bug in and with it fixed; the row of `kcm bugs`."""
    row: dict[str, Any] = {"name": v.name, "title": v.title, "affected": v.affected, "fixed": v.fixed,
                           "config": config_name(v), "where": v.where}
    try:
        base = load_config(config_name(v))
    except BadConfig as err:
        # Reported as not rediscovered (with the reason), so one missing config does not hide the other rows.
        return dict(row, rediscovered=False, fixed_clean=False, property=None, trace_length=None, states=0,
                    seconds=0.0, scenario=None, fixed_violations=[], fixed_states=0, fixed_complete=False,
                    fixed_seconds=0.0, error=str(err))
    start = time.perf_counter()
    buggy = BoundedSystem(with_settings(base, v.on))
    # Stopped after the first level that breaks one of the variant's properties, as TLC stops: the counterexample
    # is the shortest (and canonical) all the same.
    found = bfs.explore(buggy, max_states, stop_at=v.breaks)
    broken = sorted((len(found.violations[p]), i, p) for i, p in enumerate(v.breaks) if p in found.violations)
    broken = [(n, p) for n, _i, p in broken]
    row["rediscovered"] = bool(broken)
    row["property"] = broken[0][1] if broken else None
    row["trace_length"] = broken[0][0] if broken else None
    row["states"] = found.distinct_states
    row["seconds"] = round(time.perf_counter() - start, 2)
    row["scenario"] = None
    if broken:
        trace = buggy.expand(found.violations[row["property"]])  # a reduction's folded steps made explicit
        scenario = buggy.scenario(trace)
        scenario["name"] = f"{v.name}: {v.title}"
        scenario["description"] = (f"Found by `kcm bugs {v.name}`: exploring config {config_name(v)} with the bug "
                                   f"in; the last step violates {row['property']}.")
        scenario["expect_violation"] = {"property": row["property"],
                                        "step": len(scenario["steps"]) - 1}
        row["scenario"] = scenario
        row["evidence"] = evidence.build(buggy, row["property"], trace, None, len(scenario["steps"]) - len(trace))
    start = time.perf_counter()
    fixed = bfs.explore(BoundedSystem(with_settings(base, v.off)), max_states)
    row["fixed_clean"] = fixed.complete and not fixed.violations
    row["fixed_violations"] = sorted(fixed.violations)
    row["fixed_states"] = fixed.distinct_states
    row["fixed_complete"] = fixed.complete
    row["fixed_seconds"] = round(time.perf_counter() - start, 2)
    return row


def check_all(names: list[str] | None = None, max_states: int | None = None) -> list[dict[str, Any]]:
    """`check_variant` for the named variants (all when none are named); KeyError on an unknown name."""
    chosen = [by_name(n) for n in names] if names else list(VARIANTS)
    return [check_variant(v, max_states) for v in chosen]


__all__ = ["check_all", "check_variant", "config_name", "with_settings"]
