"""Fuzz kcm's inputs: malformed scenarios, traces, state-change logs, explorer configs, checkpoints and flags.

Each case is a mutation of a shipped input (specs/), written to a file and given to the `kcm` command that reads
it, in a child process with a memory cap and a CPU cap (resource.setrlimit) and a wall-clock timeout. Each outcome
is counted per command: exit codes, Python tracebacks, hangs (the timeout passed), kills (a signal, e.g. the
memory cap), errors of more than one line, and for checkpoints whether a crafted file ran code on `--resume`.

    python ci/fuzz.py --cases 10000 --seed 1            # the benchmark; prints a table (or --json)
    python ci/fuzz.py --cases 200 --seed 1 --kinds run,trace
    python ci/fuzz.py --seed 1 --case 1234 --show       # one case again: its input and the command's output

The same --seed and --cases give the same cases (case K depends only on the seed and K). By default each case
runs in a child forked from this process after kcm is imported (`--mode fork`, about 20 times faster than
starting Python); `--mode exec` runs the installed `kcm` console script instead. Exit 0 when every case ended in
an exit code of the command's table (docs/robustness.md) with no traceback, hang or code execution; 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import pickle
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
KINDS = ("run", "trace", "log", "config", "checkpoint", "flags")
# Exit codes each command may end with (docs/robustness.md): 0 and 1 are verdicts, 2 refused input, and for explore
# 3 a partial run (--max-states) that found no violation.
ALLOWED = {"run": {0, 1, 2}, "check-trace": {0, 1, 2}, "check-log": {0, 1, 2}, "explore": {0, 1, 2, 3},
           "prove": {0, 1, 2}, "table": {0, 2}}
MARKER = "KCM_FUZZ_MARKER"  # a crafted checkpoint tries to create this file; it must never appear


# ------------------------------------------------------------------------------------------------ values


class Raw(str):
    """Text spliced into a JSON document as is (NaN, a 5,000-digit integer, ...), not as a JSON string."""


HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1, 2.0, 1e2, 1.5, -0.0, 10**18, 2**63, -(10**12), "", "x", "nope", "2", "t-0\n",
    "t-0", "t-0@0", "all", -1, [], {}, [None], [True, False], {"a": 1}, [0, 0], [-1], ["a"],
    Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e999"), Raw("9" * 4301), Raw("-" + "1" * 5000),
    Raw("1" * 21), Raw("0.0000000000000000000001"),
]


def big_value(rng: random.Random) -> Any:
    """A value that is large in one way: long string, long list, wide object, deep nesting."""
    pick = rng.randrange(5)
    if pick == 0:
        return "a" * rng.choice([300, 10_000, 2_000_000])
    if pick == 1:
        return [0] * rng.choice([101, 10_001, 200_000])
    if pick == 2:
        return {str(i): [0] for i in range(rng.choice([100, 1001, 20_000]))}
    depth = rng.choice([63, 65, 500, 985, 5000])
    return Raw("[" * depth + "]" * depth)


def hostile(rng: random.Random) -> Any:
    """A value that is wrong somewhere (a fresh copy: a later mutation must not change the table)."""
    return big_value(rng) if rng.random() < 0.1 else copy.deepcopy(rng.choice(HOSTILE))


def dumps(doc: Any) -> str:
    """JSON text of doc with every Raw value spliced in as is."""
    raws: list[str] = []

    def encode(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(str(v))
            return f"\x00RAW{len(raws) - 1}\x00"
        if isinstance(v, dict):
            return {k: encode(x) for k, x in v.items()}
        if isinstance(v, list):
            return [encode(x) for x in v]
        return v

    text = json.dumps(encode(doc))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{i}\x00"), raw, 1)
    return text


# ------------------------------------------------------------------------------------------------ mutations


def _containers(doc: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out: list[tuple[tuple, Any]] = []
    if isinstance(doc, (dict, list)):
        out.append((path, doc))
        items = doc.items() if isinstance(doc, dict) else enumerate(doc)
        for k, v in items:
            out += _containers(v, (*path, k))
    return out


def mutate_doc(doc: Any, rng: random.Random) -> Any:
    """One to three structural mutations of a JSON document: replace, delete, add, duplicate, retype."""
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        spots = _containers(doc)
        if not spots:
            return hostile(rng)
        _, box = rng.choice(spots)
        keys = list(box) if isinstance(box, dict) else list(range(len(box)))
        op = rng.randrange(7)
        if op <= 2 and keys:  # replace a value
            box[rng.choice(keys)] = hostile(rng)
        elif op == 3 and keys:  # delete
            del box[rng.choice(keys)]
        elif op == 4:  # add an unknown key or a junk item
            if isinstance(box, dict):
                box[rng.choice(["bogus", "op", "broker", "records", "x" * 300, ""])] = hostile(rng)
            else:
                box.insert(rng.randrange(len(box) + 1), hostile(rng))
        elif op == 5 and keys:  # duplicate an item (lists) or copy a value under another key (objects)
            k = rng.choice(keys)
            if isinstance(box, list):
                box.insert(k, json.loads(json.dumps(box[k])))
            else:
                box[rng.choice(keys)] = json.loads(json.dumps(box[k]))
        elif keys:  # turn a number into a float, bool or string of itself
            k = rng.choice(keys)
            v = box[k]
            if isinstance(v, int) and not isinstance(v, bool):
                box[k] = rng.choice([float(v), Raw(f"{v}E0"), str(v), bool(v), -v - 1, v * 10**15])
            elif isinstance(v, str):
                box[k] = rng.choice([v + "\n", v + " ", v.upper(), v * 100, v[:-1]])
    return doc


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """A byte-level mutation: truncate, flip bits, insert junk, duplicate or delete a chunk."""
    data = bytearray(data)
    op = rng.randrange(6)
    n = len(data)
    if op == 0 and n:
        return bytes(data[: rng.randrange(n)])
    if op == 1 and n:
        for _ in range(rng.choice([1, 1, 2, 8])):
            i = rng.randrange(n)
            data[i] ^= 1 << rng.randrange(8)
        return bytes(data)
    if op == 2:
        i = rng.randrange(n + 1)
        junk = rng.choice([b"\x00", b"\xff\xfe", b"\n", b"{", b"]", b'"', b"\\", bytes(rng.randrange(256) for _ in
                                                                                           range(16))])
        return bytes(data[:i] + junk + data[i:])
    if op == 3 and n:
        i, j = sorted(rng.randrange(n + 1) for _ in range(2))
        return bytes(data[:j] + data[i:j] + data[j:])
    if op == 4 and n:
        i, j = sorted(rng.randrange(n + 1) for _ in range(2))
        return bytes(data[:i] + data[j:])
    return bytes(data) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))


def special_file(rng: random.Random, work: Path) -> str:
    """A path that is no ordinary input: empty, /dev/null, /dev/zero, a folder, missing, huge, binary."""
    pick = rng.randrange(7)
    if pick == 0:
        (work / "empty").write_bytes(b"")
        return str(work / "empty")
    if pick == 1:
        return "/dev/null"
    if pick == 2:
        return "/dev/zero"
    if pick == 3:
        return str(work)
    if pick == 4:
        return str(work / "missing.json")
    if pick == 5:
        (work / "huge").write_bytes(b"[" + b"0," * (6 << 20) + b"0]")
        return str(work / "huge")
    (work / "binary").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    return str(work / "binary")


# ------------------------------------------------------------------------------------------------ cases


@dataclass
class Case:
    """One input and the command that reads it."""

    kind: str
    command: str
    argv: list[str]
    label: str
    crafted: bool = False  # a checkpoint built to run code when unpickled


def _seeds(pattern: str) -> list[Path]:
    return sorted(SPECS.glob(pattern))


@dataclass
class Corpus:
    """The shipped inputs the mutations start from."""

    scenarios: list[Path] = field(default_factory=lambda: _seeds("scenarios/**/*.json"))
    traces: list[Path] = field(default_factory=lambda: _seeds("traces/*.jsonl"))
    logs: list[Path] = field(default_factory=lambda: _seeds("logs/*.log"))
    configs: list[Path] = field(default_factory=lambda: [p for p in _seeds("configs/*.json")
                                                         if p.stem in ("tiny", "controller", "default", "async")])
    checkpoint: bytes = b""
    states: int = -1  # distinct states of the whole tiny exploration: what any resumed run must report


class _Crafted:
    """Unpickling this runs a shell command (it creates the marker file): a checkpoint must never be a pickle."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (os.system, (f"touch {self.marker}",))


