"""Strict reading of untrusted JSON: bounded reads, safe parsing, and jsonschema validation with strict types.

Every file kcm reads from a user (scenarios, traces, explorer configs) goes through here before any rule sees it:

* a read never takes more than a declared number of bytes (`/dev/zero` or a huge file is refused, not loaded);
* numbers: an integer of more than `MAX_INT_DIGITS` digits, NaN, Infinity and floats that overflow are refused
  with their JSON path, before any schema sees them (a literal past Python's int-string limit, which would raise
  mid-parse, is caught by a second parse whose hooks mark it);
* duplicate keys are refused, and nesting deeper than `MAX_DEPTH` is refused before a schema walks the value;
* schemas are checked by a jsonschema validator whose "integer" is a Python int and never a bool or a float such
  as 2.0, and whose `pattern` follows ECMA-262 (the schema language's regex dialect): `$` ends the string, so a
  name with a trailing newline does not match;
* messages name the place as a JSON path and cut the offending value short.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

# Limits on any JSON input (documented in docs/robustness.md). No bound of any schema goes past 2**63, which has
# 19 digits; a longer integer is refused before the schema.
MAX_DEPTH = 64
MAX_INT_DIGITS = 20
SHOWN_CHARS = 60  # how much of an offending value a message shows


class InputError(ValueError):
    """Input that kcm refuses; str() is one line naming the place and the problem."""


def cut(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A short rendering of a value for a message: JSON when it can be, cut to about `limit` characters."""
    if isinstance(value, str):
        shown = value[: limit + 1]
        text = json.dumps(shown)
    elif isinstance(value, (dict, list)):
        text = _outline(value, limit)
    else:
        text = json.dumps(value) if isinstance(value, (int, float, bool)) or value is None else repr(value)[:limit]
    if len(text) > limit or (isinstance(value, str) and len(value) > limit):
        size = f"{len(value):,} characters" if isinstance(value, str) else "long"
        return f"{text[:limit]}... ({size})"
    return text


def _outline(value: dict | list, limit: int) -> str:
    """A container shown without rendering it whole (a 50 MB list must not become a 50 MB message)."""
    if isinstance(value, dict):
        keys = list(value)[:4]
        inner = ", ".join(f"{cut(k, 20)}: ..." for k in keys)
        return "{" + inner + (", ..." if len(value) > 4 else "") + "}"
    inner = ", ".join(cut(x, 20) if not isinstance(x, (dict, list)) else "..." for x in value[:4])
    return "[" + inner + (", ..." if len(value) > 4 else "") + "]"


def json_path(parts: Any) -> str:
    """A JSON path ("$.steps[3].broker") for a sequence of keys and indexes."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


# ------------------------------------------------------------------------------------------------ reading


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of a file of at most `limit` bytes; InputError when it is longer, OSError when unreadable.

    The read stops after limit + 1 bytes, so a device or a pipe that never ends is refused, never loaded."""
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"larger than the limit of {limit:,} bytes")
    return data


# How far past a line's limit a reader looks for its end before it gives up on the file (`/dev/zero`, a binary
# file without line ends): skipping costs time, never memory, but must end.
MAX_SKIPPED_BYTES = 64 << 20


