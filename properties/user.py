"""Users' own properties: a Python predicate from a file or a module, judged by every engine as a catalogue one.

`kcm explore --property PATH.py:function` (or `module:function`) loads the predicate with `load`. A function of
one parameter is a state property (ALWAYS): it receives the state and returns True while the rule holds. A
function of three parameters is a step property (STEP): it receives the state before, the action and the state
after. A state is the scenario contract's result document (`kcm.reference.result.result_document`: `controller`,
`live_brokers`, `partitions`, `replicas`, `reassignments`) made read-only: mappings are `MappingProxyType`, lists
are tuples. An action is its contract step (`op` and its fields, the op also under `kind`), read-only as well.
The property's id is the function's `name` attribute, else its name; its rule in words, its docstring.

Loading runs the user's code: that is what the flag is for (their code, on their machine). The source text is
read once and compiled into a module of its own; the condition (`UserCondition`) carries that text when it is
pickled, so a Spark executor compiles the very same code without the file being there.

A predicate that raises, or returns anything but True or False, counts as a violation where it happens, so
every engine finds the same shortest path to it; the report then judges the predicate again at the end of that
path and shows the traceback (`explain`), with the verdict "error".
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import linecache
import os
import re
import reprlib
import sys
import traceback
import types
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcm.model.interface import ALWAYS, STEP, Property
from kcm.reference.result import result_document

MAX_SOURCE_BYTES = 1 << 20  # a predicate's file is a few kilobytes; anything past this is not one
ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")  # an id is also a file name (`explore --out`)
KINDS = {1: ALWAYS, 3: STEP}  # parameters -> expectation
_VIEWS_KEPT = 1 << 15  # views memoized (by identity) before the memo starts afresh: about 2 KB each on `controller`


class BadProperty(ValueError):
    """A --property value that cannot be loaded; the message is one line naming the value and the problem."""


@dataclass(frozen=True)
class Source:
    """The code of a user's property as shipped to every process: where it came from, and its text."""

    spec: str  # the flag's value, for messages
    filename: str  # the file as the user named it (tracebacks show it)
    package: str | None  # the package of a `module:function` module (its relative imports resolve there)
    text: str

    @property
    def digest(self) -> str:
        """The SHA-256 of the text: the module's name in every process, and the checkpoint's identity."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def key(self) -> str:
        """What names the compiled module in every process: the text, and where it came from (tracebacks)."""
        return hashlib.sha256(f"{self.filename}\0{self.package}\0{self.text}".encode()).hexdigest()


_MODULES: dict[str, types.ModuleType] = {}  # Source.key -> the module compiled from it in this process
# id(state or action) -> (it, kept alive so that the id stays its own; its view), shared by every user property:
# a state's view is built once however many of them judge it.
_VIEWS: dict[int, tuple[Any, Any]] = {}


def _module(source: Source) -> types.ModuleType:
    """The module compiled from the source's text, once per process (BadProperty if it does not compile or run)."""
    digest = source.key
    module = _MODULES.get(digest)
    if module is not None:
        return module
    name = f"kcm_user_{digest[:16]}"
    module = types.ModuleType(name)
    module.__file__ = source.filename
    module.__package__ = source.package
    # Tracebacks show the lines even where the file is absent (a Spark executor); no mtime, so never rechecked.
    lines = source.text.splitlines(keepends=True)
    linecache.cache[source.filename] = (len(source.text), None, lines, source.filename)
    sys.modules[name] = module  # dataclasses and pickling by reference look the module up by name
    try:
        code = compile(source.text, source.filename, "exec")
        exec(code, module.__dict__)  # noqa: S102 - the user's own property file, run on their request
    except SyntaxError as err:
        del sys.modules[name]
        raise BadProperty(f"--property {source.spec}: {source.filename}:{err.lineno}: SyntaxError: {err.msg}") from None
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as err:  # noqa: BLE001 - whatever the user's module does at import is reported, in one line
        del sys.modules[name]
        where = _user_line(err, source.filename)
        raise BadProperty(f"--property {source.spec}: loading {source.filename} raised {type(err).__name__}"
                          f"{where}: {_one_line(err)}") from None
    _MODULES[digest] = module
    return module


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _user_line(err: BaseException, filename: str) -> str:
    """' (line N)': the last line of the user's file in the exception's traceback, if any."""
    line = None
    for frame, lineno in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return f" (line {line})" if line is not None else ""