def make_case(kind: str, rng: random.Random, corpus: Corpus, work: Path) -> Case:
    """The case of one kind that rng draws, with its input file written under work."""
    if kind == "run":
        return _json_case("run", ["run"], corpus.scenarios, rng, work, [])
    if kind == "config":
        return _json_case("explore", ["explore", "--quiet", "--max-states", "300", "--config"], corpus.configs, rng,
                          work, [])
    if kind == "trace":
        return _lines_case("check-trace", ["check-trace"], corpus.traces, rng, work, json_lines=True)
    if kind == "log":
        return _lines_case("check-log", ["check-log"], corpus.logs, rng, work, json_lines=False)
    if kind == "checkpoint":
        return _checkpoint_case(rng, corpus, work)
    return _flags_case(rng, work)


def _json_case(command: str, head: list[str], seeds: list[Path], rng: random.Random, work: Path,
               tail: list[str]) -> Case:
    seed = rng.choice(seeds)
    path = work / "input.json"
    r = rng.random()
    if r < 0.05:
        return Case(command, command, [*head, special_file(rng, work), *tail], "special file")
    if r < 0.25:
        path.write_bytes(mutate_bytes(seed.read_bytes(), rng))
        label = f"bytes of {seed.name}"
    else:
        path.write_text(dumps(mutate_doc(json.loads(seed.read_text()), rng)), encoding="utf-8")
        label = f"structure of {seed.name}"
    return Case(command, command, [*head, str(path), *tail], label)


