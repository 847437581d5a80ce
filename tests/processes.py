"""Looking at the processes a test started, through /proc (Linux): their children, state, open files."""

from __future__ import annotations

import contextlib
import os
import signal

Proc = tuple[int, int]  # (pid, start time in clock ticks since boot): a process, never one that reused its pid


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first); None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
    return stat.rsplit(")", 1)[1].split()


def children(pid: int) -> list[Proc]:
    """The processes `pid` started that are still its children (none if it is gone)."""
    out: list[Proc] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    fields = _stat(int(child))
                    if fields is not None:
                        out.append((int(child), int(fields[19])))
    return out


def alive(proc: Proc) -> bool:
    """Whether that very process still runs (a zombie, waiting for a parent to reap it, has ended)."""
    fields = _stat(proc[0])
    return fields is not None and int(fields[19]) == proc[1] and fields[0] not in ("Z", "X")


def kill(procs: list[Proc]) -> None:
    """SIGKILL those of `procs` that still run (and only them, not a process that took a pid over)."""
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(OSError):
                os.kill(proc[0], signal.SIGKILL)


def files_in(pid: int, folder: str) -> int:
    """How many of a process's open files are files made in `folder` (unlinked ones included)."""
    count = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder + "/")
    return count
