"""What a new user meets first: a core install (no NumPy, no Z3) lists, helps and gates; `kcm run` of a
counterexample names its property; the explorer's time estimate holds steady; the wheel's data files."""

import subprocess
import sys
import tomllib
from pathlib import Path

from kcm.checkers.explore.level_loop import eta as _eta

ROOT = Path(__file__).resolve().parent.parent
# The optional engines' modules made unimportable, as in a core install (`pip install kcm-kafka`).
CORE = ("import sys\nsys.modules['numpy'] = sys.modules['z3'] = None\nfrom kcm.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")


def core(*args):
    return subprocess.run([sys.executable, "-c", CORE, *args], capture_output=True, text=True, cwd=ROOT)


def test_a_core_install_helps_lists_and_gates_without_numpy_or_z3():
    done = core("explore", "--help")
    assert done.returncode == 0 and "--config" in done.stdout and "--markdown" in done.stdout, done.stderr
    done = core("bugs", "--list")
    assert done.returncode == 0 and "KAFKA-2729" in done.stdout, done.stderr
    done = core("explore", "--config", "tiny")
    assert done.returncode == 2 and "pip install 'kcm-kafka[explore]'" in done.stderr
    done = core("gate", "--skip", "scenarios", "--no-cache", "--junit-xml", "/dev/null")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.split()[:2] == ["prove", "skipped"] and "needs z3" in line and "kcm-kafka[prove]" in line
               for line in lines)
    assert any(line.split()[:2] == ["explore", "skipped"] and "needs numpy" in line for line in lines)
    assert any(line.split()[:2] == ["traces", "passed"] for line in lines)
    assert lines[-1].startswith("gate passed in") and "prove, explore not run" in lines[-1]


def test_rules_has_help_text_in_table_and_prove():
    for command in ("table", "prove"):
        done = subprocess.run([sys.executable, "-m", "kcm.cli", command, "--help"], capture_output=True, text=True)
        text = " ".join(done.stdout.split())
        assert done.returncode == 0 and "--rules {kafka,kafka-0.8,seeds} the rule set" in text, done.stdout


def test_run_of_a_counterexample_names_the_property_it_reproduces():
    scenario = ROOT / "specs" / "scenarios" / "bugs" / "kip320-stale-follower-fetch.json"
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "run", str(scenario)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("kcm run: counterexample reproduced: LogsAgreeBelowHw is first violated after "
                                  "step 19 (")
    assert done.stdout.lstrip().startswith("{")  # stdout stays the result document alone


# `large`'s level sizes (level 0: the initial states) from a whole run.
LARGE = [13, 132, 1119, 7687, 39968, 154378, 438922, 915705, 1452372, 1799198, 1737021, 1319467, 763653, 331813,
         99592, 19522, 1961]


def test_the_time_estimate_waits_for_shrinking_levels_then_holds_within_ten_percent():
    # one state a second: the estimate at the start of each level against the states still to expand
    estimates = []
    for level in range(1, len(LARGE)):
        done = sum(LARGE[:level])
        estimates.append((_eta(LARGE[:level + 1], LARGE[level], 0, 0, done, float(done)), sum(LARGE) - done))
    first = LARGE.index(max(LARGE)) + 1  # the first level smaller than the one before
    assert all(eta is None for eta, _ in estimates[:first - 1])
    assert all(abs(eta / left - 1) < 0.1 for eta, left in estimates[first - 1:]), estimates
    # within a level, what this level has found so far does not move it; only the states expanded do
    assert _eta(LARGE[:12], LARGE[11], 1000, 5, 100, 1.0) == _eta(LARGE[:12], LARGE[11], 1000, 90_000, 100, 1.0)
    assert _eta([1, 4, 16], 16, 0, 0, 21, 1.0) is None and _eta([1, 4], 4, 0, 0, 5, 1.0) is None


def test_every_file_under_specs_ships_in_the_wheel():
    """The wheel's data files are package-data's patterns alone (include-package-data is off, so that setuptools
    does not warn about the data folders): every tracked file under specs/ must match one."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setup["include-package-data"] is False
    patterns = setup["package-data"]["kcm.specs"]
    files = subprocess.run(["git", "ls-files", "specs"], capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert files
    shipped = {str(f.relative_to(ROOT)) for pattern in patterns for f in (ROOT / "specs").glob(pattern)}
    assert not [f for f in files if f not in shipped and not f.endswith(".py")]