def _lines_case(command: str, head: list[str], seeds: list[Path], rng: random.Random, work: Path,
                json_lines: bool) -> Case:
    seed = rng.choice(seeds)
    path = work / ("input.jsonl" if json_lines else "input.log")
    if rng.random() < 0.05:
        return Case(command, command, [*head, special_file(rng, work)], "special file")
    lines = seed.read_bytes().splitlines(keepends=True)
    op = rng.randrange(7)
    i = rng.randrange(len(lines)) if lines else 0
    if op == 0 and json_lines and lines:  # one event mutated structurally
        try:
            lines[i] = dumps(mutate_doc(json.loads(lines[i]), rng)).encode() + b"\n"
        except ValueError:
            lines[i] = mutate_bytes(lines[i], rng)
        label = f"event {i + 1} of {seed.name}"
    elif op == 0 and lines:  # a number in one line made absurd
        words = lines[i].split(b"=")
        lines[i] = (b"=" + b"9" * 5000).join(words[:2] + words[2:]) if len(words) > 1 else lines[i] + b"9" * 5000
        label = f"huge number on line {i + 1} of {seed.name}"
    elif op == 1 and lines:
        lines[i] = mutate_bytes(lines[i], rng)
        label = f"bytes of line {i + 1} of {seed.name}"
    elif op == 2 and lines:
        lines.insert(i, lines[rng.randrange(len(lines))])
        label = f"a line repeated in {seed.name}"
    elif op == 3 and lines:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        label = f"lines {i + 1} and {j + 1} swapped in {seed.name}"
    elif op == 4:
        lines.insert(i, b"x" * rng.choice([2 << 20, 100_000]) + rng.choice([b"\n", b""]))
        label = f"a long line in {seed.name}"
    elif op == 5:
        lines = lines[: i]
        label = f"{seed.name} cut after {i} lines"
    else:
        data = mutate_bytes(b"".join(lines), rng)
        lines = [data]
        label = f"bytes of {seed.name}"
    path.write_bytes(b"".join(lines))
    return Case(command, command, [*head, str(path)], label)


