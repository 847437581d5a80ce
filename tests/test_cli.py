"""The command line: --version, commands imported lazily, a missing extra named with the install line."""

import subprocess
import sys
from pathlib import Path

import kcm

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "specs" / "scenarios" / "ops" / "broker-failure.json"


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_version():
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"kcm {kcm.__version__}"


def test_help_imports_no_command_and_run_imports_only_its_own():
    done = python("import sys\nfrom kcm import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
                  "print(sorted(m for m in sys.modules if m.startswith('kcm.commands.')))\n"
                  f"cli.main(['run', {str(SCENARIO)!r}])\n"
                  "print(sorted(m for m in sys.modules if m.startswith('kcm.commands.')))")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "explore" in done.stdout and "[]" in lines and "['kcm.commands.run']" in lines


def _without(module: str, argv: list[str]) -> subprocess.CompletedProcess:
    return python(f"import sys\nsys.modules[{module!r}] = None\nfrom kcm.cli import main\nsys.exit(main({argv!r}))")


def test_a_command_whose_extra_is_missing_names_the_extra_and_others_still_run():
    prove = _without("z3", ["prove"])
    assert prove.returncode == 2 and "pip install 'kcm-kafka[prove]'" in prove.stderr
    assert len(prove.stderr.strip().splitlines()) == 1 and "Traceback" not in prove.stderr
    explore = _without("numpy", ["explore", "--config", "tiny"])
    assert explore.returncode == 2 and "pip install 'kcm-kafka[explore]'" in explore.stderr
    run = _without("numpy", ["run", str(SCENARIO)])
    assert run.returncode == 0, run.stderr
    table = _without("z3", ["table", "--rules", "kafka"])
    assert table.returncode == 0 and "OfflineReplica" in table.stdout
