"""CrossHair over the icontract-guarded transitions and the table laws, plus the laws checked exhaustively.

CrossHair runs as a subprocess; the laws must hold on every rule set, and a table with a planted illegal move
(OnlinePartition -> NewPartition) must be caught both by the exhaustive check and by CrossHair's symbolic search.

CrossHair's search is bounded by a count of iterations, never by seconds: its path choices and Z3's come from fixed
seeds, so an iteration-bounded search explores the same inputs on every run, however busy the machine is, and its
verdict cannot change from run to run. (A per-condition time budget made the planted move a matter of luck: found
in about 1 run in 3.) The per-path CPU bound is far above what one path of these small functions takes, so it never
cuts a path short.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kcm.checkers.gate import table_contracts as tc
from kcm.model import tables
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R

ROOT = Path(__file__).resolve().parents[1]
# CrossHair executes Python source symbolically: the model's compiled form (kcm/compiled.py) would hide it.
PURE = dict(os.environ, KCM_PURE="1")
TARGETS = ["model/transitions.py", "checkers/gate/table_contracts.py"]
# Iterations without progress before CrossHair stops: the planted move is found from about 30 on (measured), so the
# planted search runs 100; the sweep of the whole model runs 50 on every condition.
SWEEP_ITERATIONS = 50
PLANTED_ITERATIONS = 100
BOUND = ["--per_path_timeout=60"]
CHECK = ["-m", "crosshair", "check", "--analysis_kind=icontract", f"--max_uninteresting_iterations={SWEEP_ITERATIONS}",
         *BOUND]
needs_crosshair = pytest.mark.skipif(importlib.util.find_spec("crosshair") is None,
                                     reason="crosshair-tool is not installed")

# The same planted bug as the mutant "partition Online -> New": applied before CrossHair starts.
PLANTED = """
import sys
from kcm.model import tables
original = tables.RuleSet.allows_partition
planted = ("OnlinePartition", "NewPartition")
tables.RuleSet.allows_partition = lambda self, a, b: (a, b) == planted or original(self, a, b)
from crosshair.main import main
sys.argv = ["crosshair", "check", "--analysis_kind=icontract", *sys.argv[1:],
            "kcm.checkers.gate.table_contracts.partition_move_allowed"]
main()
"""


def test_table_laws_hold_on_every_rule_set():
    assert tc.violations() == []


def test_a_planted_illegal_partition_move_breaks_a_law(monkeypatch):
    original = tables.RuleSet.allows_partition
    monkeypatch.setattr(tables.RuleSet, "allows_partition",
                        lambda self, a, b: (a, b) == (P.ONLINE, P.NEW) or original(self, a, b))
    found = tc.violations()
    assert found and all("OnlinePartition -> NewPartition" in v for v in found)
    assert any("only when it is created" in v for v in found)


def test_deleting_a_live_replica_breaks_a_law(monkeypatch):
    original = tables.RuleSet.allows_replica
    monkeypatch.setattr(tables.RuleSet, "allows_replica",
                        lambda self, a, b: (a, b) == (R.ONLINE, R.DELETION_STARTED) or original(self, a, b))
    assert any("deletion starts only from OfflineReplica" in v for v in tc.violations())


@needs_crosshair
@pytest.mark.slow
def test_crosshair_finds_no_counterexample():
    proc = subprocess.run([sys.executable, *CHECK, *TARGETS], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=PURE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == ""


@needs_crosshair
@pytest.mark.slow
def test_crosshair_finds_the_planted_move():
    proc = subprocess.run([sys.executable, "-c", PLANTED, f"--max_uninteresting_iterations={PLANTED_ITERATIONS}",
                           *BOUND], cwd=ROOT, capture_output=True, text=True, timeout=600, env=PURE)
    assert proc.returncode != 0
    assert "partition_move_allowed" in proc.stdout and "'OnlinePartition', 'NewPartition'" in proc.stdout