def _checkpoint_case(rng: random.Random, corpus: Corpus, work: Path) -> Case:
    path = work / "input.ck"
    head = ["explore", "--config", "tiny", "--quiet", "--json", "--resume"]
    pick = rng.random()
    if pick < 0.15:
        marker = work / MARKER
        path.write_bytes(pickle.dumps(_Crafted(str(marker)), protocol=rng.choice([2, 4, 5])))
        return Case("checkpoint", "explore", [*head, str(path)], "crafted pickle", crafted=True)
    if pick < 0.2:
        return Case("checkpoint", "explore", [*head, special_file(rng, work)], "special file")
    if pick < 0.25:
        return Case("checkpoint", "explore", [*head, ""], "empty --resume")
    path.write_bytes(mutate_bytes(corpus.checkpoint, rng))
    return Case("checkpoint", "explore", [*head, str(path)], "bytes of a tiny checkpoint")


FLAG_VALUES = ["-1", "0", "1e9", "nan", "inf", "-inf", "1.5", "", "x", "9" * 5000, "99999999999999999999", " 3",
               "0x10", "1_000", "٣"]


def _flags_case(rng: random.Random, work: Path) -> Case:
    if rng.random() < 0.1:  # an output path that cannot be written
        # Under a file, not in a missing folder: run as root, `--out /nonexistent/x` made that folder outside the
        # fuzzer's own work folder.
        blocker = work / "a-file"
        blocker.touch()
        target = rng.choice(["/dev/null", str(blocker / "x"), str(work), "/proc/version"])
        argv = rng.choice([["explore", "--config", "tiny", "--quiet", "--max-states", "50", "--out", target],
                           ["table", "--output", target + "/t.md" if target == str(work) else target]])
        return Case("flags", argv[0], argv, f"{argv[0]} writing to {target}")
    command, flags = rng.choice([
        ("explore", ["--walks", "--depth", "--seed", "--max-states", "--local-levels", "--checkpoint-every"]),
        ("prove", ["--bmc", "--brokers", "--trace-depth"]),
    ])
    flag = rng.choice(flags)
    value = rng.choice(FLAG_VALUES)
    argv = [command, flag, value]
    if command == "explore":
        argv += ["--config", "tiny", "--quiet", "--max-states", "50"] if flag != "--max-states" else ["--quiet"]
        if flag == "--depth":
            argv += ["--walks", "1"]
    else:
        argv += ["--invariant", "table-moves", "--brokers", "1"] if flag != "--brokers" else ["--invariant",
                                                                                             "table-moves"]
    return Case("flags", command, argv, f"{command} {flag} {value[:20]!r}")


# ------------------------------------------------------------------------------------------------ running


@dataclass
class Outcome:
    """What one case did."""

    code: int | None  # exit code; None when it hung (killed at the timeout)
    signal: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    seconds: float = 0.0
    code_ran: bool = False


def _limits(memory: int, cpu: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_forked(argv: list[str], memory: int, cpu: int, timeout: float) -> Outcome:
    """Run `kcm argv` in a child forked from this process (kcm already imported), with the caps."""
    from kcm.cli import main

    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: behave as the console script would, then leave without cleanup
        code = 1
        try:
            os.setpgrp()
            _limits(memory, cpu)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            # Fresh text streams on fds 1 and 2 (the parent's may be a test runner's capture buffers).
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            sys.argv = ["kcm", *argv]
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int) and exc.code is not None:
                print(exc.code, file=sys.stderr)
        except BaseException:  # what the interpreter does with an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
    status = None
    while time.monotonic() - start < timeout:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.005)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    seconds = time.monotonic() - start
    out.seek(0)
    err.seek(0)
    o, e = out.read(1 << 20), err.read(1 << 20)
    out.close()
    err.close()
    if status is None:
        return Outcome(None, 0, o, e, seconds)
    if os.WIFSIGNALED(status):
        return Outcome(-os.WTERMSIG(status), os.WTERMSIG(status), o, e, seconds)
    return Outcome(os.WEXITSTATUS(status), 0, o, e, seconds)


