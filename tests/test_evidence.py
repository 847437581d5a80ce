"""Counterexamples as evidence: states, per-step diffs and the witness, on every engine's trace; --out scenarios
carry expect_violation; partial runs and lassos read right."""

import json
import subprocess
import sys
from pathlib import Path

from kcm.checkers.core import evidence
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, walk

ROOT = Path(__file__).resolve().parent.parent


def kcm(*args):
    return subprocess.run([sys.executable, "-m", "kcm.cli", *args], capture_output=True, text=True)


def unclean():
    model = BoundedSystem(load_config("unclean"))
    return model, bfs.explore(model).to_json(model)["counterexamples"]["AckedRecordsSurvive"]


def test_unclean_election_evidence_names_the_lost_record_and_the_step_that_lost_it():
    _, cex = unclean()
    ev = cex["evidence"]
    assert [s["action"]["op"] for s in ev["steps"]] == ["produce", "isr_shrink", "broker_fail"]
    assert [s["step"] for s in ev["steps"]] == [1, 2, 3]  # step 0 of the scenario creates the topic
    w = ev["witness"]
    assert w["step"] == 3 and w["detail"] == [{"partition": "t-0", "offset": 0, "leader_epoch": 0,
                                               "lost": "not in the acting leader's log"}]
    znode = next(e for e in w["entries"] if e["what"] == "ZooKeeper /brokers/topics/t/partitions/0/state")
    assert (znode["before"]["leader"], znode["after"]["leader"]) == (0, 1)
    assert znode["after"]["leader_epoch"] == 2 and znode["after"]["isr"] == [1]


def test_each_diff_holds_only_what_changed_and_replays_the_states():
    model, cex = unclean()
    ev = cex["evidence"]
    state = dict(ev["initial_state"])
    for step in ev["steps"]:
        assert step["diff"], step
        for key, change in step["diff"].items():
            old = state.get(key)
            if isinstance(old, dict) and isinstance(change["after"], dict):
                assert {k: old.get(k) for k in change["before"]} == change["before"]
                assert any(change["before"][k] != change["after"][k] for k in change["before"])
                state[key] = {**old, **change["after"]}
            else:
                assert old == change["before"] and change["before"] != change["after"]
                state[key] = change["after"]
        state = {k: v for k, v in state.items() if v is not None}
    assert state == ev["final_state"]
    produce = ev["steps"][0]["diff"]
    assert set(produce) == {"replica t-0@0", "history pending t-0"}  # nothing else changed
    assert any(r["type"] == "LeaderAndIsr" and r["leader"] == 1 for r in ev["steps"][-1]["requests"])


def test_a_step_property_gets_a_witness_too():
    model = BoundedSystem(dict(load_config("unclean"), unclean_leader_election=False,
                               properties=["CleanElection", "OneLeaderPerEpoch"]))
    found = bfs.explore(model)
    assert not found.violations  # clean elections hold without unclean election
    unclean_model = BoundedSystem(dict(load_config("unclean"), properties=["CleanElection"]))
    cex = bfs.explore(unclean_model).to_json(unclean_model)["counterexamples"]
    assert not cex  # CleanElection does not judge a cluster that allows unclean election
    from kcm.properties.controller import PROPERTIES

    prop = next(p for p in PROPERTIES if p.name == "CleanElection")
    model = BoundedSystem(load_config("unclean"))
    trace = bfs.explore(model).violations["AckedRecordsSurvive"]
    states = [model.init_states()[0]]
    for a in trace:
        states.append(model.step(states[-1], a)[0])
    before, after = states[-2], states[-1]
    _, effects = model.step(before, trace[-1])
    strict = type("M", (), {"config": model.config._replace(unclean_leader_election=False)})()
    w = evidence.witness(prop, strict, before, trace[-1], after, effects)
    assert any(e["what"] == "ZooKeeper /brokers/topics/t/partitions/0/state" for e in w["entries"])


def test_random_walk_counterexamples_carry_evidence():
    model = BoundedSystem(load_config("unclean"))
    found = walk.walk(model, 200, 20, 0)
    cex = found.to_json(model)["counterexamples"]["AckedRecordsSurvive"]
    assert cex["evidence"]["witness"]["detail"] and cex["scenario"]["expect_violation"]["property"] == \
        "AckedRecordsSurvive"


def test_out_scenarios_expect_their_violation_and_kcm_run_checks_it(tmp_path):
    done = kcm("explore", "--config", "unclean", "--quiet", "--out", str(tmp_path))
    assert done.returncode == 1
    path = tmp_path / "AckedRecordsSurvive.json"
    doc = json.loads(path.read_text())
    assert doc["expect_violation"] == {"property": "AckedRecordsSurvive", "step": 3}
    assert kcm("run", str(path)).returncode == 0
    doc["expect_violation"]["step"] = 2
    path.write_text(json.dumps(doc))
    wrong = kcm("run", str(path))
    assert wrong.returncode == 1 and "first violated after step 3" in wrong.stderr
    doc["steps"] = doc["steps"][:3]
    path.write_text(json.dumps(doc))
    assert "never violated" in kcm("run", str(path)).stderr


def test_text_output_shows_diff_and_witness():
    out = kcm("explore", "--config", "unclean", "--quiet").stdout
    assert "violated after these 3 steps" in out and "3. broker_fail(broker=0)" in out
    assert "ZooKeeper /controller: 0 -> 1" in out and "witness (step 3):" in out
    assert '"offset":0' in out and '"partition":"t-0"' in out


def test_a_partial_run_is_not_called_holds_and_has_its_own_exit_code():
    done = kcm("explore", "--config", "tiny", "--quiet", "--max-states", "50", "--json")
    assert done.returncode == 3
    verdicts = json.loads(done.stdout)["verdicts"]
    assert "holds" not in verdicts.values()
    assert all(v.startswith(("not violated within", "not reached within", "reached", "not judged"))
               for v in verdicts.values()), verdicts
    text = kcm("explore", "--config", "tiny", "--quiet", "--max-states", "50")
    assert text.returncode == 3 and "nothing is shown to hold (exit 3)" in text.stdout


def test_a_lasso_of_one_step_reads_as_one_step(tmp_path):
    cfg = json.loads((ROOT / "specs" / "configs" / "bugs" / "KAFKA-1120.json").read_text())
    cfg.update(variants=["KAFKA-1120"], properties=["ReplicasLearnLeaders"])
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    done = kcm("explore", "--config", str(tmp_path / "c.json"), "--quiet")
    assert done.returncode == 1
    assert "after this 1 step (" in done.stdout and "these 1 steps" not in done.stdout
    assert "replica t-0@1" in done.stdout.split("witness")[-1]
