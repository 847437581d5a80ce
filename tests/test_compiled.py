"""The optional compiled build (kcm.compiled): the same explorations as the pure-Python source, and a safe fallback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kcm import compiled

PROBE = """
import json, sys
from kcm.checkers import bfs
from kcm.compiled import compiled_modules
from kcm.checkers.bounded import BoundedSystem, load_config
out = {}
for name in sys.argv[1:]:
    found = bfs.explore(BoundedSystem(load_config(name)))
    out[name] = [found.distinct_states, found.transitions, found.depth,
                 {k: [a.to_step() for a in v] for k, v in found.violations.items()}, sorted(found.reached)]
print(json.dumps({"runs": out, "compiled": compiled_modules()}))
"""


def _probe(pure: bool, *configs: str) -> dict:
    env = dict(os.environ)
    env.pop("KCM_PURE", None)
    if pure:
        env["KCM_PURE"] = "1"
    done = subprocess.run([sys.executable, "-c", PROBE, *configs], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not compiled.MANIFEST.is_file(), reason="no compiled build (KCM_COMPILED=1 bash ci/setup.sh)")
def test_the_compiled_build_explores_exactly_as_the_source():
    pure = _probe(True, "tiny", "unclean", "bugs/KAFKA-2729")
    fast = _probe(False, "tiny", "unclean", "bugs/KAFKA-2729")
    assert pure["compiled"] == []
    assert {"kcm.reference.api", "kcm.model.txn", "kcm.checkers.bfs", "kcm.checkers.bounded",
            "kcm.properties.reads"} <= set(fast["compiled"])
    assert fast["runs"] == pure["runs"]


def test_a_module_edited_since_the_build_or_missing_its_binary_loads_from_source(tmp_path):
    source = compiled.source_of("kcm.model.txn")
    assert source is not None and source.is_file()
    stale = compiled.CompiledFinder({"kcm.model.txn": {"source": "0" * 64, "binary": "txn.so"}})
    assert stale.find_spec("kcm.model.txn") is None
    missing = compiled.CompiledFinder({"kcm.model.txn": {"source": compiled.digest(source),
                                                          "binary": "no-such-binary.so"}})
    assert missing.find_spec("kcm.model.txn") is None
    assert stale.find_spec("kcm.checkers.bfs") is None  # only the modules the build lists are ever redirected
    assert compiled.source_of("kcm.checkers.bfs") is not None  # the explorers' hot path is compiled
    assert compiled.source_of("kcm.checkers.spark_bfs") is None  # the rest of checkers/ is not
    assert compiled.source_of("kcm.cli") is None
