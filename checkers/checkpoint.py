"""Checkpoints of a breadth-first search: written atomically at level boundaries, read back by `--resume`.

A checkpoint holds everything the level loop needs to go on: the visited arrays, the frontier (as states, so
either engine can resume it), the verdicts and counters so far, the depth, the time already spent, and the
configuration it belongs to (a checkpoint of another configuration is refused).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

# Parent links hold positions in model.actions(state): a release that offers actions differently must bump this,
# or an older checkpoint would replay the wrong actions (2: provably idle actions are no longer offered).
FORMAT = "kcm-explore-checkpoint/3"  # 3: fingerprints combined from the parts


class BadCheckpoint(ValueError):
    """A checkpoint that cannot be resumed; the message says why."""


class Checkpointer:
    """Writes a checkpoint to one file at most once every `every` seconds (0: at every level)."""

    def __init__(self, path: str | Path, every: float, key: Any) -> None:
        self.path = Path(path)
        self.every = every
        self.key = key
        self.last = time.monotonic()
        self.written = 0

    def due(self) -> bool:
        """Whether a level boundary now should write a checkpoint."""
        return time.monotonic() - self.last >= self.every

    def write(self, snapshot: dict[str, Any]) -> None:
        """Write the snapshot atomically: to a temporary file in the same folder, then rename over the target."""
        save(self.path, dict(snapshot, format=FORMAT, key=self.key))
        self.last = time.monotonic()
        self.written += 1


def save(path: Path, data: dict[str, Any]) -> None:
    """Pickle `data` to `path` so that a reader sees the old file or the whole new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            pickle.dump(data, out, protocol=5)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: str | Path, key: Any) -> dict[str, Any]:
    """The checkpoint in `path`, checked to belong to the configuration `key`; BadCheckpoint otherwise."""
    try:
        with open(path, "rb") as inp:
            data = pickle.load(inp)
    except FileNotFoundError:
        raise BadCheckpoint(f"no checkpoint file {str(path)!r}") from None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as err:
        raise BadCheckpoint(f"{path}: not a kcm explore checkpoint ({err.__class__.__name__})") from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("kcm-explore-checkpoint/"):
        raise BadCheckpoint(f"{path}: not a kcm explore checkpoint (format {FORMAT} expected)")
    if data["format"] != FORMAT:
        raise BadCheckpoint(f"{path}: a checkpoint of format {data['format']}, written by another kcm release "
                            f"(this one reads {FORMAT}); run the exploration again")
    if data.get("key") != key:
        raise BadCheckpoint(f"{path}: written for another configuration; resume with the config it was made with")
    return data
