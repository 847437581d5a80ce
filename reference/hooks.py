"""Calls into the data plane (kcm.reference.dataplane) that are skipped while it lacks a hook."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

_dataplane: list[ModuleType] = []  # the data plane module once imported (imported on first use: it imports us)


def call(name: str, *args: Any) -> None:
    """Call kcm.reference.dataplane.<name>(*args) if the module defines it."""
    if _dataplane:
        dataplane = _dataplane[0]
    else:
        try:
            dataplane = importlib.import_module("kcm.reference.dataplane")
        except ModuleNotFoundError as err:
            if err.name != "kcm.reference.dataplane":
                raise
            return
        _dataplane.append(dataplane)
    fn = getattr(dataplane, name, None)
    if fn is not None:
        fn(*args)
