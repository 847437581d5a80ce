"""Packaging: every package folder is in the wheel; the built wheel works from an empty folder outside the
checkout and keeps the import contracts (`.importlinter`, checked by import-linter on the installed package); the
core install (no Spark, no Z3, no NumPy) runs the oracle and stays under 100 MB."""

import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE_LIMIT_MB = 100


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_listed():
    setup = _config()["tool"]["setuptools"]
    roots = setup["package-dir"]
    found = set()
    for name, folder in roots.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found == set(setup["packages"])


def test_core_dependencies_leave_out_the_heavy_engines():
    project = _config()["project"]
    core = " ".join(project["dependencies"])
    assert not any(heavy in core for heavy in ("pyspark", "z3", "numpy", "hypothesis", "rich", "graphviz"))
    extras = project["optional-dependencies"]
    assert {"spark", "prove", "explore", "all"} <= set(extras)
    assert set(extras["all"]) >= set(extras["spark"]) | set(extras["prove"]) | set(extras["explore"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", "tests")
    for item in ROOT.iterdir():
        if item.name in ("pyproject.toml", "README.md") or (item.is_dir() and (item / "__init__.py").exists()):
            (shutil.copytree(item, src / item.name, ignore=ignore) if item.is_dir() else shutil.copy(item, src))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)], check=True)
    (found,) = out.glob("kcm_kafka-*.whl")
    return found


def _venv(where: Path, spec: str) -> Path:
    venv.create(where, with_pip=True)
    py = where / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", spec], check=True)
    return where / "bin"


def _run(bindir: Path, cwd: Path, *args: str, tool: str = "kcm") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bindir / tool), *args], capture_output=True, text=True, cwd=cwd, env=env)


def _dev_requirement(name: str) -> str:
    """The dev extra's requirement of that package (its lower bound said once, in pyproject.toml)."""
    return next(r for r in _config()["project"]["optional-dependencies"]["dev"] if r.startswith(name))


def test_the_import_contracts_name_the_layers_of_the_import_layer_test():
    from configparser import ConfigParser

    from tests.test_import_layers import LAYERS

    contracts = ConfigParser()
    contracts.read(ROOT / ".importlinter")
    rows = contracts["importlinter:contract:layers"]["layers"].strip().splitlines()
    layers = [[m.strip() for m in row.split(" : ")] for row in rows]
    assert [row[0] for row in layers[1:]] == [package for package, _d in reversed(LAYERS[:-1])]
    cli = set(layers[0])
    top = {f"kcm.{p.stem}" for p in (ROOT / "kcm").glob("*.py")} | {"kcm.commands"}
    assert cli == top - {"kcm.__init__", "kcm.compiled"}  # every CLI-layer module is in the top layer


@pytest.mark.slow
def test_the_wheel_works_from_an_empty_folder(wheel, tmp_path):
    bindir = _venv(tmp_path / "venv", f"{wheel}[explore,prove]")
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", _dev_requirement("import-linter")],
                   check=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    # The import contracts, read by import-linter from the installed package, where folders are named as imports.
    lint = _run(bindir, empty, "--no-cache", "--no-logo", str(ROOT / ".importlinter"), tool="lint-imports")
    assert lint.returncode == 0 and "0 broken" in lint.stdout, lint.stdout + lint.stderr
    contracts = (ROOT / ".importlinter").read_text().count("[importlinter:contract:")
    assert f"Contracts: {contracts} kept, 0 broken." in lint.stdout and lint.stdout.count("KEPT") == contracts
    # ... and they can fail: the layers upside down break the layers contract.
    upside_down = tmp_path / "upside-down.ini"
    upside_down.write_text("[importlinter]\nroot_package = kcm\n\n[importlinter:contract:layers]\nname = reversed\n"
                           "type = layers\nlayers =\n    kcm.model\n    kcm.reference\n")
    broken = _run(bindir, empty, "--no-cache", "--no-logo", str(upside_down), tool="lint-imports")
    assert broken.returncode == 1 and "1 broken" in broken.stdout, broken.stdout + broken.stderr
    table = _run(bindir, empty, "table", "--rules", "kafka")
    assert table.returncode == 0 and "OfflineReplica" in table.stdout, table.stderr
    scenario = ROOT / "specs" / "scenarios" / "ops" / "broker-failure.json"
    shutil.copy(scenario, empty / "s.json")
    run = _run(bindir, empty, "run", "s.json")
    assert run.returncode == 0, run.stderr
    explore = _run(bindir, empty, "explore", "--config", "tiny", "--quiet")
    assert explore.returncode == 0 and "distinct states 381" in explore.stdout, explore.stderr
    prove = _run(bindir, empty, "prove", "--config", "tiny")
    assert prove.returncode == 0 and "proved" in prove.stdout, prove.stderr
    gate = _run(bindir, empty, "gate", "--skip", "prove")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert sorted(p.name for p in empty.iterdir()) == ["s.json"]  # nothing written into the working folder


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


