"""Stopping a long search cleanly: on SIGINT or SIGTERM, or when its processes hold too much memory.

A signal only sets a flag (`StopRequest.reason`); the engines look at it at safe points (every few hundred
successors, and while they wait for their workers or for a Spark job) and then give up the level in work, write
the checkpoint of the last level boundary and return a partial result. So nothing is half-written: a second
signal while the checkpoint is written only sets the flag again, and the write (a temporary file renamed over
the old one, `checkpoint.save`) finishes. A big frontier's states are stored in a second write, once the checkpoint
is on file without them (they take minutes on `large`, and a supervisor's SIGKILL may come first): a second signal
then leaves them out (`storing_states`).

Outside the search itself (reading the config before, judging liveness after) there is nothing to save: there a
signal raises `Interrupted`, which the command reports in one line.

Memory is the proportional set size (PSS, pages shared by forked workers counted once) of this process and all
of its descendants (the `--workers` processes; on Spark in local mode the JVM and its Python workers), falling
back to the resident set size (RSS) where /proc has no smaps_rollup. The kernel walks a process's page tables to
sum its PSS (about 50 ms per GiB), so the watch reads the RSS (a few counters) at most once per `every` seconds,
and the PSS only when the RSS passes the limit (PSS <= RSS), at most once per twenty times its own cost.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(\d{1,15})(?:\.(\d{1,3}))?\s*([KMGT]?)(?:I?B)?", re.I)
MIN_MEMORY = 1 << 20  # --max-memory below 1 MiB is refused: no Python process is that small
MAX_MEMORY = 1 << 50


class StatesLeftOut(Exception):
    """The frontier's states were being stored in a stop's checkpoint, already on file without them, when a second
    signal asked to leave them out (`StopRequest.storing_states`)."""

    def __init__(self) -> None:
        super().__init__("the frontier's states were left out")


def unless_left_out(give_up: Callable[[], bool] | None) -> None:
    """Raise StatesLeftOut if `give_up` (a storing's `StopRequest.leave_states_out`) says so now."""
    if give_up is not None and give_up():
        raise StatesLeftOut


class Interrupted(Exception):
    """A stop signal outside the search, where no checkpoint is due; the message names the signal, and `where`
    says what was going on and what is left to resume (empty: nothing)."""

    def __init__(self, text: str, where: str = "") -> None:
        super().__init__(text)
        self.where = where


@contextmanager
def rebuilding(stop: StopRequest | None, path: Any) -> Iterator[None]:
    """The span in which a resume rebuilds its frontier from checkpoint `path`: a signal raises Interrupted at once.

    Nothing is searched yet, so there is nothing new to save and the checkpoint resumed from is still whole:
    the run ends now rather than at the first safe point of the search, which a big level's rebuild (minutes)
    would put off."""
    if stop is None or path is None or not stop.armed:
        yield
        return
    stop.armed = False
    try:
        yield
    except Interrupted as err:
        raise Interrupted(str(err), f"while the frontier of {path} was rebuilt: that checkpoint is unchanged, "
                                    "resume from it again") from None
    finally:
        stop.armed = True


class Size(int):
    """A number of bytes that prints as it was written (`6G`), so that a command line can be repeated as given."""

    text: str

    def __new__(cls, value: int, text: str) -> Size:
        """The byte count `value`, written `text`."""
        size = super().__new__(cls, value)
        size.text = text
        return size

    def __str__(self) -> str:
        return self.text


def parse_size(text: str) -> Size:
    """Bytes of a size written as a number and an optional unit (K, M, G, T; powers of 1024): `6G`, `500M`."""
    m = _SIZE.fullmatch(text.strip()[:40])
    if m is None:
        raise ValueError(f"{text[:40]!r} is not a size (a number and K, M, G or T, e.g. 6G or 500M)")
    whole, frac, unit = m.groups()
    unit_bytes = _UNITS[unit.upper()]
    value = int(whole) * unit_bytes + (int(frac) * unit_bytes) // 10 ** len(frac) if frac else int(whole) * unit_bytes
    if not MIN_MEMORY <= value <= MAX_MEMORY:
        raise ValueError(f"{text[:40]!r} is not from 1M to 1024T")
    return Size(value, text.strip())


def show_size(n: float) -> str:
    """A byte count for a message: MiB under 10 GiB, else GiB."""
    return f"{n / (1 << 20):,.0f} MiB" if n < 10 * (1 << 30) else f"{n / (1 << 30):,.1f} GiB"


def _descendants(root: int) -> list[int]:
    """`root` and every process below it, from the parent ids in /proc/*/stat."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [root]
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _memory_of(pid: int, proportional: bool = True) -> int:
    """Bytes of memory a process holds: its PSS (`proportional`), or its RSS (also where /proc has no
    smaps_rollup); 0 if it is gone."""
    if proportional:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_in_use(root: int | None = None, proportional: bool = True) -> int:
    """Bytes held by process `root` (default: this one) and all its descendants: PSS, or RSS (see the module)."""
    return sum(_memory_of(pid, proportional) for pid in _descendants(os.getpid() if root is None else root))


def can_measure() -> bool:
    """Whether this system shows processes' memory in /proc (what --max-memory reads)."""
    return Path(f"/proc/{os.getpid()}/statm").is_file()


class StopRequest:
    """Why a search should stop early, set by a signal handler or by the memory watch; polled by the engines."""

    def __init__(self, max_memory: int | None = None, every: float = 1.0) -> None:
        self.reason: str | None = None
        self.max_memory = max_memory
        self.every = every
        self.peak = 0  # the most memory seen by a reading
        self.acted = False  # an engine cut its search short for this request (and wrote its checkpoint)
        self.over_memory = False  # the reason is the memory limit (a step that finishes for a signal gives up)
        self.armed = False  # inside the search: a signal sets the flag; outside it raises Interrupted
        self.storing = False  # a stop's checkpoint is on file, and its frontier's states are being added to it
        self.states_left_out = False  # a signal came while `storing`: the states are to be left out
        self._next = 0.0
        self._next_exact = 0.0

    def request(self, reason: str) -> None:
        """Ask the search to stop (the first reason is kept)."""
        if self.reason is None:
            self.reason = reason

    def poll(self) -> bool:
        """Whether the search should stop now; reads the memory in use when a reading is due."""
        if self.reason is None and self.max_memory is not None:
            now = time.monotonic()
            if now >= self._next:
                self._next = now + self.every
                used = memory_in_use(proportional=False)
                if used > self.max_memory and now >= self._next_exact:
                    used = memory_in_use()
                    cost = time.monotonic() - now
                    self._next_exact = now + max(self.every, 20 * cost)
                    if used > self.max_memory:
                        self.over_memory = self.reason is None
                        self.request(f"memory in use {show_size(used)} passed --max-memory "
                                     f"{show_size(self.max_memory)}")
                self.peak = max(self.peak, used)
        return self.reason is not None

    @contextmanager
    def search(self) -> Iterator[None]:
        """The span in which a signal only sets the flag, for the engine to act on at its next safe point."""
        self.armed = True
        try:
            yield
        finally:
            self.armed = False

    @contextmanager
    def storing_states(self, depth: int, states: int, path: Any) -> Iterator[None]:
        """The span in which a stop adds the frontier's states to its checkpoint, written whole without them just
        before: a second signal leaves them out (the engines then raise StatesLeftOut) instead of waiting."""
        _say(f"kcm explore: checkpoint of level {depth} written to {path}; now storing its frontier's {states:,} "
             f"states in it, so that its resume need not replay them (a second signal leaves them out)\n")
        self.storing = True
        try:
            yield
        finally:
            self.storing = False

    def not_stored(self, err: OSError) -> None:
        """The frontier's states could not be added to the stop's checkpoint (a full disk: they make the file
        several times bigger); the checkpoint already on file stays, and the run ends as it would have."""
        self.states_left_out = True
        _say(f"kcm explore: the frontier's states could not be stored ({err.strerror or err}); the checkpoint "
             f"already written stays (its resume replays the visited states)\n")

    def leave_states_out(self) -> bool:
        """Whether the frontier's states being stored are to be left out (a second signal came meanwhile)."""
        return self.states_left_out

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.reason is not None:
            # os.write, not print: the interrupted code may be in the middle of a write to sys.stderr itself.
            if self.storing and not self.states_left_out:
                self.states_left_out = True
                _say(f"kcm explore: {name} again: leaving the frontier's states out; the checkpoint already "
                     f"written stays (its resume replays the visited states)\n")
                return
            _say(f"kcm explore: {name} again: still stopping (the checkpoint is written whole; SIGKILL ends "
                 f"at once)\n")
            return
        self.request(f"{name} received")
        if not self.armed:
            raise Interrupted(f"{name} received")
        _say(f"kcm explore: {name} received: stopping at the next safe point, writing the checkpoint\n")


class MemoryOnly:
    """A stop request seen only when it is the memory limit's: polled by a step short enough to finish when a
    signal asks for a stop, whose result the checkpoint then keeps (`workers.SharedLevels.expand`)."""

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop

    def poll(self) -> bool:
        """Whether the memory limit asks to stop now (the memory is read as `StopRequest.poll` reads it)."""
        return self.stop.poll() and self.stop.over_memory


def _say(text: str) -> None:
    try:
        os.write(sys.stderr.fileno(), text.encode())
    except (OSError, ValueError, AttributeError):
        pass  # no usable stderr: the summary still says why the run stopped


def _repeated(signum: int, frame: Any) -> None:
    """A signal repeated once the search has stopped: the process is ending anyway."""


def _ignored_to_the_end() -> None:
    """At interpreter exit, after a stop: a repeated signal stays ignored to the very end. Python puts the default
    action back for the signals it handles while it shuts down, so a second Ctrl-C just then killed the process
    (exit -2 instead of 3); no process is started after this point to inherit SIG_IGN."""
    for sig in SIGNALS:
        if signal.getsignal(sig) is _repeated:
            signal.signal(sig, signal.SIG_IGN)


@contextmanager
def on_signals(stop: StopRequest) -> Iterator[StopRequest]:
    """SIGINT and SIGTERM handled by `stop` (see the module) until the block ends; the old handlers back then,
    unless a stop was asked for: then the process is ending, and a signal repeated after the block is ignored
    rather than allowed to kill it with a traceback on the way out. Ignored by a handler that does nothing, not by
    SIG_IGN: a process started afterwards would inherit SIG_IGN and could then never be stopped by the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield stop  # only the main thread may set handlers (a caller in a thread keeps its own)
        return
    old = {}
    for sig in SIGNALS:
        # A signal the process was started ignoring stays ignored (a shell's background job ignores SIGINT, so
        # that a Ctrl-C meant for the foreground does not reach it), as Python itself leaves it.
        if signal.getsignal(sig) is not signal.SIG_IGN:
            old[sig] = signal.signal(sig, stop._on_signal)
    try:
        yield stop
    finally:
        for sig, handler in old.items():
            signal.signal(sig, _repeated if stop.reason is not None else handler)
        if stop.reason is not None and old:
            atexit.unregister(_ignored_to_the_end)  # once, however many searches this process stopped
            atexit.register(_ignored_to_the_end)


def reinstall(stop: StopRequest) -> None:
    """Take SIGINT and SIGTERM back (a library such as PySpark put its own handler in place meanwhile)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, stop._on_signal)


def ignore_signals() -> None:
    """In a worker process: SIGINT and SIGTERM are the coordinator's to handle (a terminal's Ctrl-C reaches the
    whole process group); the worker ends when the coordinator closes its pipe or kills it."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
