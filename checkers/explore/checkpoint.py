"""Checkpoints of a breadth-first search: a safe, versioned file, written atomically at level boundaries.

The file is one line of JSON (the header), then the body. The header names the format, the kcm release, the
engine, the identity of the configuration (a SHA-256 of its JSON without `description`, with the reduction in
use) and the body's length and SHA-256. The body is a NumPy `.npz` archive of plain arrays, read with pickle
off: the visited fingerprints, each level's parent and action positions, the frontier's fingerprints, and the
counters and witnesses as JSON bytes. The frontier's states are rebuilt by replaying the parent links
(`visited.replay_levels`), and must come out with the saved fingerprints; or, where the file holds them as data
(`stored_states.py`: a stop's checkpoint stores them, as does a periodic one of a small frontier), decoded from
it, each with its saved fingerprint. So loading a file can run no code, and a file that is damaged, foreign
or does not hang together is refused (BadCheckpoint), never resumed.

A write goes to a temporary file beside the target (fsync), which is then renamed over it (and the folder
synced): a reader sees the old checkpoint or the whole new one. A temporary file left by a run killed during a
write is removed when the next run on the same path starts; one run at a time writes a path
(`checkpoint_lock.py`).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from kcm.checkers.explore import checkpoint_lock, stored_states
from kcm.checkers.explore.stopping import unless_left_out

# Parent links hold positions in model.actions(state), so a checkpoint is read only by the release that wrote it.
FORMAT = "kcm-explore-checkpoint/4"  # 4: header + npz body, no pickle; frontier rebuilt by replay
MAX_HEADER = 4096  # bytes of the header line at most
# Engines whose checkpoints are alike (the same arrays, the same canonical parent links): each resumes the others'.
ENGINES = ("local", "spark")
_HEADER_KEYS = {"format": str, "kcm": str, "engine": str, "config": str, "body_bytes": int, "body_sha256": str}
_TEMP_SUFFIX = ".tmp"


class BadCheckpoint(ValueError):
    """A checkpoint that cannot be resumed; the message says why (one line, naming the file)."""


@dataclass
class Snapshot:
    """A checkpoint read back: the arrays of its body and its JSON counters (`meta`)."""

    path: str
    engine: str
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]


def kcm_version() -> str:
    """The installed kcm release (what a checkpoint records and must match on resume)."""
    from kcm import __version__  # the package's own, so a source checkout and any distribution name agree

    return __version__


def config_identity(cfg: dict[str, Any], reduction: str = "none") -> str:
    """The SHA-256 naming a configuration for checkpoints: its JSON without `description`, and the reduction."""
    significant = {k: v for k, v in cfg.items() if k != "description"}
    text = json.dumps({"config": significant, "reduction": reduction}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class Checkpointer:
    """Writes a checkpoint to one file at most once every `every` seconds (0: at every level)."""

    def __init__(self, path: str | Path, every: float, identity: str, engine: str = "local") -> None:
        if not str(path):
            raise BadCheckpoint("--checkpoint: an empty file name")
        if why := unfit_target(Path(path)):
            raise BadCheckpoint(f"--checkpoint {path}: {why}")
        self.path = Path(path)
        self.every = every
        self.identity = identity
        self.engine = engine
        self.last = time.monotonic()
        self.written = 0
        # The file is this run's alone (checkpoint_lock.CheckpointBusy otherwise) before its leftovers are cleared:
        # another run's write in progress is not a leftover.
        self.held = False
        self.hold()
        clean_temporaries(self.path)

    def hold(self) -> None:
        """Take the file's lock again for another search (CheckpointBusy if another process writes it now)."""
        if not self.held:
            self.held = checkpoint_lock.hold(self.path)

    def close(self) -> None:
        """The search that writes the file has ended: let another run write it."""
        if self.held:
            self.held = False
            checkpoint_lock.release(self.path)

    def due(self) -> bool:
        """Whether a level boundary now should write a checkpoint."""
        return time.monotonic() - self.last >= self.every

    def write(self, visited: Any, frontier: list[int], meta: dict[str, Any],
              stored: Callable[[], dict[str, np.ndarray]] | None = None,
              give_up: Callable[[], bool] | None = None) -> None:
        """Write the visited set, the frontier's fingerprints and the counters as one checkpoint, atomically;
        `stored` makes the arrays of the frontier's states (`stored_states.pack`, the Spark engine's with each
        visited state's `levels`), so a resume need not replay; None from it, or a TypeError, stores none.
        StatesLeftOut, with nothing written, when `give_up` says so once they are made (or `stored` raises it)."""
        arrays = dict(visited.arrays())
        arrays["frontier"] = np.asarray(frontier, dtype=np.uint64)
        if stored is not None and stored_states.available():
            try:
                arrays.update(stored() or {})
            except TypeError:
                pass  # a model whose states hold values the encoding does not know: its resumes replay
            unless_left_out(give_up)
        arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
        body = io.BytesIO()
        np.savez(body, **arrays)
        save(self.path, self.header(body.getvalue()), body.getvalue())
        self.last = time.monotonic()
        self.written += 1

    def header(self, body: bytes) -> bytes:
        """The header line of a checkpoint with this body."""
        head = {"format": FORMAT, "kcm": kcm_version(), "engine": self.engine, "config": self.identity,
                "body_bytes": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}
        return json.dumps(head, sort_keys=True).encode() + b"\n"


