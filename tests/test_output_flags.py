"""A file a command writes after its work is checked before the work: a bad --html, --output, --junit-xml, ...
is one line and exit 2 at once, not after an hour's exploration (which then printed nothing else)."""

from __future__ import annotations

import importlib
import os

import pytest

from kcm.cli import COMMANDS, main

CASES = [
    ("explore", ["--config", "tiny", "--html"]),
    ("explore", ["--config", "tiny", "--markdown"]),
    ("bugs", ["--html"]),
    ("gate", ["--junit-xml"]),
    ("gate", ["--sarif"]),
    ("check-trace", ["x.jsonl", "--html"]),
    ("report", ["--output"]),
    ("table", ["--output"]),
    ("run", ["x.json", "--emit-trace"]),
]


@pytest.mark.parametrize("command, args", CASES)
@pytest.mark.parametrize("where", ["folder", "missing folder", "empty"])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_work(command, args, where, tmp_path, capsys,
                                                                           monkeypatch):
    module = importlib.import_module(f"kcm.commands.{COMMANDS[command][0]}")
    ran: list[bool] = []
    monkeypatch.setattr(module, "main", lambda _args: ran.append(True) or 0)
    target = {"folder": str(tmp_path), "missing folder": str(tmp_path / "no" / "out"), "empty": ""}[where]
    assert main([command, *args, target]) == 2
    err = capsys.readouterr().err
    flag = args[-1]
    assert not ran and err.count("\n") == 1 and err.startswith(f"kcm {command}: {flag} ") and "Traceback" not in err
    assert {"folder": "a folder", "missing folder": "no folder", "empty": "empty file name"}[where] in err


def test_a_writable_output_passes_and_the_command_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    existing = tmp_path / "old.html"
    existing.write_text("old")
    for target in ("new.html", str(existing), os.devnull):
        assert main(["explore", "--config", "tiny", "--quiet", "--html", target]) == 0
        capsys.readouterr()
    assert existing.read_text().startswith("<!DOCTYPE html>") or "<html" in existing.read_text()
