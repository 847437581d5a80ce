"""The oracles against the catalogue's predicates on explored states.

For states reached by exploring a bounded configuration (the `controller` config, and bug configs whose
violations an oracle should catch), the path to each sampled state is written as the trace and the state-change
log an implementation behaving as the model would write (`kcm.checkers.oracle.oracle_inputs`), and each oracle's verdict
is compared with the predicates' verdict on the same path:

* where no predicate is violated along the path, the oracle finds nothing;
* where the first violating step breaks a property the oracle judges, the oracle fails at that same step and
  names one of the properties the predicates found violated there;
* where it breaks only properties the oracle cannot see (its NOT_JUDGED reason), the oracle finds nothing before
  that step.

Every verdict is also counted, so that a run in which the oracle never met the bug it should catch fails too.
Where an oracle sees a violation only through a consequence it names under another id, SEEN_AS says so and why.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.gate.bugs import with_settings
from kcm.checkers.oracle import log_rules, oracle_trace
from kcm.checkers.oracle.oracle_inputs import Step, log_of, replay, trace_of, unsupported
from kcm.checkers.oracle.oracle_trace import check_events, rule_id
from kcm.model.interface import ALWAYS, STEP
from kcm.model.tables import rule_set
from kcm.properties.catalogue import CATALOGUE

SAFETY = [p for p in CATALOGUE if p.expectation in (ALWAYS, STEP)]
# (config, bug switches put in) -> (states explored breadth-first at most, states sampled from them, verdicts that
# must occur among the samples besides "valid": a sample set in which an oracle never met the bug proves little)
CONFIGS: dict[tuple[str, tuple[str, ...]], tuple[int, int, set[str]]] = {
    ("controller", ()): (40_000, 150, set()),  # every state of the config (38,611)
    ("bugs/KAFKA-6082", ("KAFKA-6082",)): (
        4000, 80, {"check-trace caught ZkEpochFencing",
                   "check-log caught ['ZkEpochFencing'] as ControllerEpochMonotone"}),
    ("bugs/KAFKA-8152", ("KAFKA-8152",)): (4000, 60, {"check-trace: cannot see ['DeletionStatesOnlyWhileDeleting']"}),
    ("bugs/KAFKA-1120", ("KAFKA-1120",)): (4000, 60, {"check-log: cannot see ['LivenessView', 'ReplicasFollowZk']"}),
    ("bugs/KAFKA-4214", ("KAFKA-4214",)): (4000, 60, {"check-trace: cannot see ['ReassignmentEndsComplete']"}),
    ("bugs/KAFKA-2729", ("KAFKA-2729",)): (3000, 40, {"check-trace: cannot see ['ReplicasFollowZk']"}),
}

# Where an oracle sees a violation only through a consequence it judges under another id: (oracle, the id it
# names) -> (the catalogue ids it stands for, why the oracle cannot name them).
SEEN_AS: dict[tuple[str, str], tuple[set[str], str]] = {
    ("check-log", "ControllerEpochMonotone"): (
        {"ZkEpochFencing"}, "a state-change log records no ZooKeeper write: a controller that still decides after a "
                            "newer one was elected (a zombie) shows as controller lines whose epoch goes back"),
}


def violated(model: Any, step: Step) -> set[str]:
    """The catalogue's safety properties the step breaks: state rules on the state after, step rules on it."""
    out = set()
    for p in SAFETY:
        ok = (p.condition(model, step.after) if p.expectation == ALWAYS
              else p.condition(model, step.before, step.action, step.after, step.effects))
        if not ok:
            out.add(p.name)
    return out


def _breadth_first(model: BoundedSystem, limit: int) -> list[list[Any]]:
    """The path (actions from the initial state) to each of the first `limit` states in breadth-first order."""
    (init,) = model.init_states()
    paths: dict[Any, list[Any]] = {init: []}
    frontier = [init]
    while frontier and len(paths) < limit:
        nxt = []
        for state in frontier:
            for action in model.actions(state):
                found = model.successor(state, action)
                if found is not None and found[0] not in paths and len(paths) < limit:
                    paths[found[0]] = paths[state] + [action]
                    nxt.append(found[0])
        frontier = nxt
    return list(paths.values())