def unfit_target(path: Path) -> str | None:
    """Why a checkpoint may not be written at `path` (None: it may). A write renames a new file over the old one,
    so only a checkpoint, an empty file or no file is replaced: never a folder, a device such as /dev/null (which
    the rename would replace by a regular file, for every process, when run as root) or another file (a config
    given as --checkpoint by a slip)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot be looked at ({err.strerror or err.__class__.__name__})"
    if stat.S_ISDIR(info.st_mode):
        return "a folder, not a checkpoint file"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a checkpoint replaces its file by a new one); give a file name"
    if info.st_size == 0:
        return None
    try:
        with open(path, "rb") as inp:
            line = inp.readline(MAX_HEADER + 1)
        head = json.loads(line.decode("ascii"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        head = None
    if isinstance(head, dict) and str(head.get("format", "")).startswith(FORMAT.split("/")[0] + "/"):
        return None
    return "a file that is not a kcm explore checkpoint, which the checkpoint would replace; give another name"


def clean_temporaries(path: Path) -> None:
    """Remove the temporary files a killed write to `path` left behind."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return
    for stale in folder.glob(f".{path.name}.*{_TEMP_SUFFIX}"):
        stale.unlink(missing_ok=True)


def save(path: Path, header: bytes, body: bytes) -> None:
    """Write header + body to `path` so that a reader sees the old file or the whole new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(header)
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # the rename itself survives a crash only once the folder is synced
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some file systems do not sync folders; the rename is still atomic
    finally:
        os.close(dir_fd)


def load(path: str | Path, identity: str) -> Snapshot:
    """The checkpoint in `path`, checked whole; BadCheckpoint (naming the file and the problem) otherwise.

    A file of any engine in ENGINES is read (each resumes the others'); its header's engine is kept in the Snapshot.
    """
    name = str(path)
    if not name:
        raise BadCheckpoint("--resume: an empty file name")
    try:
        with open(path, "rb") as inp:
            line = inp.readline(MAX_HEADER + 1)
            if not line.endswith(b"\n"):
                raise BadCheckpoint(f"{name}: not a kcm explore checkpoint (no header line)")
            head = _header(name, line)
            body = inp.read(head["body_bytes"] + 1)
    except IsADirectoryError:
        raise BadCheckpoint(f"{name}: a folder, not a checkpoint file") from None
    except FileNotFoundError:
        raise BadCheckpoint(f"{name}: no such checkpoint file") from None
    except OSError as err:
        raise BadCheckpoint(f"{name}: cannot be read ({err.strerror or err.__class__.__name__})") from None
    if head["format"] != FORMAT:
        raise BadCheckpoint(f"{name}: a checkpoint of format {head['format']!r}; this kcm reads {FORMAT}")
    if head["kcm"] != kcm_version():
        raise BadCheckpoint(f"{name}: written by kcm {head['kcm']}, this is kcm {kcm_version()}; run it again")
    if head["config"] != identity:
        raise BadCheckpoint(f"{name}: written for another configuration (or reduction); resume with the one it "
                            f"was made with")
    if head["engine"] not in ENGINES:
        raise BadCheckpoint(f"{name}: written by an engine this kcm does not know ({head['engine'][:40]!r}; "
                            f"it reads {', '.join(ENGINES)})")
    if len(body) != head["body_bytes"]:
        more = " or more" if len(body) > head["body_bytes"] else ""
        raise BadCheckpoint(f"{name}: the body has {len(body)} bytes{more}, the header says {head['body_bytes']} "
                            f"(cut or appended to)")
    if hashlib.sha256(body).hexdigest() != head["body_sha256"]:
        raise BadCheckpoint(f"{name}: the body's SHA-256 does not match the header (the file is damaged)")
    arrays = _arrays(name, body)
    meta = _meta(name, arrays.pop("meta", None))
    return Snapshot(name, head["engine"], meta, arrays)


def _header(name: str, line: bytes) -> dict[str, Any]:
    """The header line, parsed and type-checked."""
    try:
        head = json.loads(line.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BadCheckpoint(f"{name}: not a kcm explore checkpoint (its header is not JSON)") from None
    if not isinstance(head, dict) or set(head) != set(_HEADER_KEYS) or not all(
            type(head[k]) is t for k, t in _HEADER_KEYS.items()):
        raise BadCheckpoint(f"{name}: not a kcm explore checkpoint (header keys {sorted(_HEADER_KEYS)} expected)")
    if head["body_bytes"] < 0:
        raise BadCheckpoint(f"{name}: header: body_bytes is negative")
    return head


def _arrays(name: str, body: bytes) -> dict[str, np.ndarray]:
    """The body's arrays (pickle off: an object array is refused)."""
    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, NotImplementedError) as err:
        raise BadCheckpoint(f"{name}: the body is not an array archive kcm wrote ({err.__class__.__name__})") from None


