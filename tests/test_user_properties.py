"""Users' own properties (`kcm explore --property`): every engine's verdicts and counterexamples, errors, bad flags."""

from __future__ import annotations

import json
import pickle
import shutil
import textwrap
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.model.interface import ALWAYS, STEP
from kcm.properties import user

from kcm.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "properties" / "my_rules.py"

RULES = '''
"""Rules for the tests: one that fails on tiny, one that holds, one step rule, one that raises, one that returns
no bool."""


def epoch_at_most_1(state):
    """No leader epoch above 1."""
    return all(p["leader_epoch"] <= 1 for p in state["partitions"].values())


def isr_within_replicas(state):
    """Every ISR member is a replica."""
    return all(set(p["isr"]) <= set(p["replicas"]) for p in state["partitions"].values())


def controller_epoch_grows(before, action, after):
    """No step lowers the controller epoch."""
    print("judged", action["op"])  # goes to stderr: the --json document on stdout stays whole
    return after["controller"]["epoch"] >= before["controller"]["epoch"]


def writes_the_state(state):
    """Tries to change the state it is given (a mappingproxy refuses)."""
    if state["controller"]["epoch"] > 1:
        state["partitions"]["t-0"]["leader"] = 7
    return True


def forgets_to_return(state):
    """Returns nothing once the controller has failed over."""
    if state["controller"]["epoch"] == 1:
        return True


not_a_function = 3
'''


@pytest.fixture()
def rules(tmp_path: Path) -> Path:
    """The rules above, as a file."""
    path = tmp_path / "rules.py"
    path.write_text(RULES)
    return path


