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
from kcm.checkers.explore import bfs
from kcm.compiled import compiled_modules
from kcm.checkers.core.bounded import BoundedSystem, load_config
out = {}
for name in sys.argv[1:]:
    found = bfs.explore(BoundedSystem(load_config(name)))
    out[name] = [found.distinct_states, found.transitions, found.depth,
                 {k: [a.to_step() for a in v] for k, v in found.violations.items()}, sorted(found.reached)]
print(json.dumps({"runs": out, "compiled": compiled_modules()}))
"""


# The Spark engine's hot path (its codec and its expansion) run as the driver runs a small level, no Spark needed:
# five levels of a config, each successor row, its decoded state's fingerprint, and the summaries.
SPARK_PROBE = """
import json, sys
import pyarrow as pa
from kcm.checkers.spark import bfs as spark_bfs
from kcm.checkers.spark.expand import NAMES, order_key, to_long
from kcm.checkers.explore.codec import CODEC
from kcm.compiled import compiled_modules
from kcm.checkers.core.bounded import BoundedSystem, load_config
model = BoundedSystem(load_config(sys.argv[1]))
class Sink:
    value = {}
    def add(self, item):
        self.value.update(item)
sink, seen, levels = Sink(), set(), []
frontier = []
for i, s in enumerate(model.init_states()):
    fp = to_long(model.fingerprint(s))
    if fp not in seen:
        seen.add(fp)
        frontier.append((fp, order_key(fp), i, -1, CODEC.encode(s)))
for level in range(5):
    cols = list(zip(*frontier))
    batch = pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, (pa.int64(), pa.int64(), pa.int32(),
                                        pa.int64(), pa.binary()))], names=NAMES)
    rows = []
    for out in spark_bfs.expander(model, level, sink, True, "probe")(iter([batch])):
        rows += list(zip(*(c.to_pylist() for c in out.columns)))
    levels.append(sorted([r[0], r[1], r[2], r[3], to_long(model.fingerprint(CODEC.decode(r[4])))] for r in rows))
    frontier = sorted((r for r in rows if r[0] not in seen), key=lambda r: r[1:3])
    seen.update(r[0] for r in frontier)
print(json.dumps({"levels": levels, "summaries": sorted(map(str, sink.value.items())),
                  "compiled": compiled_modules()}))
