"""The optional compiled build: the same model, reference, property and explorer modules compiled by Cython.

`ci/build_compiled.py` (run by `KCM_COMPILED=1 bash ci/setup.sh`) compiles the source files themselves (no
second copy of any rule) into `build/compiled/` of a source checkout, with a manifest of each source file's
SHA-256. At import, `install` puts a finder first on `sys.meta_path` that loads a module's compiled form only
when its source still has the recorded hash; a module edited since the build, a wheel install (no build
folder) or `KCM_PURE=1` gets the pure-Python source. The pure path is always there, and a test checks that
both give the same exploration.

A rebuild must not disturb a process running from the build: the loader maps each module's file, and a file
rewritten in place under a mapping kills that process with SIGBUS. So `install_file` puts a module in place by
writing a new file beside it and renaming it over the old one (a running process keeps the old file's pages),
and leaves a module whose bytes did not change alone.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent  # the source checkout (an editable install) or site-packages
BUILD = ROOT / "build" / "compiled"
MANIFEST = BUILD / "manifest.json"
# Import name -> folder of the checkout (pyproject's package-dir) of every package the build compiles.
PACKAGES = {"kcm.model": "model", "kcm.reference": "reference", "kcm.properties": "properties",
            "kcm.checkers.core": "checkers/core", "kcm.checkers.explore": "checkers/explore",
            "kcm.checkers.spark": "checkers/spark"}
# Packages compiled only in part: of checkers/, the explorers' hot path (the level loop, the bounded
# system, the checks, the visited set, the checkpoints' stored states, Spark's expansion and codec); the rest is
# I/O, Spark's driver, Z3 and test tooling, where compiling gains nothing.
ONLY = {"kcm.checkers.core": ("bounded",),
        "kcm.checkers.explore": ("bfs", "codec", "stored_states", "verdicts", "visited"),
        "kcm.checkers.spark": ("expand",)}
# The kcm modules a `.pxd` cimports (`from kcm.model.txn cimport Txn`, `cimport kcm.model.txn`).
# `from kcm.reference cimport requests` cimports the module kcm.reference.requests: the names after `cimport` count.
_CIMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(kcm(?:\.\w+)+)[ \t]+cimport\b([\w, \t]*)|cimport[ \t]+(kcm(?:\.\w+)+))",
                      re.M)


def source_of(module: str) -> Path | None:
    """The source file of a module the build may compile (of PACKAGES, and of ONLY where a package is listed)."""
    package, _, name = module.rpartition(".")
    folder = PACKAGES.get(package)
    if folder is None or (package in ONLY and name not in ONLY[package]):
        return None
    return ROOT / folder / f"{name}.py"


def digest(path: Path, _seen: frozenset[Path] = frozenset()) -> str:
    """The SHA-256 of a source file, of the Cython declarations (`.pxd`) next to it when there are any, and of
    every kcm module those declarations cimport.

    A module compiled against another's declarations (`from kcm.model.txn cimport Txn`) relies on that module's
    compiled layout: once the other is edited (and so loaded from source), this one must be too.
    """
    h = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.is_file():
        text = pxd.read_bytes()
        h.update(b"\0pxd\0" + text)
        cimported = set()
        for package, names, module in _CIMPORT.findall(text.decode("utf-8", "replace")):
            cimported.add(module or package)
            cimported.update(f"{package}.{n.strip()}" for n in names.split(",") if package and n.strip())
        for module in sorted(cimported):
            other = source_of(module)
            # `from kcm.x cimport name`: the name is a module only where its source file is
            if other is not None and other not in _seen and other != path and other.is_file():
                h.update(b"\0cimport\0" + module.encode() + digest(other, _seen | {path}).encode())
    return h.hexdigest()


class CompiledFinder:
    """Finds the compiled form of a kcm module whose source is unchanged since the build (else defers)."""

    def __init__(self, modules: dict[str, dict[str, str]], build: Path = BUILD) -> None:
        self.modules = modules  # import name -> {"source": sha256, "binary": file name under `build`}
        self.build = build
        self.loaded: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """A spec loading the extension module, when it is built and current."""
        entry = self.modules.get(fullname)
        if entry is None:
            return None
        source = source_of(fullname)
        binary = self.build / entry["binary"]
        try:
            if source is None or not binary.is_file() or digest(source) != entry["source"]:
                return None  # edited since the build (or gone): the source is the truth
        except OSError:
            return None
        self.loaded.add(fullname)
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(binary))
        return importlib.util.spec_from_file_location(fullname, binary, loader=loader)


def install(build: Path = BUILD) -> CompiledFinder | None:
    """Put the compiled build (of the folder `build`) first in the import system, if there is one and KCM_PURE is
    not set."""
    manifest = build / MANIFEST.name
    if os.environ.get("KCM_PURE") or not manifest.is_file():
        return None
    finder = _installed()
    if finder is not None:
        return finder
    try:
        modules = json.loads(manifest.read_text())["modules"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged build is ignored: the pure path still works
    finder = CompiledFinder(modules, build)
    sys.meta_path.insert(0, finder)
    return finder


def same_bytes(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (False when either is missing)."""
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()
    except OSError:
        return False


def install_file(built: Path, target: Path) -> bool:
    """Put the file `built` at `target` without touching the old file's bytes: a new file beside it, renamed over
    it (a process that mapped the old one keeps it). False, and nothing done, when `target` already holds them."""
    if same_bytes(built, target):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(built, "rb") as inp:
            shutil.copyfileobj(inp, out)
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def compiled_modules() -> list[str]:
    """The kcm modules imported so far from the compiled build (empty on the pure path)."""
    finder = _installed()
    return [] if finder is None else sorted(m for m in finder.loaded if m in sys.modules)


def fallen_back() -> list[str]:
    """The built modules imported so far from their source instead (edited since the build); empty on the pure path."""
    finder = _installed()
    return [] if finder is None else sorted(m for m in finder.modules if m in sys.modules and m not in finder.loaded)


def _installed() -> CompiledFinder | None:
    """The compiled build's finder on sys.meta_path, if `install` put one there."""
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    return None