def _samples(case: tuple[str, tuple[str, ...]]) -> tuple[BoundedSystem, list[list[Any]]]:
    limit, count, _ = CONFIGS[case]
    name, switches = case
    model = BoundedSystem(with_settings(load_config(name), {"variants": list(switches)}))
    paths = _breadth_first(model, limit)
    sampled = paths[:: max(1, len(paths) // count)]
    # and the shortest path to each property's first violation, which every engine prints as its counterexample
    found = bfs.explore(model, 20_000, stop_at=bfs.safety_names(model))
    sampled += [list(trace) for trace in found.violations.values()]
    return model, sampled


def _first_violation(model: Any, steps: list[Step]) -> tuple[int, set[str]]:
    """(index of the first step that breaks a safety property, the properties it breaks); (len, {}) if none."""
    for i, step in enumerate(steps):
        bad = violated(model, step)
        if bad:
            return i, bad
    return len(steps), set()


def _judge(oracle: str, judged: frozenset[str], reasons: dict[str, str], first: int, bad: set[str],
           failed_at: int | None, rule: str) -> tuple[str, str]:
    """(why one oracle verdict disagrees with the predicates' on one path, or ''; what to count it as)."""
    if failed_at is not None and failed_at < first:
        return f"{oracle} names {rule} at step {failed_at}, before any property is violated (step {first})", ""
    stands_for, _why = SEEN_AS.get((oracle, rule), (set(), ""))
    if failed_at == first and rule not in bad and stands_for & bad:
        return "", f"{oracle} caught {sorted(stands_for & bad)} as {rule}"
    if bad & judged:
        if failed_at != first or rule not in bad:
            return (f"{oracle} names {rule or 'nothing'} at step {failed_at}; the predicates find {sorted(bad)} "
                    f"violated at step {first}"), ""
        return "", f"{oracle} caught {rule}"
    missing = sorted(b for b in bad if not reasons.get(b))
    if missing:
        return f"{oracle} has no reason for not judging {missing}", ""
    return "", f"{oracle}: cannot see {sorted(bad)}" if bad else f"{oracle}: valid"


def _log_verdict(config: Any, steps: list[Step]) -> tuple[int | None, str]:
    lines, owner = log_of(config, steps)
    data = io.BytesIO("".join(line + "\n" for line in lines).encode())
    report = log_rules.check_file(data, kafka_version="3.x", rules=config.rules)
    assert report.unknown_lines == 0 and report.events == len(lines)  # every written line is read back
    if report.first_violation is None:
        return None, ""
    return owner[report.first_violation.line - 1], report.first_violation.rule


@pytest.mark.parametrize("case", sorted(CONFIGS), ids=lambda c: "+".join([c[0], *c[1]]))
def test_oracles_agree_with_the_predicates_on_explored_states(case: tuple[str, tuple[str, ...]]) -> None:
    model, sampled = _samples(case)
    config = model.config
    _, _, must = CONFIGS[case]
    tally: Counter = Counter()
    disagreements = []
    for actions in sampled:
        path = model.topic_steps + model.settle_steps + actions
        why = next((unsupported(config, a) for a in path if unsupported(config, a)), "")
        if why:
            tally["not written: " + why] += 1
            continue
        steps = replay(config, path)
        first, bad = _first_violation(model, steps)
        events, owner = trace_of(config, steps)
        verdict = check_events(events, rule_set(config.rules))
        assert not verdict.malformed, verdict.message()
        trace_at = None if verdict.ok else owner[verdict.line - 1]
        trace_rule = "" if verdict.ok else rule_id(verdict.rule)
        log_at, log_rule = _log_verdict(config, steps)
        for oracle, judged, reasons, at, rule in (
                ("check-trace", oracle_trace.JUDGED, oracle_trace.NOT_JUDGED, trace_at, trace_rule),
                ("check-log", log_rules.JUDGED, log_rules.NOT_JUDGED, log_at, log_rule)):
            problem, verdict = _judge(oracle, judged, reasons, first, bad, at, rule)
            if problem:
                disagreements.append(f"{actions}: {problem}")
            tally[verdict] += 1
    print(case, dict(tally))
    assert disagreements == []
    assert tally["check-trace: valid"] > 0 and tally["check-log: valid"] > 0
    assert sorted(k for k in must if not tally[k]) == []
