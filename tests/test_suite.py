"""`kcm suite`: the generated scenarios cover every reachable edge, operation, selector, goal and violation."""

import json
from pathlib import Path

import pytest
from kcm.checkers.conformance.suite import KINDS, LAST_ONLY, SuiteError, _Graph, generate_suite, selector_branch
from kcm.checkers.core.scenario import read_file, run
from kcm.checkers.explore import coverage

from kcm.cli import main

SPECS = Path(__file__).resolve().parent.parent / "specs" / "configs"


@pytest.fixture(scope="module")
def controller(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite")
    return generate_suite("controller", out, traces=True)


def test_controller_suite_covers_every_reachable_item(controller):
    cov = controller.coverage()
    for kind in ("partition_edge", "replica_edge", "operation", "selector", "goal"):
        assert cov[kind]["reachable"] > 0, kind
        assert cov[kind]["covered"] == cov[kind]["reachable"], (kind, cov[kind])
    assert controller.reachable["operation"] == ["broker_fail", "broker_start", "controlled_shutdown",
                                                  "controller_resign", "create_topic", "preferred_election",
                                                  "reassign"]


def test_the_graph_is_the_explorers(tmp_path):
    """The suite walks the same graph as `kcm explore`: the same distinct states and transitions."""
    from kcm.checkers.core.bounded import BoundedSystem, load_config
    from kcm.checkers.explore import bfs

    for name in ("tiny", "unclean"):
        found = bfs.explore(BoundedSystem(load_config(name)))
        report = generate_suite(name, tmp_path / name)
        assert (report.distinct_states, report.transitions) == (found.distinct_states, found.transitions), name


def test_controller_suite_is_small_against_maximal_paths(controller):
    paths = controller.maximal_paths if controller.maximal_paths is not None else controller.dag_maximal_paths
    print(f"\ncontroller suite: {len(controller.scenarios)} scenarios, {controller.distinct_states} states, "
          f"{controller.transitions} transitions, {paths} maximal paths, ratio {controller.ratio():.0f}x, "
          f"{controller.seconds:.1f} s")
    assert controller.ratio() >= 10
    assert len(controller.scenarios) <= 20


def test_every_scenario_passes_run_and_really_covers(controller):
    """Run each written file through the reference again: it meets its expectations, and the edges, operations and
    selectors its steps exercise (counted independently of the suite) make up the reported coverage."""
    for path in controller.scenarios:
        outcome = run(read_file(path))
        assert outcome.exit_code == 0, (path, outcome.mismatches)
    ran = coverage.of_scenarios(controller.scenarios)
    (cov,) = ran.values()
    d = cov.to_dict()
    edges = {f"{e['from']} -> {e['to']}" for e in d["partition_edges"]["edges"] if e["count"]}
    assert edges == set(controller.reachable["partition_edge"])
    edges = {f"{e['from']} -> {e['to']}" for e in d["replica_edges"]["edges"] if e["count"]}
    assert edges == set(controller.reachable["replica_edge"])
    assert set(d["operations"]) == set(controller.reachable["operation"])
    assert {k for k, v in d["selectors"].items() if v} == set(controller.reachable["selector"])


def test_no_scenario_is_a_prefix_of_another_unless_kept_for_its_last_step(controller):
    steps = [read_file(p)["steps"] for p in controller.scenarios]
    for i, a in enumerate(steps):
        last_only = any(c.split(":", 1)[0] in LAST_ONLY for c in controller.covers[i])
        for j, b in enumerate(steps):
            if i != j and len(a) < len(b) and b[:len(a)] == a:
                assert last_only, (controller.scenarios[i], controller.scenarios[j])


def test_selector_branches_and_the_no_op_preferred_election(controller):
    """Each selector branch the graph reaches is covered, and a preferred election that changes nothing (which
    the explorer never offers) ends a scenario: run without that step, the reference's result is the same."""
    assert controller.covered["selector_branch"] == controller.reachable["selector_branch"]
    assert "preferred: the preferred replica is live, out of the ISR" in controller.reachable["selector_branch"]
    assert "offline: no live ISR replicas to choose from, a live replica outside the ISR" in \
        controller.reachable["selector_branch"]
    assert controller.covered["no_op"] == ["preferred_election"]
    (path,) = [p for p, why in zip(controller.scenarios, controller.covers, strict=True)
               if "no_op: preferred_election" in why]
    doc = read_file(path)
    assert doc["steps"][-1]["op"] == "preferred_election"
    shorter = dict(doc, steps=doc["steps"][:-1])
    del shorter["expect"]
    assert run(shorter).result == run(doc).result
    # and a table edge of an operation counts only as a scenario's last step
    for p, why in zip(controller.scenarios, controller.covers, strict=True):
        ops = {w.split(": ", 1)[1].split(" ", 1)[0] for w in why if w.startswith("operation_edge: ")}
        assert ops <= {read_file(p)["steps"][-1]["op"]}, (p, ops)


def test_selector_branch_names_what_decides_the_choice():
    assert selector_branch("offline", [0, 1, 2], [0, 1, 2], [1, 2]) == \
        "offline: several live ISR replicas to choose from"
    assert selector_branch("offline", [0, 1], [0], [1]) == \
        "offline: no live ISR replicas to choose from, a live replica outside the ISR"
    assert selector_branch("controlled_shutdown", [0, 1], [0, 1], [0, 1], [0]) == \
        "controlled_shutdown: one live ISR replica to choose from"
    assert selector_branch("preferred", [0, 1], [1], [0, 1]) == \
        "preferred: the preferred replica is live, out of the ISR"
    assert selector_branch("preferred", [0, 1], [0, 1], [1]) == "preferred: the preferred replica is down"


def test_golden_traces_written_next_to_scenarios_are_valid(controller):
    from kcm.oracle import check_trace_file

    assert len(controller.traces) == len(controller.scenarios)
    for trace in controller.traces:
        v = check_trace_file(trace, "seeds")
        assert v.ok, (trace, v.message())


def test_violations_get_their_own_scenario_with_expect_violation(tmp_path):
    cfg = json.loads((SPECS / "bugs" / "KAFKA-6082.json").read_text())
    cfg["variants"] = ["KAFKA-6082"]
    path = tmp_path / "k6082.json"
    path.write_text(json.dumps(cfg))
    report = generate_suite(str(path), tmp_path / "out")
    assert "ZkEpochFencing" in report.reachable["violation"]
    assert report.covered["violation"] == report.reachable["violation"]
    expected = {}
    for p in report.scenarios:
        doc = read_file(p)
        assert run(doc).exit_code == 0, p
        if "expect_violation" in doc:
            expected[doc["expect_violation"]["property"]] = doc["expect_violation"]["step"]
    assert set(expected) == set(report.reachable["violation"])


def test_maximal_paths_of_a_cyclic_graph_count_the_bfs_dag():
    graph = object.__new__(_Graph)
    # 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 1 (a cycle), 2 -> 3
    graph.succ, graph.depth = [[1, 2], [2], [1, 3], []], [0, 1, 1, 2]
    whole, dag = graph.maximal_paths()
    assert whole is None and dag == 2  # 0-1 (1's only successor is on its own level) and 0-2-3
    graph.succ = [[1, 2], [2], [3], []]
    assert graph.maximal_paths() == (2, 2)  # 0-1-2-3 and 0-2-3; the BFS DAG keeps 0-1 and 0-2-3


def test_cli_reports_size_and_coverage(tmp_path, capsys):
    assert main(["suite", "--config", "tiny", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fewer scenarios than maximal paths" in out and "partition edges:" in out and "(100%" in out
    assert main(["suite", "--config", "tiny", "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["coverage"]) == set(KINDS)
    assert all(i["covered"] for kind in KINDS for i in doc["items"][kind])
    # a second run into the same folder leaves no file of the first behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(s["file"]).name for s in doc["scenarios"])


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["suite", "--config", "no-such-config", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-config" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["suite", "--config", "tiny", "--out", str(blocker / "sub")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(SuiteError):
        generate_suite("tiny", tmp_path / "small", max_states=10)


def test_behaviours_each_end_a_scenario(tmp_path):
    """With behaviours, every distinct kind of step is covered, and as the last step of a scenario (so that a
    result compared at the end sees what it did); the suite is larger than the plain one and still passes run."""
    from kcm.checkers.conformance.suite import behaviour
    from kcm.checkers.core.bounded import BoundedSystem, load_config
    from kcm.checkers.explore.tally import selectors_run
    from kcm.model.actions import from_step
    from kcm.reference import api

    plain = generate_suite("tiny", tmp_path / "plain")
    report = generate_suite("tiny", tmp_path / "b", behaviours=True)
    assert report.covered["behaviour"] == report.reachable["behaviour"] and len(report.reachable["behaviour"]) > 5
    assert len(report.scenarios) > len(plain.scenarios)
    model = BoundedSystem(load_config("tiny"))
    ends = set()
    for path, why in zip(report.scenarios, report.covers, strict=True):
        doc = read_file(path)
        assert run(doc).exit_code == 0, path
        state = model.init_states()[0]
        setup = len(model.scenario([])["steps"])
        ran: list[str] = []
        with selectors_run(ran.append):
            for step in doc["steps"][setup:]:
                before, ran[:] = state, []
                state, effects = api.step(model.config, state, from_step(step))
        end = behaviour(before, from_step(doc["steps"][-1]), state, effects, ran)
        wanted = [w.split(": ", 1)[1] for w in why if w.startswith("behaviour: ")]
        assert wanted in ([], [end]), (path, wanted, end)
        ends.update(wanted)
    assert ends == set(report.reachable["behaviour"])


@pytest.mark.parametrize("name", ["unclean", "tla-high-watermark", "tla-kip320"])
def test_golden_traces_of_data_plane_suites_are_valid(tmp_path, name):
    """Suites with the data plane and unclean elections: each scenario's golden trace (appends, fetches, leaders'
    own ISR writes, elections marked) is judged valid by the oracle under the scenario's rule set."""
    from kcm.oracle import check_trace_file

    report = generate_suite(name, tmp_path, traces=True)
    kinds = set()
    for path, trace in zip(report.scenarios, report.traces, strict=True):
        v = check_trace_file(trace, read_file(path)["config"].get("rules", "seeds"))
        assert v.ok, (trace, v.message())
        kinds |= {json.loads(line)["type"] for line in trace.read_text().splitlines()}
    assert {"produce", "fetch", "leader_and_isr_write"} <= kinds


def test_successors_are_kept_in_one_flat_array():
    from kcm.checkers.conformance.suite import _Successors

    succ = _Successors()
    for targets in ([1, 2], [], [0, 2, 3], [3]):
        succ.begin()
        for t in targets:
            succ.add(t)
    assert len(succ) == 4 and [list(t) for t in succ] == [[1, 2], [], [0, 2, 3], [3]] and list(succ[2]) == [0, 2, 3]