def _explore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["explore", "--json", "--quiet", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _same(a: dict, b: dict) -> None:
    """The verdicts, counts and counterexamples of two runs are the same (engine and timings aside)."""
    for key in ("verdicts", "counterexamples", "distinct_states", "transitions", "depth", "complete"):
        assert a[key] == b[key], key


def test_local_and_two_workers_judge_user_properties_alike(rules, capsys):
    specs = [f"--property={rules}:{f}" for f in ("epoch_at_most_1", "isr_within_replicas", "controller_epoch_grows")]
    code, local = _explore(capsys, "--config", "tiny", *specs)
    assert code == 1
    assert local["verdicts"]["epoch_at_most_1"] == "violated"
    assert local["verdicts"]["isr_within_replicas"].startswith("not violated within")  # stopped at the violation
    cex = local["counterexamples"]["epoch_at_most_1"]
    assert cex["evidence"]["rule"] == "No leader epoch above 1."
    assert cex["evidence"]["kind"] == ALWAYS
    assert cex["length"] >= 1 and "expect_violation" not in cex["scenario"]  # `kcm run` knows the catalogue only
    code2, workers = _explore(capsys, "--config", "tiny", "--workers", "2", *specs)
    assert code2 == 1
    _same(local, workers)
    # The whole boundary: the holding ones hold, the failing one is an error, on both engines.
    specs.append(f"--property={rules}:writes_the_state")
    code, whole = _explore(capsys, "--config", "tiny", "--continue", *specs)
    assert whole["verdicts"]["isr_within_replicas"] == "holds"
    assert whole["verdicts"]["controller_epoch_grows"] == "holds"
    assert whole["verdicts"]["writes_the_state"] == "error"
    _same(whole, _explore(capsys, "--config", "tiny", "--continue", "--workers", "2", *specs)[1])


@pytest.mark.spark
@pytest.mark.slow
def test_spark_executors_judge_user_properties_as_the_local_engine(rules, tmp_path, capsys):
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java")
    pytest.importorskip("pyspark")
    # Each process that compiles the text says so (the module's own code, run once per process).
    rules.write_text("import os\nwith open(__file__ + '.pids', 'a') as f:\n    f.write(f'{os.getpid()}\\n')\n" + RULES)
    specs = [f"--property={rules}:{f}" for f in ("epoch_at_most_1", "controller_epoch_grows", "writes_the_state")]
    code, local = _explore(capsys, "--config", "tiny", *specs)
    # Every level on the executors (--driver-below 0), whose Python workers compile the text shipped with the task.
    code2, spark = _explore(capsys, "--config", "tiny", "--engine", "spark", "--master", "local[1]",
                            "--driver-below", "0", *specs)
    assert (code, code2) == (1, 1)
    assert spark["engine"] != local["engine"]
    _same(local, spark)
    assert spark["verdicts"]["writes_the_state"] == "error"
    pids = set(Path(f"{rules}.pids").read_text().split())
    assert len(pids) >= 2, pids  # this process and at least one Python worker of Spark's


def test_a_predicate_that_fails_is_that_propertys_error_with_its_traceback(rules, tmp_path, capsys):
    html = tmp_path / "report.html"
    code, s = _explore(capsys, "--config", "tiny", "--continue", "--html", str(html),
                       f"--property={rules}:writes_the_state", f"--property={rules}:forgets_to_return",
                       f"--property={rules}:isr_within_replicas")
    assert code == 1
    assert s["verdicts"]["writes_the_state"] == "error"
    assert s["verdicts"]["forgets_to_return"] == "error"
    assert s["verdicts"]["isr_within_replicas"] == "holds"  # the run went on past the errors
    error = s["counterexamples"]["writes_the_state"]["evidence"]["error"]
    assert error.startswith("Traceback") and "writes_the_state" in error and str(rules) in error
    assert "TypeError" in error and "mappingproxy" in error and 'state["partitions"]["t-0"]["leader"] = 7' in error
    assert "kcm" not in error.split(str(rules))[0].replace("Traceback", "")  # the user's frames only
    assert s["counterexamples"]["forgets_to_return"]["evidence"]["error"] == (
        "forgets_to_return returned NoneType None, not True or False")
    # Its scenario replays the path; `kcm run` does not know the id, so nothing is expected of it.
    scenario = tmp_path / "cex.json"
    scenario.write_text(json.dumps(s["counterexamples"]["writes_the_state"]["scenario"]))
    assert main(["run", str(scenario)]) == 0
    assert json.loads(capsys.readouterr().out)["controller"]["epoch"] == 2
    page = html.read_text()
    assert "mappingproxy" in page and "error" in page
    # The text report says it too.
    assert main(["explore", "--quiet", "--config", "tiny", f"--property={rules}:writes_the_state"]) == 1
    out = capsys.readouterr().out
    assert "error of writes_the_state: the predicate failed after" in out and "| TypeError" in out
    # And a random-walk run (the shrinker keeps the predicate failing).
    assert main(["explore", "--quiet", "--config", "tiny", "--walks", "20", "--depth", "8",
                 f"--property={rules}:writes_the_state", "--only-property", "writes_the_state"]) == 1
    out = capsys.readouterr().out
    assert "writes_the_state                   error" in out and "| TypeError" in out


def test_only_property_restricts_the_check_to_those_ids(rules, capsys):
    code, s = _explore(capsys, "--config", "tiny", f"--property={rules}:isr_within_replicas",
                       f"--property={rules}:epoch_at_most_1", "--only-property", "isr_within_replicas",
                       "--only-property", "OneLeaderPerEpoch")
    assert code == 0
    assert s["verdicts"] == {"OneLeaderPerEpoch": "holds", "isr_within_replicas": "holds"}
    # A catalogue goal the config would leave out is checked when named.
    code, s = _explore(capsys, "--config", "tiny", "--only-property", "SomeReassignmentCompletes")
    assert s["verdicts"] == {"SomeReassignmentCompletes": "never reached"}


def test_a_module_function_is_found_beside_the_user(rules, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, s = _explore(capsys, "--config", "tiny", "--property", "rules:epoch_at_most_1",
                       "--only-property", "epoch_at_most_1")
    assert code == 1 and s["verdicts"] == {"epoch_at_most_1": "violated"}


def test_the_example_rules_hold_and_fail_as_documented(capsys):
    specs = [f"--property={EXAMPLE}:{f}" for f in ("leader_is_live", "leader_epoch_at_most_2",
                                                    "leader_epochs_never_go_back")]
    code, s = _explore(capsys, "--config", "tiny", "--continue", *specs,
                       "--only-property", "leader_is_live", "--only-property", "LeaderEpochAtMost2",
                       "--only-property", "leader_epochs_never_go_back")
    assert code == 1
    assert s["verdicts"] == {"leader_is_live": "holds", "LeaderEpochAtMost2": "violated",
                             "leader_epochs_never_go_back": "holds"}


def test_conditions_travel_as_source_text(rules):
    """What an executor gets: the pickled condition compiles the text itself, with the file gone."""
    prop = user.load(f"{rules}:controller_epoch_grows")
    assert prop.expectation == STEP and prop.name == "controller_epoch_grows"
    data = pickle.dumps(prop)
    rules.unlink()
    user._MODULES.clear()
    back = pickle.loads(data)  # noqa: S301 - our own bytes
    model = BoundedSystem(load_config("tiny"))
    state = model.init_states()[0]
    action = model.actions(state)[0]
    after, effects = model.step(state, action)
    assert back.condition(model, state, action, after, effects) is True
    assert back.condition.fn is not prop.condition.fn  # compiled again, not the same function


@pytest.mark.parametrize(("value", "words"), [
    ("{dir}/missing.py:f", "cannot read"),
    ("{dir}:f", "is not a regular file"),
    ("{dir}/rules.py:nothing", "defines no nothing"),
    ("{dir}/rules.py:not_a_function", "is a int, not a function"),
    ("{dir}/bad.py:f", "bad.py:2: SyntaxError"),
    ("{dir}/raises.py:f", "loading"),
    ("{dir}/rules.py", "expected PATH.py:function"),
    ("{dir}/rules.py:1x", "not a function name"),
    ("{dir}/arity.py:f", "takes 1 parameter (the state) or 3"),
    ("{dir}/badname.py:f", "is not a name"),
    ("no_such_module_here:f", "no module named no_such_module_here"),
    ("{dir}/rules.py:epoch_at_most_1 --property={dir}/rules.py:epoch_at_most_1", "already a property's"),
    ("{dir}/clash.py:f", "already a property's"),
    ("{dir}/rules.py:epoch_at_most_1 --only-property=Nope", "--only-property Nope: no such property"),
    ("{dir}/rules.py:epoch_at_most_1 --symmetry", "not with --symmetry"),
])
def test_bad_property_flags_are_exit_2_with_one_line(rules, tmp_path, capsys, value, words):
    (tmp_path / "bad.py").write_text("def f(state):\n    return (\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('at import')\n")
    (tmp_path / "arity.py").write_text("def f(a, b):\n    return True\n")
    (tmp_path / "badname.py").write_text("def f(s):\n    return True\nf.name = '../x'\n")
    (tmp_path / "clash.py").write_text("def f(s):\n    return True\nf.name = 'OneLeaderPerEpoch'\n")
    first, *more = value.format(dir=tmp_path).split(" ")
    assert main(["explore", "--quiet", "--config", "tiny", f"--property={first}", *more]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("kcm explore: ") and cap.err.count("\n") == 1 and "Traceback" not in cap.err
    assert words in cap.err, cap.err


def test_the_state_is_the_run_commands_result_document_read_only(rules):
    prop = user.load(f"{rules}:isr_within_replicas")
    model = BoundedSystem(load_config("tiny"))
    state = model.init_states()[0]
    seen = prop.condition._view(state)
    from kcm.reference.result import result_document

    assert json.loads(json.dumps(seen, default=dict)) == json.loads(json.dumps(result_document(state)))
    assert isinstance(seen["partitions"]["t-0"]["isr"], tuple)
    with pytest.raises(TypeError):
        seen["controller"]["id"] = 5  # type: ignore[index]


def test_kinds_come_from_the_parameters(tmp_path):
    path = tmp_path / "kinds.py"
    path.write_text(textwrap.dedent('''
        def one(state):
            """A state rule."""
            return True

        def three(before, action, after, extra=None):
            return action["kind"] == action["op"]
    '''))
    assert user.load(f"{path}:one").expectation == ALWAYS
    step = user.load(f"{path}:three")
    assert step.expectation == STEP and "without a docstring" in step.rule