def bounded_lines(fh: Any, limit: int) -> Iterator[tuple[bytes, bool]]:
    """(line, whole) for each line of a binary file; a line longer than `limit` bytes is cut to `limit` and the
    rest of it skipped without being held in memory (whole is then False). InputError when a line goes on past
    MAX_SKIPPED_BYTES: the file is not made of lines."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n") or len(line) <= limit:
            yield line, True
            continue
        yield line[:limit], False
        skipped, rest = len(line), line
        while rest and not rest.endswith(b"\n"):
            if skipped > MAX_SKIPPED_BYTES:
                raise InputError(f"a line longer than {MAX_SKIPPED_BYTES:,} bytes: not a text file of lines")
            rest = fh.readline(limit)
            skipped += len(rest)


# ------------------------------------------------------------------------------------------------ parsing


class _Refused:
    """A number the parser refused; the tree check reports it with its JSON path."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_int(s: str) -> Any:
    digits = len(s) - s.startswith("-")
    if digits > MAX_INT_DIGITS:
        return _Refused(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _parse_float(s: str) -> Any:
    value = float(s)
    return value if math.isfinite(value) else _Refused(f"the number {cut(s)} is too large")


def _parse_constant(s: str) -> Any:
    return _Refused(f"{s} is not a JSON number (JSON numbers are finite)")


def loads(raw: bytes | str) -> Any:
    """Parse untrusted JSON text strictly; InputError names the place (line and column, or JSON path)."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(f"not UTF-8 text (byte {err.start})") from None
    else:
        text = raw
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark some editors write
    try:
        # The C scanner parses numbers itself (fast); a literal past Python's int-string limit makes it raise,
        # and only then is the text parsed again with a hook that marks such numbers, to name their place.
        try:
            doc = _DECODER.decode(text)
        except ValueError as err:
            if isinstance(err, json.JSONDecodeError) or "integer string conversion" not in str(err):
                raise
            doc = _MARKING_DECODER.decode(text)
    except json.JSONDecodeError as err:
        raise InputError(f"broken JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except RecursionError:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    check_depth(doc)
    return doc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise InputError(f"duplicate key {cut(dup)} in one JSON object")
    return doc


def _fine(doc: Any, limit: int) -> bool:
    """Whether doc nests at most `limit` deep and holds no refused number (the fast pass: no paths kept)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return False
        for sub in value.values() if type(value) is dict else value if type(value) is list else ():
            kind = type(sub)
            if kind is dict or kind is list:
                stack.append((sub, depth + 1))
            elif kind is _Refused or kind is int and not -_BIG < sub < _BIG or kind is float and not _finite(sub):
                return False
    return True


_BIG = 10**MAX_INT_DIGITS
_finite = math.isfinite


def _refused_number(value: Any) -> _Refused | None:
    """Why a parsed number is refused (too many digits, or a float that overflowed to infinity), or None."""
    if type(value) is int and not -_BIG < value < _BIG:
        return _Refused(f"an integer of {len(str(abs(value))):,} digits (at most {MAX_INT_DIGITS})")
    if type(value) is float and not _finite(value):
        return _Refused("a number too large to be finite")
    return None


# Built once: json.loads with hooks would build a decoder on every call, which costs more than the parse of a
# trace line.
_DECODER = json.JSONDecoder(parse_constant=_parse_constant, object_pairs_hook=_no_duplicates)
_MARKING_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant,
                                    object_pairs_hook=_no_duplicates)