@pytest.mark.slow
def test_the_core_install_runs_the_oracle_and_plugin_under_100_mb(wheel, tmp_path):
    bindir = _venv(tmp_path / "core", str(wheel))
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "pytest"], check=True)
    size = _size_mb(tmp_path / "core")
    print(f"core install with pytest: {size:.1f} MB (limit {CORE_LIMIT_MB} MB)")
    assert size < CORE_LIMIT_MB
    probe = subprocess.run([str(bindir / "python"), "-c", "import importlib.util as u; "
                            "print([m for m in ('pyspark', 'z3', 'numpy') if u.find_spec(m)])"],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "[]"
    traces = ROOT / "specs" / "traces"
    ok = _run(bindir, tmp_path, "check-trace", str(traces / "valid_create_online.jsonl"))
    bad = _run(bindir, tmp_path, "check-trace", str(traces / "invalid_hw_above_leo.jsonl"))
    assert (ok.returncode, bad.returncode) == (0, 1), ok.stderr + bad.stderr
    cov = _run(bindir, tmp_path, "coverage")
    assert cov.returncode == 0 and "coverage, rules kafka" in cov.stdout, cov.stderr
    missing = _run(bindir, tmp_path, "prove")
    assert missing.returncode == 2 and "pip install 'kcm-kafka[prove]'" in missing.stderr
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_oracle.py").write_text(
        "def test_valid(kcm_oracle):\n"
        f"    kcm_oracle.check_file({str(traces / 'valid_create_online.jsonl')!r})\n\n"
        "def test_invalid(kcm_oracle):\n"
        f"    kcm_oracle.check_file({str(traces / 'invalid_hw_above_leo.jsonl')!r})\n")
    done = subprocess.run([str(bindir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                          capture_output=True, text=True, cwd=suite)
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout, done.stdout


def test_the_distribution_name_is_ours_wherever_users_read_it():
    """`kcm` on PyPI is an unrelated project: pyproject, the install docs, the README and every message name ours."""
    from kcm import DISTRIBUTION

    assert _config()["project"]["name"] == DISTRIBUTION != "kcm"
    install = (ROOT / "docs" / "install.md").read_text()
    assert f"`pip install {DISTRIBUTION}` (core)" in install and f"pip install '{DISTRIBUTION}[all]'" in install
    assert f"pip install '{DISTRIBUTION}[all]'" in (ROOT / "README.md").read_text()
    texts = [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"),
             *(p for d in ("kcm", "model", "reference", "properties", "checkers") for p in (ROOT / d).rglob("*.py"))]
    stale = [str(p.relative_to(ROOT)) for p in texts
             if any(old in p.read_text(encoding="utf-8") for old in ("pip install kcm ", "pip install kcm`",
                                                                      "'kcm[", '"kcm['))]
    assert stale == []