def run_exec(argv: list[str], memory: int, cpu: int, timeout: float) -> Outcome:
    """Run the installed console script `kcm argv` with the caps."""
    exe = shutil.which("kcm", path=str(Path(sys.executable).parent)) or "kcm"
    start = time.monotonic()
    try:
        done = subprocess.run([exe, *argv], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              preexec_fn=lambda: _limits(memory, cpu), start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        return Outcome(None, 0, exc.stdout or b"", exc.stderr or b"", time.monotonic() - start)
    code = done.returncode
    return Outcome(code, -code if code < 0 else 0, done.stdout[: 1 << 20], done.stderr[: 1 << 20],
                   time.monotonic() - start)


# ------------------------------------------------------------------------------------------------ judging


def verdicts(case: Case, out: Outcome) -> list[str]:
    """What is wrong with an outcome ([] when it is as the exit-code table says)."""
    bad = []
    text = out.stderr.decode("utf-8", "replace")
    if out.code is None:
        bad.append("hang")
    elif out.signal:
        bad.append(f"killed by signal {out.signal}")
    elif out.code not in ALLOWED[case.command]:
        bad.append(f"exit {out.code}")
    if "Traceback (most recent call last)" in text:
        bad.append("traceback")
    if out.code_ran:
        bad.append("crafted checkpoint ran code")
    if out.code == 2 and len([line for line in text.splitlines() if line.strip()]) > 1:
        bad.append("error of more than one line")
    return bad


def traceback_kind(text: str) -> str:
    """The exception of a traceback's last line ('ValueError', ...)."""
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last.split(":", 1)[0].strip()[:60]


def make_checkpoint(work: Path) -> tuple[bytes, int]:
    """A real checkpoint of a partial `kcm explore --config tiny` (the bytes the checkpoint mutations start
    from), and the distinct states of the whole exploration."""
    path = work / "tiny.ck"
    kcm = [sys.executable, "-m", "kcm.cli", "explore", "--config", "tiny", "--quiet"]
    subprocess.run([*kcm, "--max-states", "200", "--checkpoint", str(path), "--checkpoint-every", "0"],
                   capture_output=True, timeout=300)
    whole = subprocess.run([*kcm, "--json"], capture_output=True, timeout=300, text=True)
    states = json.loads(whole.stdout)["distinct_states"]
    return (path.read_bytes() if path.exists() else b"not a checkpoint"), states


def resumed_states(out: Outcome) -> int | None:
    """The distinct states a resumed run printed (its --json summary), None if it printed none."""
    try:
        return int(json.loads(out.stdout)["distinct_states"])
    except (ValueError, KeyError, TypeError):
        return None


def _stop_on_signals() -> list[int]:
    """A list that becomes non-empty when SIGTERM or SIGINT arrives (the case running then is finished first)."""
    stop: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, frame: stop.append(number))
    return stop


def case_rng(seed: int, index: int) -> random.Random:
    """The generator of case `index` of a run seeded with `seed` (each case reproducible on its own)."""
    return random.Random(f"kcm-fuzz:{seed}:{index}")