"""


def _probe(pure: bool, *configs: str, probe: str = PROBE) -> dict:
    env = dict(os.environ)
    env.pop("KCM_PURE", None)
    if pure:
        env["KCM_PURE"] = "1"
    done = subprocess.run([sys.executable, "-c", probe, *configs], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not compiled.MANIFEST.is_file(), reason="no compiled build (KCM_COMPILED=1 bash ci/setup.sh)")
def test_the_compiled_build_explores_exactly_as_the_source():
    pure = _probe(True, "tiny", "unclean", "bugs/KAFKA-2729")
    fast = _probe(False, "tiny", "unclean", "bugs/KAFKA-2729")
    assert pure["compiled"] == []
    assert {"kcm.reference.api", "kcm.model.txn", "kcm.checkers.explore.bfs", "kcm.checkers.core.bounded",
            "kcm.properties.reads"} <= set(fast["compiled"])
    assert fast["runs"] == pure["runs"]


@pytest.mark.skipif(not compiled.MANIFEST.is_file(), reason="no compiled build (KCM_COMPILED=1 bash ci/setup.sh)")
def test_the_compiled_spark_codec_and_expansion_send_exactly_what_the_source_sends():
    pure = _probe(True, "controller", probe=SPARK_PROBE)
    fast = _probe(False, "controller", probe=SPARK_PROBE)
    assert pure["compiled"] == []
    assert {"kcm.checkers.spark.expand", "kcm.checkers.explore.codec"} <= set(fast["compiled"])
    assert fast["levels"] == pure["levels"] and fast["summaries"] == pure["summaries"]
    assert all(row[0] == row[4] for level in pure["levels"] for row in level)  # each state decodes to itself
    assert sum(map(len, pure["levels"])) > 1000


def test_a_module_edited_since_the_build_or_missing_its_binary_loads_from_source(tmp_path):
    source = compiled.source_of("kcm.model.txn")
    assert source is not None and source.is_file()
    stale = compiled.CompiledFinder({"kcm.model.txn": {"source": "0" * 64, "binary": "txn.so"}})
    assert stale.find_spec("kcm.model.txn") is None
    missing = compiled.CompiledFinder({"kcm.model.txn": {"source": compiled.digest(source),
                                                          "binary": "no-such-binary.so"}})
    assert missing.find_spec("kcm.model.txn") is None
    assert stale.find_spec("kcm.checkers.explore.bfs") is None  # only the modules the build lists are ever redirected
    assert compiled.source_of("kcm.checkers.explore.bfs") is not None  # the explorers' hot path is compiled
    assert compiled.source_of("kcm.checkers.spark.bfs") is None  # the rest of checkers/ is not
    assert compiled.source_of("kcm.cli") is None


def test_a_module_compiled_against_anothers_declarations_is_stale_once_the_other_is_edited(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "txn.py").write_text("class Txn: pass\n")
    (folder / "txn.pxd").write_text("cdef class Txn:\n    pass\n")
    (folder / "user.py").write_text("def f(t): return t\n")
    (folder / "user.pxd").write_text("# declarations\nfrom kcm.model.txn cimport Txn\n")
    (folder / "plain.py").write_text("def f(t): return t\n")
    monkeypatch.setattr(compiled, "ROOT", tmp_path)
    user, plain = compiled.digest(folder / "user.py"), compiled.digest(folder / "plain.py")
    (folder / "txn.py").write_text("class Txn:\n    x = 1\n")
    assert compiled.digest(folder / "user.py") != user  # it cimports kcm.model.txn, whose source changed
    assert compiled.digest(folder / "plain.py") == plain
    user = compiled.digest(folder / "user.py")
    (folder / "txn.pxd").write_text("cdef class Txn:\n    cdef object x\n")
    assert compiled.digest(folder / "user.py") != user  # and whose declarations changed
    # A comment naming a module is not a cimport.
    (folder / "plain.pxd").write_text("# from kcm.model.txn cimport Txn\n")
    plain = compiled.digest(folder / "plain.py")
    (folder / "txn.py").write_text("class Txn:\n    y = 2\n")
    assert compiled.digest(folder / "plain.py") == plain


@pytest.mark.skipif(not compiled.MANIFEST.is_file(), reason="no compiled build (KCM_COMPILED=1 bash ci/setup.sh)")
def test_no_installed_module_is_the_instrumented_build_of_a_profile_guided_build():
    # An instrumented module (the first step of ci/build_compiled.py's profile-guided build) writes profile data at
    # every exit and aborts a process whose profile it finds changed: only the final build may be installed.
    binaries = sorted(compiled.BUILD.glob("*.so"))
    assert binaries
    instrumented = [b.name for b in binaries if b"__gcov_" in b.read_bytes()]
    assert instrumented == []


def test_a_module_named_after_cimport_counts_as_cimported(tmp_path, monkeypatch):
    folder = tmp_path / "reference"
    folder.mkdir()
    (folder / "requests.py").write_text("class RequestBatch: pass\n")
    (folder / "requests.pxd").write_text("cdef class RequestBatch:\n    pass\n")
    (folder / "machine.py").write_text("def f(t): return t\n")
    (folder / "machine.pxd").write_text("from kcm.reference cimport leadership, requests\n")
    monkeypatch.setattr(compiled, "ROOT", tmp_path)
    machine = compiled.digest(folder / "machine.py")
    (folder / "requests.py").write_text("class RequestBatch:\n    x = 1\n")
    assert compiled.digest(folder / "machine.py") != machine  # `from kcm.reference cimport requests`