def _read(spec: str, target: str) -> Source:
    """The Source a PATH.py or module target names; BadProperty when there is none."""
    is_path = target.endswith(".py") or "/" in target or os.sep in target
    if is_path:
        path = Path(target)
        package = None
    else:
        if not all(part.isidentifier() for part in target.split(".")):
            raise BadProperty(f"--property {spec}: {target!r} is neither a PATH.py nor a module name")
        try:
            # A module beside the user comes first, as for `python -m`: the console script's path lacks the cwd.
            sys.path.insert(0, os.getcwd())
            try:
                found = importlib.util.find_spec(target)
            finally:
                sys.path.remove(os.getcwd())
        except (ImportError, ValueError) as err:
            raise BadProperty(f"--property {spec}: no module {target} ({_one_line(err)})") from None
        except BaseException as err:  # noqa: BLE001 - a parent package's __init__ is the user's code too
            if isinstance(err, KeyboardInterrupt):
                raise
            raise BadProperty(f"--property {spec}: importing the package of {target} raised "
                              f"{type(err).__name__}: {_one_line(err)}") from None
        if found is None:
            raise BadProperty(f"--property {spec}: no module named {target}")
        if not found.origin or not found.origin.endswith(".py"):
            raise BadProperty(f"--property {spec}: module {target} has no Python source file (kcm ships a "
                              f"property's source text to every engine's processes)")
        path = Path(found.origin)
        package = target.rpartition(".")[0] or None
        if found.submodule_search_locations is not None:  # a package's __init__.py: it is its own package
            package = target
    if path.exists() and not path.is_file():  # a folder, a FIFO or a device: nothing to compile (or a read blocks)
        raise BadProperty(f"--property {spec}: {target} is not a regular file")
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as err:
        raise BadProperty(f"--property {spec}: cannot read {target}: {err.strerror or type(err).__name__}") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise BadProperty(f"--property {spec}: {target} is larger than {MAX_SOURCE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadProperty(f"--property {spec}: {target} is not UTF-8 (byte {err.start})") from None
    return Source(spec, target if is_path else str(path), package, text)


def _function(source: Source, name: str) -> Any:
    """The predicate `name` of the source's module (BadProperty when absent or not callable)."""
    module = _module(source)
    fn = module.__dict__.get(name)
    if fn is None:
        raise BadProperty(f"--property {source.spec}: {source.filename} defines no {name}")
    if not callable(fn):
        raise BadProperty(f"--property {source.spec}: {name} is a {type(fn).__name__}, not a function")
    return fn


def _kind(spec: str, fn: Any) -> str:
    """ALWAYS for a predicate of one parameter (the state), STEP for one of three (before, action, after)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise BadProperty(f"--property {spec}: its parameters cannot be read") from None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    others = [p for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    kind = KINDS.get(len(positional))
    if kind is None or others:
        raise BadProperty(f"--property {spec}: a predicate takes 1 parameter (the state) or 3 (before, action, "
                          f"after), not {len(positional) + len(others)}")
    return kind


def freeze(value: Any) -> Any:
    """A read-only copy of JSON-shaped data: dicts as MappingProxyType, lists as tuples."""
    if isinstance(value, dict):
        return types.MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


class UserCondition:
    """A user's predicate as a catalogue property's condition: `(model, state)` or `(model, before, action, after,
    effects)`, True while it holds, False when it does not, raises, or returns something other than a bool."""

    def __init__(self, source: Source, function: str, kind: str) -> None:
        self.source, self.function, self.kind = source, function, kind
        self.fn = _function(source, function)
        self.__name__ = function
        self.__doc__ = self.fn.__doc__

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its source text: the process that unpickles it compiles the same code (a Spark executor)."""
        return (UserCondition, (self.source, self.function, self.kind))

    def _view(self, value: Any, action: bool = False) -> Any:
        """The read-only view of a state (its result document) or of an action (its contract step)."""
        key = id(value)
        kept = _VIEWS.get(key)
        if kept is not None and kept[0] is value:
            return kept[1]
        if action:
            step = value.to_step() if hasattr(value, "to_step") else {"op": str(value)}
            view = freeze({"kind": step.get("op"), **step})
        else:
            view = freeze(result_document(value))
        if len(_VIEWS) >= _VIEWS_KEPT:
            _VIEWS.clear()
        _VIEWS[key] = (value, view)
        return view

    def _args(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.kind == ALWAYS:
            return (self._view(args[0]),)
        return (self._view(args[0]), self._view(args[1], action=True), self._view(args[2]))

    def __call__(self, model: Any, *args: Any) -> bool:
        """Whether the rule holds on this state (step); False too when the predicate fails (see `explain`)."""
        try:
            with contextlib.redirect_stdout(sys.stderr):  # kcm's own output (--json) stays its report alone
                ok = self.fn(*self._args(args))
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a failing predicate is that property's error, never the run's
            return False
        return ok is True

    def failure(self, *args: Any) -> str | None:
        """Why the predicate fails on this state (step): its traceback, or what it returned; None if it holds or
        is simply False."""
        try:
            with contextlib.redirect_stdout(sys.stderr):
                ok = self.fn(*self._args(args))
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # noqa: BLE001 - reported, as the run goes on
            # The predicate's own frames only: from the first in its file on (the frames before are kcm's, one or
            # more: a compiled build adds its own).
            own = getattr(getattr(self.fn, "__code__", None), "co_filename", None)
            frames = err.__traceback__
            while frames is not None and frames.tb_frame.f_code.co_filename != own:
                frames = frames.tb_next
            if frames is None and err.__traceback__ is not None:
                frames = err.__traceback__.tb_next
            tb = traceback.TracebackException(type(err), err, frames)
            return "".join(tb.format()).rstrip("\n")
        if isinstance(ok, bool):
            return None
        return f"{self.function} returned {type(ok).__name__} {reprlib.repr(ok)}, not True or False"

    def explain(self, model: Any, trace: Sequence[Any]) -> str | None:
        """The failure (`failure`) at the end of a counterexample's trace, replayed from the initial state."""
        state = before = model.init_states()[0]
        action = None
        for action in trace:
            before = state
            state, _ = model.step(state, action)
        if self.kind == ALWAYS:
            return self.failure(state)
        if action is None:
            return None
        return self.failure(before, action, state)


def load(spec: str) -> Property:
    """The property a `--property PATH.py:function` or `module:function` value names; BadProperty (one line)."""
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function:
        raise BadProperty(f"--property {spec}: expected PATH.py:function or module:function")
    if not function.isidentifier():
        raise BadProperty(f"--property {spec}: {function!r} is not a function name")
    source = _read(spec, target)
    fn = _function(source, function)
    kind = _kind(spec, fn)
    name = getattr(fn, "name", None)
    name = function if name is None else name
    if not isinstance(name, str) or not ID.fullmatch(name):
        raise BadProperty(f"--property {spec}: its id {reprlib.repr(name)} is not a name (letters, digits, _)")
    rule = inspect.getdoc(fn) or f"{spec} (a user's property without a docstring)"
    return Property(name, kind, UserCondition(source, function, kind), rule)


def load_all(specs: Sequence[str], taken: Collection[str]) -> list[Property]:
    """The properties of several --property values; BadProperty when an id is one of `taken` or given twice."""
    out: list[Property] = []
    for spec in specs:
        prop = load(spec)
        if prop.name in taken or any(p.name == prop.name for p in out):
            raise BadProperty(f"--property {spec}: the id {prop.name} is already a property's (set the "
                              f"function's `name` attribute to another)")
        out.append(prop)
    return out


def is_user(prop: Property) -> bool:
    """Whether a property is a user's own (loaded by `load`)."""
    return isinstance(prop.condition, UserCondition)


def identity(props: Sequence[Property]) -> list[list[str]]:
    """What names a set of user properties in a checkpoint's identity: each id, kind and source text's digest."""
    return [[p.name, p.expectation, p.condition.source.digest, p.condition.function] for p in props if is_user(p)]


def error_of(model: Any, prop: Property, trace: Sequence[Any]) -> str | None:
    """The traceback (or wrong return value) of a user's property at the end of its counterexample, else None."""
    if not is_user(prop):
        return None
    return prop.condition.explain(model, trace)


__all__ = ["BadProperty", "UserCondition", "error_of", "freeze", "identity", "is_user", "load", "load_all"]

