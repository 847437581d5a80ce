"""One writer per checkpoint file: a run holds an advisory lock on the file it writes until it ends.

Two runs writing the same checkpoint (the default `kcm-explore-<config>.ckpt` of two runs of one config in one
folder, or one `--checkpoint F` given twice) would overwrite each other's levels, and the second one's start,
which removes the temporary files a killed write left (`checkpoint.clean_temporaries`), would remove the
first one's write in progress, failing its stop. So a run takes `flock` on `.<file>.lock` beside the file
before it touches anything there, and a second run on the same file is refused (`CheckpointBusy`), naming the
process that holds it.

The lock is held from the writer's making (so the command refuses at once, not after hours) to the end of the
search that writes (`Checkpointer.close`), and the kernel drops it when its holder dies, however it dies, so a
killed run never blocks the next one. The holder removes the lock file while it still holds the lock; a process
that opened the old file meanwhile finds, once it has the lock, that the path now names another file (or none)
and locks that one instead. Within one process the lock is taken once per file and counted (a library caller may
make several writers of one file). Where the file system does not lock (`flock` fails otherwise), the run goes on
unlocked, as before this lock existed.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
from pathlib import Path

_HELD: dict[Path, list[int]] = {}  # checkpoint path (absolute) -> [the open lock file held locked, its holders]
_ATTEMPTS = 20  # times the lock file may be replaced under us before we give up


class CheckpointBusy(OSError):
    """Another live process writes this checkpoint file; the message names the file and the process."""


def lock_path(path: Path) -> Path:
    """The lock file of checkpoint `path`: hidden, beside it."""
    return path.with_name(f".{path.name}.lock")


def hold(path: Path) -> bool:
    """Lock checkpoint `path` for this process until it exits; CheckpointBusy if another process holds it. False
    when the folder cannot hold a lock file or the file system does not lock (the run goes on without one)."""
    key = Path(os.path.abspath(path))
    if key in _HELD:
        _HELD[key][1] += 1
        return True
    lock = lock_path(key)
    for _ in range(_ATTEMPTS):
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return False  # a folder where nothing can be written: the checkpoint's own write will say so
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            owner = _owner(fd)
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise CheckpointBusy(f"{path}: another kcm explore{owner} is writing this checkpoint; give "
                                     f"--checkpoint another file, or let that run end first") from None
            return False
        try:
            mine = os.fstat(fd)
            now = os.stat(lock)
            same = (mine.st_ino, mine.st_dev) == (now.st_ino, now.st_dev)
        except OSError:
            same = False  # its last holder removed it as we opened it
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            _HELD[key] = [fd, 1]
            return True
        os.close(fd)
    raise CheckpointBusy(f"{path}: its lock file {lock.name} keeps being replaced; is another kcm explore "
                         "starting and ending on it?")


def _owner(fd: int) -> str:
    """' (pid N)' from a lock file's content, if it names a process."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


def release(path: Path) -> None:
    """One holder of `path`'s lock (a `hold` that returned True) gives it up; the last one removes the lock file
    and unlocks it."""
    key = Path(os.path.abspath(path))
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[key]
        _unlock(key, held[0])


def _unlock(key: Path, fd: int) -> None:
    try:
        os.unlink(lock_path(key))  # while still locked: see the module
    except OSError:
        pass
    os.close(fd)


def release_all() -> None:
    """Give up every lock this process still holds (at exit)."""
    for key, (fd, _) in list(_HELD.items()):
        _unlock(key, fd)
    _HELD.clear()


atexit.register(release_all)