def _meta(name: str, raw: np.ndarray | None) -> dict[str, Any]:
    """The counters and witnesses, type-checked."""
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise BadCheckpoint(f"{name}: the body has no counters")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BadCheckpoint(f"{name}: the body's counters are not JSON") from None

    def count(v: Any) -> bool:
        return type(v) is int and v >= 0

    def paths(ws: Any) -> bool:  # {name: [root, [action position, ...]]}; "goals" is absent from older files
        return isinstance(ws, dict) and all(
            isinstance(w, list) and len(w) == 2 and count(w[0]) and isinstance(w[1], list)
            and all(count(i) for i in w[1]) for w in ws.values())

    ok = isinstance(meta, dict) and count(meta.get("transitions")) and count(meta.get("depth")) \
        and count(meta.get("expanded")) and type(meta.get("seconds")) in (int, float) \
        and math.isfinite(meta["seconds"]) and meta["seconds"] >= 0 \
        and isinstance(meta.get("sizes"), list) and all(count(s) for s in meta["sizes"]) \
        and isinstance(meta.get("reached"), list) and all(isinstance(r, str) for r in meta["reached"]) \
        and all(paths(meta.get(key, {})) for key in ("witnesses", "goals")) and "witnesses" in meta \
        and type(meta.get("unjudged", False)) is bool
    if not ok:
        raise BadCheckpoint(f"{name}: the body's counters are malformed")
    if len(meta["sizes"]) != meta["depth"] + 1:
        raise BadCheckpoint(f"{name}: {len(meta['sizes'])} level sizes for depth {meta['depth']}")
    return meta
