"""Calls into the data plane (kcm.reference.dataplane) that are skipped while it lacks a hook."""

from __future__ import annotations

import importlib
from typing import Any


def call(name: str, *args: Any) -> None:
    """Call kcm.reference.dataplane.<name>(*args) if the module defines it."""
    try:
        dataplane = importlib.import_module("kcm.reference.dataplane")
    except ModuleNotFoundError as err:
        if err.name != "kcm.reference.dataplane":
            raise
        return
    fn = getattr(dataplane, name, None)
    if fn is not None:
        fn(*args)
