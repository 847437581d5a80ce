"""Every shipped config reaches the goals it checks, or says why not; a goal never reached is a warning.

The configs audited in seconds are audited here (`checkers/explore/goals.py`); the others, listed in SLOW with their
measured time, by `python ci/audit_goals.py` (the table in docs/exploration.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore import goals

from kcm.cli import main

# Audited by ci/audit_goals.py rather than here: configs with a goal they are not meant to reach, whose audit
# goes through the whole space (seconds of that run measured on 2 busy shared cores; `large`, 15.3 million
# states, by a full run of hours: docs/exploration.md). Every other shipped config is audited here:
# its audit stops at the level where its last goal is first reached (a few levels).
SLOW = {"async": 36, "async-kip320": 147, "bugs/KIP-320": 1255, "large": None}
QUICK = [c for c in goals.shipped_configs() if c not in SLOW]


def test_the_configs_left_to_the_script_are_shipped() -> None:
    assert set(SLOW) <= set(goals.shipped_configs())


@pytest.mark.parametrize("config", QUICK)
def test_shipped_config_reaches_its_goals_or_says_why(config: str) -> None:
    found = goals.audit(config)
    assert found.complete
    assert found.first_reached, f"{config} checks no goal"
    assert found.problems() == []


def _config(tmp_path: Path, **extra: Any) -> str:
    """A small config whose reassignment never completes (no data plane: the new replica never joins the ISR)."""
    cfg = {"name": "stuck", "brokers": [0, 1, 2], "topics": {"t": {"0": [0, 1]}},
           "families": ["reassignment", "broker_failure"],
           "bounds": {"max_failures": 1, "max_restarts": 0, "reassign_targets": [[1, 2]]}, **extra}
    path = tmp_path / "stuck.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _explore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explore", "--quiet", "--continue", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_goal_never_reached_is_a_warning_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    path = _config(tmp_path)
    code, out, _ = _explore(capsys, "--config", path, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["complete"]
    never = sorted(k for k, v in summary["verdicts"].items() if v == "never reached")
    assert "SomeReassignmentCompletes" in never
    assert sorted(w.split()[0] for w in summary["warnings"]) == never
    assert all("never reached in a complete run" in w for w in summary["warnings"])
    code, out, _ = _explore(capsys, "--config", path)
    assert code == 0
    assert "  warning: SomeReassignmentCompletes never reached in a complete run" in out


def test_a_stated_reason_is_printed_and_a_stale_one_is_reported(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    reasons = {"SomeReassignmentCompletes": "no data plane: the new replica never joins the ISR",
               "SomeLeaderMoved": "said so to test a stale reason"}
    code, out, _ = _explore(capsys, "--config", _config(tmp_path, unreached_goals=reasons), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["verdicts"]["SomeLeaderMoved"] == "reached"
    assert ("SomeReassignmentCompletes never reached: not meant to be reached: no data plane: the new replica never "
            "joins the ISR") in summary["warnings"]
    assert ("SomeLeaderMoved reached, though the config says it is not meant to be (said so to test a stale reason)"
            in summary["warnings"])


def test_a_partial_run_warns_of_nothing_unreached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _explore(capsys, "--config", _config(tmp_path), "--json", "--max-states", "5")
    summary = json.loads(out)
    assert code == 3 and not summary["complete"]
    assert summary["warnings"] == []


@pytest.mark.parametrize(("reasons", "where"), [
    ({"OneLeaderPerEpoch": "a rule, not a goal"}, "unreached_goals"),
    ({"SomeThingElse": "unknown"}, "SomeThingElse\" is not a reachability goal"),
    ({"SomeLeaderMoved": ""}, "unreached_goals"),
    ({"SomeLeaderMoved": "   "}, "unreached_goals"),
    ({"SomeLeaderMoved": 3}, "unreached_goals"),
    (["SomeLeaderMoved"], "unreached_goals"),
])
def test_a_bad_unreached_goals_entry_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            reasons: Any, where: str) -> None:
    path = _config(tmp_path, unreached_goals=reasons)
    code, out, err = _explore(capsys, "--config", path)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and where in err and "stuck.json" in err
    with pytest.raises(BadConfig):
        load_config(path)


def test_the_audit_agrees_with_the_explorer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path)
    found = goals.audit(path, whole=True)
    code, out, _ = _explore(capsys, "--config", path, "--json", "--reductions", "none")
    summary = json.loads(out)
    assert code == 0 and found.states == summary["distinct_states"] and found.depth == summary["depth"]
    assert {g: d is not None for g, d in found.first_reached.items()} == \
        {g: summary["verdicts"][g] == "reached" for g in goals.goal_names(BoundedSystem(load_config(path)))}
    assert found.problems() == [f"stuck: {g} is never reached and the config gives no reason (\"unreached_goals\")"
                                for g, d in found.first_reached.items() if d is None]


def test_the_first_depth_is_the_shortest_run_to_the_goal() -> None:
    found = goals.audit("tiny")
    assert found.first_reached == goals.audit("tiny", whole=True).first_reached
    model = BoundedSystem(load_config("tiny"))
    by_depth: list[set[Any]] = [set(model.init_states())]
    for _ in range(max(d for d in found.first_reached.values() if d is not None)):
        by_depth.append({nxt for s in by_depth[-1] for _, nxt, _ in _successors(model, s)})
    props = {p.name: p for p in model.properties()}
    for goal, depth in found.first_reached.items():
        assert depth is not None
        cond = props[goal].condition
        if props[goal].expectation == "sometimes":
            hits = [d for d, level in enumerate(by_depth) if any(cond(model, s) for s in level)]
        else:
            hits = [d + 1 for d, level in enumerate(by_depth[:-1])
                    if any(cond(model, s, a, n, e) for s in level for a, n, e in _successors(model, s))]
        assert hits and hits[0] == depth, goal


def _successors(model: Any, state: Any) -> list[tuple[Any, Any, Any]]:
    from kcm.checkers.explore.verdicts import successors

    return successors(model, state)
