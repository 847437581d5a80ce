"""The small seed set of ci/fuzz.py: malformed inputs of every kind end as the exit-code table says.

The full run is a benchmark (`python ci/fuzz.py --cases 10000`, docs/robustness.md); this one takes about a
minute on two busy cores.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("kcm_ci_fuzz", ROOT / "ci" / "fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(ROOT / "ci" / "fuzz.py"), "--json", *args], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def test_seed_set_of_every_input_kind_but_checkpoints():
    summary = _run("--cases", "250", "--seed", "1", "--kinds", "run,trace,log,config,flags")
    assert summary["cases"] == 250
    assert summary["wrong"] == 0, json.dumps(summary["first_wrong"], indent=1)[:4000]
    for kind, row in summary["by_kind"].items():
        assert row["cases"] == 50 and row.get("exit 2", 0) > 0, (kind, row)  # the mutations do reach the checks


def test_seed_set_of_checkpoints():
    summary = _run("--cases", "60", "--seed", "1", "--kinds", "checkpoint")
    assert summary["wrong"] == 0, json.dumps(summary["first_wrong"], indent=1)[:4000]


def test_cases_are_reproducible(tmp_path):
    fuzz = _fuzz_module()
    corpus = fuzz.Corpus()
    corpus.checkpoint = b"\x80\x05not a real checkpoint"
    made = []
    for attempt in range(2):
        rows = []
        for index in range(40):
            work = tmp_path / f"{attempt}-{index}"
            work.mkdir()
            kind = fuzz.KINDS[index % len(fuzz.KINDS)]
            case = fuzz.make_case(kind, fuzz.case_rng(5, index), corpus, work)
            data = [Path(a).read_bytes() for a in case.argv if a.startswith(str(work)) and Path(a).is_file()]
            rows.append((case.label, [a.replace(str(work), "W") for a in case.argv], data))
        made.append(rows)
    assert made[0] == made[1]
    assert len({label for label, _, _ in made[0]}) > 10  # and they differ from each other


def test_a_traceback_is_counted():
    fuzz = _fuzz_module()
    case = fuzz.Case("run", "run", ["run", "x.json"], "test")
    crash = fuzz.Outcome(1, 0, b"", b"Traceback (most recent call last):\n  ...\nValueError: boom\n")
    assert fuzz.verdicts(case, crash) == ["traceback"]
    assert fuzz.traceback_kind(crash.stderr.decode()) == "ValueError"
    assert fuzz.verdicts(case, fuzz.Outcome(None)) == ["hang"]
    assert fuzz.verdicts(case, fuzz.Outcome(2, 0, b"", b"kcm run: x.json: one line\n")) == []
    assert fuzz.verdicts(case, fuzz.Outcome(2, 0, b"", b"usage: ...\nkcm run: error\n")) == [
        "error of more than one line"]
    assert fuzz.verdicts(case, fuzz.Outcome(3)) == ["exit 3"]


def test_a_forked_case_runs_with_caps_and_reports_its_exit():
    fuzz = _fuzz_module()
    out = fuzz.run_forked(["run", str(ROOT / "specs" / "scenarios" / "ops" / "nope.json")], 2 << 30, 30, 60)
    assert out.code == 2 and b"cannot read" in out.stderr
