"""Rediscovering Kafka's catalogued bugs: explore each variant's config with the bug in, then with it fixed.

Each variant (`bug_catalogue`) has a bounded configuration in `specs/configs/bugs/<NAME>.json`. The bug
is rediscovered when exploring that config with the variant's `on` settings violates one of the properties
the variant names (the search stops after the first level that does); the fixed model is clean when exploring
it with the `off` settings completes with no property violated at all. The shortest counterexample is kept
as a `kcm run` scenario that replays it.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from kcm.checkers.core import evidence
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.gate.bug_catalogue import VARIANTS, Variant, by_name


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


def _error_row(row: dict[str, Any], err: BadConfig) -> dict[str, Any]:
    """The row of a variant whose config cannot be read: not rediscovered, with the reason (so one missing config
    does not hide the other rows)."""
    return dict(row, rediscovered=False, fixed_clean=False, property=None, trace_length=None, states=0,
                seconds=0.0, scenario=None, fixed_violations=[], fixed_states=0, fixed_complete=False,
                fixed_seconds=0.0, error=str(err))


def _head(v: Variant) -> dict[str, Any]:
    return {"name": v.name, "title": v.title, "affected": v.affected, "fixed": v.fixed, "config": config_name(v),
            "where": v.where}


def buggy_half(v: Variant, max_states: int | None = None) -> dict[str, Any]:
    """The bug-in half of a variant's row: explore its config with the bug in, stopped after the first level that
    breaks one of the variant's properties (as TLC stops: the counterexample is the shortest all the same)."""
    row: dict[str, Any] = {}
    base = load_config(config_name(v))
    start = time.perf_counter()
    buggy = BoundedSystem(with_settings(base, v.on))
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
    return row


def fixed_half(v: Variant, max_states: int | None = None) -> dict[str, Any]:
    """The fixed half of a variant's row: explore its config with the bug fixed; clean when complete and violating
    nothing."""
    base = load_config(config_name(v))
    start = time.perf_counter()
    fixed = bfs.explore(BoundedSystem(with_settings(base, v.off)), max_states)
    return {"fixed_clean": fixed.complete and not fixed.violations, "fixed_violations": sorted(fixed.violations),
            "fixed_states": fixed.distinct_states, "fixed_complete": fixed.complete,
            "fixed_seconds": round(time.perf_counter() - start, 2)}


def check_variant(v: Variant, max_states: int | None = None) -> dict[str, Any]:
    """Explore the variant's config with the bug in and with it fixed; the row of `kcm bugs`."""
    try:
        return {**_head(v), **buggy_half(v, max_states), **fixed_half(v, max_states)}
    except BadConfig as err:
        return _error_row(_head(v), err)


def _half(task: tuple[str, str, int | None]) -> dict[str, Any]:
    """One half of one variant's row (a pool's task: the variant by name, so that only names cross processes)."""
    name, half, max_states = task
    v = by_name(name)
    try:
        return (buggy_half if half == "buggy" else fixed_half)(v, max_states)
    except BadConfig as err:
        return _error_row(_head(v), err)


def check_all(names: list[str] | None = None, max_states: int | None = None, jobs: int = 1) -> list[dict[str, Any]]:
    """`check_variant` for the named variants (all when none are named), the explorations spread over `jobs`
    processes; KeyError on an unknown name. The rows are the same whatever `jobs` is (only the seconds differ)."""
    chosen = [by_name(n) for n in names] if names else list(VARIANTS)
    if jobs <= 1 or len(chosen) == 0:
        return [check_variant(v, max_states) for v in chosen]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(v.name, half, max_states) for v in chosen for half in ("buggy", "fixed")]
    # Forked workers start at once with the catalogue and the compiled modules already imported.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        halves = list(pool.map(_half, tasks))
    rows = []
    for i, v in enumerate(chosen):
        buggy, fixed = halves[2 * i], halves[2 * i + 1]
        error = buggy.get("error") or fixed.get("error")
        rows.append(_error_row(_head(v), BadConfig(error)) if error else {**_head(v), **buggy, **fixed})
    return rows


__all__ = ["buggy_half", "check_all", "check_variant", "config_name", "fixed_half", "with_settings"]