def main(argv: list[str] | None = None) -> int:
    """Generate and run the cases; print the table; exit 1 if any outcome is wrong."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument("--case", type=int, help="run only this case (its index in the run)")
    p.add_argument("--show", action="store_true", help="with --case: print the command and its output")
    p.add_argument("--mode", choices=("fork", "exec"), default="fork")
    p.add_argument("--memory-mb", type=int, default=2048, help="address-space cap per case (default 2048)")
    p.add_argument("--cpu-seconds", type=int, default=60, help="CPU cap per case (default 60)")
    p.add_argument("--timeout", type=float, default=120.0, help="wall-clock cap per case (default 120 s)")
    p.add_argument("--save", help="copy the input of every wrong case into this folder")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        p.error(f"--kinds: unknown {sorted(unknown)}; known: {', '.join(KINDS)}")
    if args.mode == "fork":
        import kcm.cli  # noqa: F401  (imported once here; every forked case starts from it)

        kcm.cli.build_parser()
    runner = run_forked if args.mode == "fork" else run_exec
    memory = args.memory_mb << 20
    base = Path(tempfile.mkdtemp(prefix="kcm-fuzz-"))
    try:
        corpus = Corpus()
        if "checkpoint" in kinds:
            corpus.checkpoint, corpus.states = make_checkpoint(base)
        indexes = [args.case] if args.case is not None else range(args.cases)
        stats: dict[str, Counter] = defaultdict(Counter)
        tracebacks: dict[str, Counter] = defaultdict(Counter)
        wrong: list[dict[str, Any]] = []
        started = time.monotonic()
        done = 0
        stop = _stop_on_signals()
        for index in indexes:
            if stop:
                break  # SIGTERM or SIGINT: report the cases run so far
            rng = case_rng(args.seed, index)
            kind = kinds[index % len(kinds)]
            work = base / f"case{index}"
            work.mkdir()
            case = make_case(kind, rng, corpus, work)
            out = runner(case.argv, memory, args.cpu_seconds, args.timeout)
            out.code_ran = (work / MARKER).exists()
            bad = verdicts(case, out)
            if kind == "checkpoint" and out.code in (0, 1) and not bad and resumed_states(out) != corpus.states:
                bad.append(f"resumed to {resumed_states(out)} states, not {corpus.states}")
            row = stats[kind]
            row["cases"] += 1
            row[f"exit {out.code}" if out.code is not None else "hang"] += 1
            row["seconds"] += out.seconds
            for b in bad:
                row["killed" if b.startswith("killed") else "wrong counts" if b.startswith("resumed") else b] += 1
            if "traceback" in bad:
                tracebacks[kind][traceback_kind(out.stderr.decode("utf-8", "replace"))] += 1
            if bad:
                wrong.append({"case": index, "kind": kind, "label": case.label, "problems": bad,
                              "argv": [a if len(a) < 200 else a[:200] + "..." for a in case.argv],
                              "stderr_tail": out.stderr.decode("utf-8", "replace")[-300:]})
                if args.save:
                    dest = Path(args.save) / f"case{index}-{kind}"
                    shutil.copytree(work, dest, dirs_exist_ok=True)
            if args.show:
                print("argv:", json.dumps(case.argv)[:2000])
                print("label:", case.label, "| exit:", out.code, "| problems:", bad)
                print("stdout:", out.stdout.decode("utf-8", "replace")[:3000])
                print("stderr:", out.stderr.decode("utf-8", "replace")[:3000])
            shutil.rmtree(work, ignore_errors=True)
            done += 1
        elapsed = time.monotonic() - started
    finally:
        shutil.rmtree(base, ignore_errors=True)
    summary = {"seed": args.seed, "cases": done, "interrupted": bool(stop), "mode": args.mode,
               "seconds": round(elapsed, 1),
               "by_kind": {k: {n: (round(v, 1) if n == "seconds" else v) for n, v in sorted(c.items())}
                           for k, c in stats.items()},
               "tracebacks": {k: dict(c) for k, c in tracebacks.items()},
               "wrong": len(wrong), "first_wrong": wrong[:20]}
    if args.json:
        print(json.dumps(summary, indent=1))
    elif not args.show:
        print(f"kcm fuzz: seed {args.seed}, {done} cases{' (interrupted)' if stop else ''}, mode {args.mode}, "
              f"{elapsed:.0f} s")
        problems = ("traceback", "hang", "killed", "crafted checkpoint ran code", "wrong counts",
                    "error of more than one line")
        print(f"  {'kind':11} {'cases':>6} {'exit 0':>7} {'exit 1':>7} {'exit 2':>7} " +
              " ".join(f"{p.split()[0]:>9}" for p in problems) + f" {'s/case':>7}")
        for kind, c in stats.items():
            print(f"  {kind:11} {c['cases']:6} {c['exit 0']:7} {c['exit 1']:7} {c['exit 2']:7} " +
                  " ".join(f"{c[p]:9}" for p in problems) + f" {c['seconds'] / max(c['cases'], 1):7.2f}")
        for kind, c in tracebacks.items():
            print(f"  tracebacks in {kind}: {dict(c)}")
        for w in wrong[:10]:
            print(f"  case {w['case']} ({w['kind']}: {w['label']}): {', '.join(w['problems'])}: "
                  f"{w['stderr_tail'].strip().splitlines()[-1] if w['stderr_tail'].strip() else ''}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
