"""The import graph of kcm's source runs one way: model <- reference <- properties <- checkers <- kcm (the CLI).

The reference controller reads only the model; the properties are predicates over model values (Cluster); the
drivers that join both (the scenario runner's expect_violation, the bounded system every explorer runs) are
checkers.

Read from the source by AST (every `kcm.*` import, at module level or inside a function, and every string naming
a kcm module, as importlib dispatch would use), because the packages live in directories named differently from
their import paths (pyproject's package-dir: kcm.model is model/, ...), which import-linter and grimp cannot follow
from a source tree; the import-linter contracts (`.importlinter`) are checked on the installed wheel instead
(tests/test_packaging.py). The model and the reference also name no upper layer in words: a string or comment of
theirs naming an upper layer's module or source path fails here.
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

from kcm.checkers.explore.liveness import sccs

ROOT = Path(__file__).resolve().parent.parent
# Each layer's import path and source directory, lowest first; a module may import only its own layer or lower.
# The root package (kcm/__init__.py: the version) and the import finder it installs (kcm/compiled.py), which
# Python loads before any kcm.* module: below every layer, importing none (the finder names packages in strings
# to find their files, which is not an import).
ROOT_MODULES = ("kcm", "kcm.compiled")
LAYERS = (("kcm.model", "model"), ("kcm.reference", "reference"), ("kcm.properties", "properties"),
          ("kcm.checkers", "checkers"), ("kcm", "kcm"))


def _module_name(path: Path) -> str:
    for package, directory in LAYERS:
        base = ROOT / directory
        if base in path.parents:
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            return ".".join([package, *parts])
    raise ValueError(path)


def _layer(module: str) -> int:
    if module in ROOT_MODULES:
        return -1
    for rank, (package, _d) in enumerate(LAYERS):
        if module == package or module.startswith(package + "."):
            return rank
    raise ValueError(module)


def _imports(path: Path, module: str, strings: bool = True) -> set[str]:
    """Every kcm module the file imports, wherever the import statement stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif strings and isinstance(node, ast.Constant) and str(node.value).startswith("kcm."):
            found.add(node.value)  # a module named in a string (importlib dispatch) is an edge too
    return {m for m in found if m == "kcm" or m.startswith("kcm.")}


def import_graph() -> dict[str, set[str]]:
    """Module -> the kcm modules (files) it imports."""
    files = {_module_name(p): p for _p, d in LAYERS for p in (ROOT / d).rglob("*.py")}
    graph = {}
    for module, path in files.items():
        found = _imports(path, module, strings=module not in ROOT_MODULES)
        graph[module] = {m for m in found if m in files and m != module}
    return graph


def upward_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of a higher layer than the importer's."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if _layer(b) > _layer(a))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, as the liveness checker runs it)."""
    nodes = sorted(set(graph) | {w for targets in graph.values() for w in targets})
    succ = {v: sorted(graph.get(v, ())) for v in nodes}
    return sorted(sorted(c) for c in sccs(nodes, succ) if len(c) > 1)


# A kcm module named in text (`kcm.checkers.gate.bugs`), or a source path (`reference/truncation.py`, `checkers/`).
_DOTTED = re.compile(r"\bkcm(?:\.\w+)+")
_PATH = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(d) for _p, d in LAYERS) + r")/(?=[\w*])")
DATA_PACKAGES = ("kcm.specs",)  # shipped data read through importlib.resources: no layer


def _texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal and comment of a source file: where a module may name another."""
    with path.open("rb") as fh:
        return [(tok.start[0], tok.string) for tok in tokenize.tokenize(fh.readline)
                if tok.type in (tokenize.STRING, tokenize.COMMENT)]


def upper_names(path: Path, rank: int, texts: list[tuple[int, str]] | None = None) -> list[tuple[int, str]]:
    """(line, name) for each module or source path of a layer above `rank` named in the file's strings or
    comments: a lower layer that names an upper one depends on it in meaning, even with no import."""
    found = []
    for line, text in _texts(path) if texts is None else texts:
        for name in _DOTTED.findall(text):
            name = name.rstrip(".")
            if not name.startswith(DATA_PACKAGES) and _layer(name) > rank:
                found.append((line, name))
        for directory in _PATH.findall(text):
            if next(r for r, (_p, d) in enumerate(LAYERS) if d == directory) > rank:
                found.append((line, directory + "/"))
    return found


def test_the_model_and_the_reference_name_no_upper_layer() -> None:
    bad = {}
    for rank, (_package, directory) in enumerate(LAYERS[:2]):
        for path in sorted((ROOT / directory).rglob("*.py")):
            names = upper_names(path, rank)
            if names:
                bad[str(path.relative_to(ROOT))] = names
    assert bad == {}


def test_the_name_check_sees_a_module_and_a_path_in_strings_and_comments() -> None:
    texts = [(1, '"""Read by `kcm.checkers.gate.bugs`."""'), (2, "# see reference/truncation.py"),
             (3, '"kcm.model.fmap"'), (4, "# ships in kcm.specs"), (5, '"model/txn.py"')]
    model_rank = 0
    assert upper_names(ROOT / "model" / "fmap.py", model_rank, texts) == [
        (1, "kcm.checkers.gate.bugs"), (2, "reference/")]
    assert upper_names(ROOT / "model" / "fmap.py", 1, texts) == [(1, "kcm.checkers.gate.bugs")]
    assert upper_names(ROOT / "model" / "txn.py", model_rank) == []


def test_no_upward_import() -> None:
    graph = import_graph()
    assert upward_edges(graph) == []
    assert graph["kcm"] <= set(ROOT_MODULES) and graph["kcm.compiled"] == set()


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_checks_see_an_upward_edge_and_a_cycle() -> None:
    graph = import_graph()
    assert graph["kcm.checkers.explore.bfs"]  # the graph is read at all
    bad = {**graph, "kcm.model.cluster": graph["kcm.model.cluster"] | {"kcm.reference.api"},
           "kcm.reference.api": graph["kcm.reference.api"] | {"kcm.reference.result"},
           "kcm.reference.result": graph["kcm.reference.result"] | {"kcm.reference.api"}}
    assert ("kcm.model.cluster", "kcm.reference.api") in upward_edges(bad)
    assert any({"kcm.reference.api", "kcm.reference.result"} <= set(c) for c in cycles(bad))
