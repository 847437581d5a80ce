"""ci/mutants.py: mutants are applied where their rule lives, undone afterwards, and every one is caught."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from kcm.model import tables, transitions
from kcm.model.cluster import ClusterConfig
from kcm.model.errors import IllegalStateTransition
from kcm.model.states import PartitionState as P
from kcm.model.txn import Txn

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("kcm_ci_mutants", ROOT / "ci" / "mutants.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


mutants = _load()


def _online_to_new_allowed() -> bool:
    return tables.rule_set("seeds").allows_partition(P.ONLINE, P.NEW)


def test_a_mutant_reaches_the_state_machines_and_is_undone():
    from kcm.model.cluster import initial_cluster

    config = ClusterConfig((0, 1))
    txn = Txn(config, initial_cluster(config))
    txn.ctx.partition_states[("t", 0)] = P.ONLINE
    with mutants.MUTANTS[0].apply():
        assert _online_to_new_allowed()
        txn.set_partition_state(("t", 0), P.NEW)  # the guarded move itself now lets it through
    assert not _online_to_new_allowed()
    txn.ctx.partition_states[("t", 0)] = P.ONLINE
    with pytest.raises(IllegalStateTransition):
        txn.set_partition_state(("t", 0), P.NEW)


def test_replaced_patches_every_import_site_and_restores_them():
    original = transitions.partition_move
    import kcm.model.txn as txn_module

    assert txn_module.partition_move is original
    with mutants.replaced(transitions, "partition_move", lambda f: lambda *a: "patched"):
        assert transitions.partition_move(None, "t-0", P.ONLINE, P.NEW) == "patched"
        assert txn_module.partition_move(None, "t-0", P.ONLINE, P.NEW) == "patched"
    assert transitions.partition_move is original and txn_module.partition_move is original


def test_a_missing_piece_is_reported_not_applicable():
    with pytest.raises(mutants.Missing, match="kcm.nowhere missing"):
        mutants.module("kcm.nowhere")
    with pytest.raises(mutants.Missing, match="no_such_rule missing"):
        with mutants.replaced(tables.RuleSet, "no_such_rule", lambda f: f):
            pass


def test_unknown_mutant_is_refused(capsys):
    assert mutants.main(["--only", "nope"]) == 2
    assert "unknown mutant(s) nope" in capsys.readouterr().err


def test_the_table_laws_catch_the_illegal_partition_move(capsys):
    assert mutants.main(["--fast", "--first", "--only", "online-to-new"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("online-to-new"))
    assert "table laws" in row and "SURVIVED" not in row


def test_a_catcher_that_fires_without_a_mutant_is_a_false_alarm(monkeypatch, capsys):
    monkeypatch.setattr(mutants, "CATCHERS", [mutants.Catcher("always", lambda fast: "boom", True)])
    assert mutants.main(["--fast"]) == 2
    assert "FALSE ALARM" in capsys.readouterr().out


def test_a_mutant_no_catcher_sees_survives(monkeypatch, capsys):
    monkeypatch.setattr(mutants, "CATCHERS", [mutants.Catcher("never", lambda fast: None, True)])
    assert mutants.main(["--fast", "--only", "online-to-new"]) == 1
    assert "SURVIVED" in capsys.readouterr().out


def test_every_mutant_is_caught_by_its_cheapest_catcher(capsys):
    """All eight, each stopped at the first catcher that sees it (`python ci/mutants.py --fast --first`)."""
    status = mutants.main(["--fast", "--first"])
    out = capsys.readouterr().out
    assert status == 0, out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    for m in mutants.MUTANTS:
        assert m.name in rows and "SURVIVED" not in rows[m.name] and "NOT APPLICABLE" not in rows[m.name], out
    assert "table laws" in rows["online-to-new"] and "scenarios" in rows["no-zkversion-check"], out


@pytest.mark.slow
def test_the_hypothesis_machine_alone_catches_the_controller_mutants(capsys):
    argv = ["--fast", "--catcher", "hypothesis", "--only", "no-epoch-bump", "--only", "oar-out-early"]
    status = mutants.main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert "hypothesis" in rows["no-epoch-bump"] and "hypothesis" in rows["oar-out-early"], out