def check_depth(doc: Any, limit: int = MAX_DEPTH) -> None:
    """InputError when containers nest deeper than `limit`, or hold a number the parser refused (checked in
    document order, without recursion)."""
    refused = doc if isinstance(doc, _Refused) else _refused_number(doc)
    if refused is not None:
        raise InputError(f"$: {refused.reason}")
    if _fine(doc, limit):
        return
    stack: list[tuple[Any, int, tuple]] = [(doc, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            items: Any = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        if depth > limit:
            shown = json_path(path[:6]) + ("..." if len(path) > 6 else "")
            raise InputError(f"{shown}: JSON nested deeper than {limit} levels")
        for key, sub in reversed(items):
            if isinstance(sub, (dict, list)):
                stack.append((sub, depth + 1, (*path, key)))
        for key, sub in items:
            refused = sub if isinstance(sub, _Refused) else _refused_number(sub)
            if refused is not None:
                raise InputError(f"{json_path((*path, key))}: {refused.reason}")


# ------------------------------------------------------------------------------------------------ schemas


@cache
def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """A schema `pattern` compiled for Python with ECMA-262's meaning of a final `$` (the end of the string)."""
    # ECMA-262's `$` (no multiline flag) matches only at the end of the input; Python's also before a final "\n".
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not ecma_pattern(pattern).search(instance):
        yield ValidationError(f"{cut(instance)} does not match {pattern!r}")


def same(a: Any, b: Any) -> bool:
    """JSON equality that tells types apart: 1, 1.0 and true are three different values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _enum(validator: Any, enums: list[Any], instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not any(same(instance, e) for e in enums):
        yield ValidationError(f"{cut(instance)} is not one of {enums!r}")


def _const(validator: Any, const: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not same(instance, const):
        yield ValidationError(f"{cut(instance)} is not {const!r}")


def _strict_integer(checker: Any, instance: Any) -> bool:
    return type(instance) is int


def _strict_number(checker: Any, instance: Any) -> bool:
    return type(instance) in (int, float)


StrictValidator = jsonschema.validators.extend(
    Draft202012Validator,
    validators={"pattern": _pattern, "enum": _enum, "const": _const},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _strict_integer, "number": _strict_number}),
)


# Keywords that look at a value's type and size only; they are evaluated before the keywords that walk its items,
# so a list of a million steps is refused by its maxItems before any step is looked at.
_CHEAP_FIRST = ("type", "maxItems", "maxProperties", "maxLength", "minItems", "minProperties", "minLength",
                "maximum", "minimum", "enum", "const", "required")


def _cheap_first(node: Any) -> Any:
    if isinstance(node, list):
        return [_cheap_first(x) for x in node]
    if not isinstance(node, dict):
        return node
    rank = {k: i for i, k in enumerate(_CHEAP_FIRST)}
    keys = sorted(node, key=lambda k: rank.get(k, len(rank)))
    return {k: _cheap_first(node[k]) if k not in ("enum", "const") else node[k] for k in keys}


def validator(schema: dict[str, Any]) -> Any:
    """A strict validator for one of kcm's own schemas (`specs/*.schema.json`).

    The schemas are not checked against the metaschema here, on every command (about 10 ms of `kcm explore`'s
    fixed cost): `tests/test_schemas.py` checks each shipped schema, and what it selects.
    """
    return StrictValidator(_cheap_first(schema))


# Errors looked at to choose the most relevant one. With the cheap keywords first, the first error found is on the
# shallowest place that is wrong; looking for a second would walk a document of a million valid items whole.
MAX_ERRORS_WEIGHED = 1


def describe(err: ValidationError) -> str:
    """One short line for a validation error: what the value must be, and the value cut short."""
    kw, want, got = err.validator, err.validator_value, err.instance
    if kw == "type":
        need = want if isinstance(want, str) else " or ".join(want)
        article = "an" if need[:1] in "aeiou" else "a"
        hint = " (written without a point or exponent; true/false are not integers)" if need == "integer" else ""
        return f"must be {article} {need}{hint}, not {cut(got)}"
    if kw == "enum":
        return f"must be one of {', '.join(json.dumps(w) for w in want)}, not {cut(got)}"
    if kw == "const":
        return f"must be {json.dumps(want)}, not {cut(got)}"
    if kw == "pattern":
        return f"{cut(got)} is not of the form {want}"
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        rel = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
               "exclusiveMaximum": "less than"}[kw]
        return f"must be {rel} {want}, not {cut(got)}"
    if kw in ("minItems", "maxItems", "minProperties", "maxProperties"):
        rel = "at least" if kw.startswith("min") else "at most"
        what = "items" if kw.endswith("Items") else "keys"
        return f"must have {rel} {want} {what}, not {len(got):,}"
    if kw in ("minLength", "maxLength"):
        rel = "at least" if kw == "minLength" else "at most"
        return f"must have {rel} {want} characters, not {len(got):,}"
    if kw == "uniqueItems":
        return f"has repeated items: {cut(got)}"
    if kw == "required":
        missing = [k for k in want if isinstance(got, dict) and k not in got]
        return f"{(missing[0] if missing else want)!r} is a required property"
    if kw in ("additionalProperties", "unevaluatedProperties") and isinstance(got, dict):
        known = set(err.schema.get("properties", {}))
        extra = [k for k in got if k not in known]
        name = extra[0] if extra else "?"
        return f"unknown key {name[:SHOWN_CHARS]!r}" + ("..." if len(name) > SHOWN_CHARS else "")
    if kw in ("anyOf", "oneOf") and _only_missing_keys(err):
        options = [" and ".join(sub["required"]) for sub in want]
        return f"needs {', or '.join(options)}"
    if kw == "propertyNames":
        return f"has a key that is not allowed: {err.message[:SHOWN_CHARS * 2]}"
    message = err.message
    return message if len(message) <= SHOWN_CHARS * 3 else message[: SHOWN_CHARS * 3] + "..."


def _only_missing_keys(err: ValidationError) -> bool:
    return err.validator in ("anyOf", "oneOf") and all(set(sub) == {"required"} for sub in err.validator_value)


def first_error(schema_validator: Any, doc: Any) -> str | None:
    """'PATH: problem' for the most relevant schema error of doc, or None when doc is valid."""
    errors = list(itertools.islice(schema_validator.iter_errors(doc), MAX_ERRORS_WEIGHED))
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    # Descend to the innermost error of a combinator, for the most precise place (but alternatives that each
    # only miss keys are said together: "needs a, or b and c").
    while best.context and not _only_missing_keys(best):
        best = jsonschema.exceptions.best_match(best.context)
    return f"{json_path(best.absolute_path)}: {describe(best)}"
