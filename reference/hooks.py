"""Calls into the data plane (kcm.reference.dataplane) that are skipped while it lacks a hook."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

_dataplane: list[ModuleType] = []  # the data plane module once imported (imported on first use: it imports us)


def dataplane_module() -> ModuleType | None:
    """The data plane module, imported on first use; None when it is not installed."""
    if _dataplane:
        return _dataplane[0]
    try:
        dataplane = importlib.import_module("kcm.reference.dataplane")
    except ModuleNotFoundError as err:
        if err.name != "kcm.reference.dataplane":
            raise
        return None
    _dataplane.append(dataplane)
    return dataplane


def call(name: str, *args: Any) -> None:
    """Call kcm.reference.dataplane.<name>(*args) if the module defines it."""
    dataplane = _dataplane[0] if _dataplane else dataplane_module()
    if dataplane is None:
        return
    # Looked up at each call (not cached) so that a patched data plane function is the one called.
    fn = getattr(dataplane, name, None)
    if fn is not None:
        fn(*args)
