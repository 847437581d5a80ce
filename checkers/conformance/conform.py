"""`kcm conform`: drive another implementation of the controller through scenarios and judge what it does.

For each scenario the adapter (the user's program) is started in a fresh process with the scenario on stdin
(the `expect*` keys removed) and `KCM_SCENARIO` / `KCM_RESULT` in its environment. Its stdout is its trace (one
JSON event per line), read up to a bound and judged by the trace oracle with the scenario's rule set; the result
document it may write to `KCM_RESULT` is compared with the reference's (`kcm run` of the same scenario) on each
partition's state, leader, leader epoch and ISR and each replica's state.

Verdicts: conforms, violation, divergence, adapter error, timeout, skipped (the adapter exited 3). A failure is
shrunk, when asked (an output folder), by removing steps while the scenario stays valid and the adapter still
fails the same way (the same verdict and rule id, or the same diverging field). The contract is
`conformance.md` beside `scenario.md`; docs/conformance.md explains how to write an adapter.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcm.checkers.core.scenario import InvalidScenario, read_file, run, validate
from kcm.checkers.oracle.finding import Finding
from kcm.checkers.oracle.oracle_trace import MAX_LINE_BYTES, TRACE_ONLY, TraceChecker, Verdict
from kcm.checkers.reports import ci_formats
from kcm.model import strictjson
from kcm.model.tables import rule_set

CONFORMS, VIOLATION, DIVERGENCE = "conforms", "violation", "divergence"
ADAPTER_ERROR, TIMEOUT, SKIPPED = "adapter error", "timeout", "skipped"
VERDICTS = (CONFORMS, VIOLATION, DIVERGENCE, ADAPTER_ERROR, TIMEOUT, SKIPPED)
FAILURES = frozenset({VIOLATION, DIVERGENCE, ADAPTER_ERROR, TIMEOUT})
SKIP_EXIT = 3  # the adapter does not implement an operation or setting the scenario uses

DEFAULT_TIMEOUT = 60.0
# What is read of an adapter's stdout (its trace) and result document; beyond that it is flooding, not tracing.
MAX_OUTPUT_BYTES = 64 << 20
MAX_RESULT_BYTES = 8 << 20
STDERR_TAIL = 4096  # the end of the adapter's stderr kept for an adapter error's message
MAX_SHRINK_RUNS = 200  # adapter runs one shrink may take
MAX_SHRINK_SECONDS = 120.0  # and the time it may take (a candidate that hangs costs the whole timeout)
COMPARED_FIELDS = ("state", "leader", "leader_epoch", "isr")
# The ids a failure that is not a rule violation is reported under (JUnit's type, SARIF's ruleId), in words.
FAILURE_RULES = {
    DIVERGENCE: ("divergence", "The implementation's result document agrees with the reference's (kcm run of the "
                               "same scenario) on every partition's state, leader, leader epoch and ISR and every "
                               "replica's state."),
    ADAPTER_ERROR: ("adapter-error", "The adapter exits 0 (ran) or 3 (not implemented), writes a trace of JSON "
                                     "events on stdout within the bound, and a well-formed result document if any."),
    TIMEOUT: ("timeout", "The adapter runs a scenario within the timeout."),
}


class ConformInputError(Exception):
    """Bad input to `kcm conform` (adapter, folder, scenario, flag): the message is one line naming it."""


@dataclass
class AdapterRun:
    """What one run of the adapter gave."""

    code: int | None = None
    stdout: bytes = b""
    stderr_tail: str = ""
    timed_out: bool = False
    flooded: bool = False
    limit: int = 0  # the stdout bound the run was held to
    start_error: str = ""
    result: bytes | None = None
    result_error: str = ""
    seconds: float = 0.0


@dataclass
class Outcome:
    """The verdict of one scenario, with what supports it."""

    name: str
    file: str
    kind: str
    message: str = ""
    rule: str = ""  # the oracle's rule id for a violation, the failure's id otherwise
    line: int | None = None  # the trace line of a violation
    event: dict | None = None
    focus: dict | None = None
    differences: list[dict[str, Any]] = field(default_factory=list)
    not_judged: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0
    compared: bool = False  # the adapter wrote a result document and it was compared with the reference's
    shrunk_steps: int | None = None
    shrink_runs: int = 0
    shrunk_file: str | None = None
    trace_file: str | None = None

    @property
    def finding(self) -> Finding | None:
        """A failure in the shape every oracle shares (rule id, message, location, evidence); None when the
        scenario conforms or was skipped. The location is the scenario's file and, for a violation, the line of the
        adapter's trace."""
        if self.kind in (CONFORMS, SKIPPED):
            return None
        if self.kind == VIOLATION:
            return Finding(self.rule, self.message, self.line, self.file,
                           {"event": self.event, "state_before": self.focus})
        evidence: dict[str, Any] = {"differences": self.differences} if self.differences else {"error": self.rule}
        return Finding(FAILURE_RULES[self.kind][0], self.message, self.line, self.file, evidence)

    def signature(self) -> tuple[str, str]:
        """What "fails the same way" compares: the verdict and its rule id, diverging field or error kind."""
        if self.kind == DIVERGENCE:
            return self.kind, self.differences[0]["field"] if self.differences else ""
        return self.kind, self.rule

    def to_json(self) -> dict[str, Any]:
        """JSON-ready data."""
        out: dict[str, Any] = {"scenario": self.name, "file": self.file, "verdict": self.kind,
                               "seconds": round(self.seconds, 3), "steps": self.steps}
        if self.message:
            out["message"] = self.message
        if self.rule:
            out["rule_id"] = self.rule
        if self.kind == VIOLATION:
            out.update(line=self.line, event=self.event, state_focus=self.focus)
        if self.differences:
            out["differences"] = self.differences
        if self.kind not in (SKIPPED, TIMEOUT, ADAPTER_ERROR):
            out["not_judged"] = self.not_judged
            out["result_compared"] = self.compared
        found = self.finding
        if found is not None:
            out["finding"] = found.to_dict()
        if self.shrunk_steps is not None:
            out.update(shrunk_steps=self.shrunk_steps, shrink_runs=self.shrink_runs, shrunk_file=self.shrunk_file,
                       trace_file=self.trace_file)
        return out


@dataclass
class Options:
    """How to run and judge: the adapter's argv and the command's settings."""

    adapter: list[str]
    rules: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    out: Path | None = None
    max_output: int = MAX_OUTPUT_BYTES
    cwd: str | None = None


@dataclass
class ConformReport:
    """Every scenario's outcome, in the order the scenarios were given."""

    adapter: list[str]
    source: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    jobs: int = 1

    def counts(self) -> dict[str, int]:
        """How many scenarios got each verdict."""
        return {k: sum(o.kind == k for o in self.outcomes) for k in VERDICTS}

    @property
    def ok(self) -> bool:
        """Whether every scenario that ran conforms."""
        return not any(o.kind in FAILURES for o in self.outcomes)

    def text(self) -> str:
        """The report for a terminal: one line per scenario, the failures' details, a summary."""
        lines = []
        for o in self.outcomes:
            if o.kind == CONFORMS:
                # what "conforms" rests on: a trace alone judges less than a trace and a result document
                judged = "trace and result" if o.compared else "trace only, no result document"
                n = len(o.not_judged)
                lines.append(f"{o.kind:<13} {o.name} ({judged}; {n} rule{'s' * (n != 1)} not judged)")
                continue
            lines.append(f"{o.kind:<13} {o.name}")
            if o.kind == SKIPPED:
                continue
            lines += [f"    {m}" for m in o.message.splitlines()[:12]]
            if o.shrunk_steps is not None:
                lines.append(f"    shrunk from {o.steps} to {o.shrunk_steps} steps ({o.shrink_runs} runs): "
                             f"{o.shrunk_file}")
        counts = ", ".join(f"{n} {k}" for k, n in self.counts().items() if n)
        rate = len(self.outcomes) / self.seconds if self.seconds > 0 else 0.0
        lines.append(f"conform: {len(self.outcomes)} scenarios from {self.source} in {self.seconds:.1f} s "
                     f"({rate:.1f}/s, {self.jobs} job{'s' * (self.jobs != 1)}): {counts or 'none'}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {"adapter": self.adapter, "source": self.source, "ok": self.ok, "counts": self.counts(),
                "seconds": round(self.seconds, 3), "jobs": self.jobs, "results": [o.to_json() for o in self.outcomes]}

    def cases(self) -> list[ci_formats.Case]:
        """One CI case per scenario (JUnit XML, SARIF)."""
        out = []
        for o in self.outcomes:
            c = ci_formats.Case("conform", o.name, file=o.file, seconds=o.seconds)
            if o.kind == SKIPPED:
                c.status, c.message = ci_formats.SKIPPED, o.message or "not implemented by the adapter"
            elif o.kind in FAILURES:
                c.status, c.message = ci_formats.FAILED, f"{o.kind}: {o.message.splitlines()[0] if o.message else ''}"
                if o.kind == VIOLATION:
                    c.rule, c.rule_text = o.rule, TRACE_ONLY.get(o.rule, "")
                else:
                    c.rule, c.rule_text = FAILURE_RULES[o.kind]
                c.detail = o.to_json()
            out.append(c)
        return out

    @property
    def exit_code(self) -> int:
        """0 every scenario that ran conforms, 1 otherwise."""
        return 0 if self.ok else 1


# ------------------------------------------------------------------------------------------------ inputs


def parse_adapter(text: str) -> list[str]:
    """The adapter's argv (split like a shell line, run without a shell); ConformInputError if it cannot run."""
    try:
        argv = shlex.split(text)
    except ValueError as err:
        raise ConformInputError(f"--adapter {text!r}: cannot split it into words: {err}") from None
    if not argv:
        raise ConformInputError("--adapter: empty command")
    exe = argv[0]
    if os.sep in exe or (os.altsep and os.altsep in exe):
        if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
            raise ConformInputError(f"--adapter: no such adapter: {exe} is not an executable file")
    elif shutil.which(exe) is None:
        raise ConformInputError(f"--adapter: no such adapter: {exe} is not on PATH")
    return argv


def load_scenarios(folder: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, path, document) of every *.json scenario under folder, validated; ConformInputError on the first
    unreadable or invalid one (nothing is run then)."""
    if not folder.is_dir():
        raise ConformInputError(f"{folder}: not a readable folder")
    try:
        paths = sorted(p for p in folder.rglob("*.json") if p.is_file())
    except OSError as err:
        raise ConformInputError(f"{folder}: cannot read: {err.strerror or err}") from None
    if not paths:
        raise ConformInputError(f"{folder}: no *.json scenario in it")
    out = []
    for p in paths:
        try:
            doc = read_file(p)
        except OSError as err:
            raise ConformInputError(f"{p}: cannot read: {err.strerror or err}") from None
        except InvalidScenario as err:
            raise ConformInputError(f"{p}: invalid scenario: {err}") from None
        out.append((p.relative_to(folder).as_posix(), str(p), doc))
    return out


def generate_suite_folder(config: str, into: Path) -> Path:
    """Write the `kcm suite` of an explorer config into a folder; ConformInputError when it cannot be made."""
    if importlib.util.find_spec("kcm.checkers.conformance.suite") is None:
        raise ConformInputError("--suite: kcm suite is not available")
    from kcm.checkers.conformance import suite

    try:
        suite.generate_suite(config, into)
    except suite.SuiteError as err:
        raise ConformInputError(f"--suite {config}: {err}") from None
    return into


def adapter_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The scenario as the adapter gets it: the `expect*` keys removed (of the document and of each step)."""
    out = {k: v for k, v in doc.items() if not k.startswith("expect")}
    out["steps"] = [{k: v for k, v in s.items() if not k.startswith("expect")} for s in doc["steps"]]
    return out


# ------------------------------------------------------------------------------------------------ one run


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_adapter(argv: list[str], doc: dict[str, Any], timeout: float, max_output: int = MAX_OUTPUT_BYTES,
                cwd: str | None = None) -> AdapterRun:
    """Run the adapter once on a scenario: stdin, environment, bounded stdout, kill of its process group at the
    timeout or past the output bound."""
    text = json.dumps(doc, indent=1).encode("utf-8")
    out = AdapterRun(limit=max_output)
    with tempfile.TemporaryDirectory(prefix="kcm-conform-") as tmp:
        scenario_path, result_path = Path(tmp, "scenario.json"), Path(tmp, "result.json")
        scenario_path.write_bytes(text)
        env = dict(os.environ, KCM_SCENARIO=str(scenario_path), KCM_RESULT=str(result_path))
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, cwd=cwd, start_new_session=True)
        except OSError as err:
            out.start_error = f"cannot start {argv[0]}: {err.strerror or err}"
            return out
        stdout, stderr = bytearray(), bytearray()

        def feed() -> None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(text)
                proc.stdin.close()
            except OSError:  # the adapter did not read its stdin: its business
                pass

        def drain_stdout() -> None:
            assert proc.stdout is not None
            fd = proc.stdout.fileno()
            while chunk := os.read(fd, 1 << 16):
                if len(stdout) + len(chunk) > max_output:
                    out.flooded = True
                    _kill_group(proc)
                    return
                stdout.extend(chunk)

        def drain_stderr() -> None:
            assert proc.stderr is not None
            fd = proc.stderr.fileno()
            while chunk := os.read(fd, 1 << 16):
                stderr.extend(chunk)
                del stderr[:-STDERR_TAIL]

        threads = [threading.Thread(target=f, daemon=True) for f in (feed, drain_stdout, drain_stderr)]
        for th in threads:
            th.start()
        try:
            out.code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            out.timed_out = True
            _kill_group(proc)
            proc.wait()
        _kill_group(proc)  # whatever the adapter left running in its group
        for th in threads:
            th.join(timeout=5)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        out.seconds = time.monotonic() - start
        out.stdout = bytes(stdout)
        out.stderr_tail = stderr.decode("utf-8", "replace")
        if result_path.exists():
            try:
                out.result = strictjson.read_bounded(result_path, MAX_RESULT_BYTES)
            except strictjson.InputError as err:
                out.result_error = str(err)
            except OSError as err:
                out.result_error = f"cannot read it: {err.strerror or err}"
    return out


def judge_trace(raw: bytes, rules: str) -> Verdict:
    """The trace oracle's verdict on the adapter's stdout (one JSON event per line)."""
    checker = TraceChecker(rule_set(rules))
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_BYTES:
            return Verdict(False, number, None, f"a line longer than {MAX_LINE_BYTES:,} bytes", malformed=True)
        if checker.feed_line(line.decode("utf-8", "surrogateescape")) is not None:
            break
    verdict = checker.verdict()
    if verdict.ok and verdict.events == 0:
        return Verdict(False, 1, None, "no events on stdout: an empty trace proves nothing", malformed=True)
    return verdict


def _bad_result(where: str, problem: str) -> str:
    return f"malformed result document: {where}: {problem}"


def compare_results(reference: dict[str, Any], got: Any) -> tuple[list[dict[str, Any]], str]:
    """(differences, '') between the reference's result document and the adapter's, or ([], why the adapter's is
    malformed). An absent partition or replica counts as a non-existent one."""
    if not isinstance(got, dict):
        return [], _bad_result("$", "not a JSON object")
    parts, reps = got.get("partitions", {}), got.get("replicas", {})
    if not isinstance(parts, dict):
        return [], _bad_result("$.partitions", "not an object")
    if not isinstance(reps, dict):
        return [], _bad_result("$.replicas", "not an object")
    kinds = {"state": str, "leader": int, "leader_epoch": int, "isr": list}
    for name, p in parts.items():
        if not isinstance(p, dict):
            return [], _bad_result(f"$.partitions.{name}", "not an object")
        for key, kind in kinds.items():
            if key not in p:
                return [], _bad_result(f"$.partitions.{name}", f"no {key}")
            value = p[key]
            if not isinstance(value, kind) or isinstance(value, bool) or \
                    (kind is list and not all(type(b) is int for b in value)):
                wanted = "a list of broker ids" if kind is list else kind.__name__
                return [], _bad_result(f"$.partitions.{name}.{key}", f"{strictjson.cut(value)} is not {wanted}")
    for name, s in reps.items():
        if not isinstance(s, str):
            return [], _bad_result(f"$.replicas.{name}", f"{strictjson.cut(s)} is not a state name")
    diffs: list[dict[str, Any]] = []
    absent = {"state": "NonExistentPartition"}
    for name in sorted(set(reference["partitions"]) | set(parts)):
        ref, mine = reference["partitions"].get(name, absent), parts.get(name, absent)
        for key in COMPARED_FIELDS:
            if ref is absent or mine is absent:
                if key != "state":
                    continue
            a, b = ref[key], mine[key]
            if key == "isr":
                a, b = sorted(a), sorted(b)
            if a != b:
                diffs.append({"field": f"partitions.{name}.{key}", "reference": a, "adapter": b})
    for name in sorted(set(reference["replicas"]) | set(reps)):
        a, b = reference["replicas"].get(name, "NonExistentReplica"), reps.get(name, "NonExistentReplica")
        if a != b:
            diffs.append({"field": f"replicas.{name}", "reference": a, "adapter": b})
    return diffs, ""


def judge(name: str, file: str, doc: dict[str, Any], got: AdapterRun, rules: str | None) -> Outcome:
    """The verdict of one adapter run on a (valid) scenario."""
    o = Outcome(name, file, CONFORMS, steps=len(doc["steps"]), seconds=got.seconds)
    tail = got.stderr_tail.strip().splitlines()
    said = f" (stderr: {tail[-1][:200]})" if tail else ""
    if got.start_error:
        o.kind, o.rule, o.message = ADAPTER_ERROR, "cannot start", got.start_error
    elif got.timed_out:
        o.kind, o.rule, o.message = TIMEOUT, "timeout", f"killed after {got.seconds:.1f} s"
    elif got.flooded:
        o.kind, o.rule = ADAPTER_ERROR, "flooded stdout"
        o.message = f"flooded stdout: more than {got.limit:,} bytes; killed"
    elif got.code == SKIP_EXIT:
        o.kind, o.message = SKIPPED, f"not implemented by the adapter{said}"
    elif got.code is not None and got.code < 0:
        o.kind, o.rule = ADAPTER_ERROR, f"signal {-got.code}"
        o.message = f"the adapter was killed by signal {-got.code}{said}"
    elif got.code != 0:
        o.kind, o.rule, o.message = ADAPTER_ERROR, f"exit {got.code}", f"the adapter exited with {got.code}{said}"
    if o.kind != CONFORMS:
        return o
    verdict = judge_trace(got.stdout, rules or doc["config"].get("rules", "seeds"))
    o.not_judged = dict(getattr(verdict, "not_judged", None) or {})
    if verdict.malformed:
        o.kind, o.rule, o.line = ADAPTER_ERROR, "malformed trace", verdict.line
        o.message = f"malformed trace: stdout line {verdict.line}: {verdict.rule}"
        return o
    if not verdict.ok:
        o.kind, o.line, o.event = VIOLATION, verdict.line, verdict.event
        o.rule = verdict.rule_id
        o.focus = getattr(verdict, "focus", None) or verdict.state_before
        o.message = f"trace line {verdict.line}: {verdict.rule}\nevent: {json.dumps(verdict.event, sort_keys=True)}"
        return o
    if got.result_error:
        o.kind, o.rule, o.message = ADAPTER_ERROR, "malformed result", f"malformed result document: {got.result_error}"
        return o
    if got.result is None:
        return o
    try:
        result = strictjson.loads(got.result)
    except strictjson.InputError as err:
        o.kind, o.rule, o.message = ADAPTER_ERROR, "malformed result", f"malformed result document: {err}"
        return o
    diffs, problem = compare_results(run(doc).result, result)
    o.compared = not problem
    if problem:
        o.kind, o.rule, o.message = ADAPTER_ERROR, "malformed result", problem
    elif diffs:
        o.kind, o.rule, o.differences = DIVERGENCE, FAILURE_RULES[DIVERGENCE][0], diffs
        o.message = "\n".join(f"{d['field']}: reference {json.dumps(d['reference'])}, adapter "
                              f"{json.dumps(d['adapter'])}" for d in diffs)
    return o


# ------------------------------------------------------------------------------------------------ shrinking


def shrink_steps(steps: list[dict[str, Any]], fails: Callable[[list[dict[str, Any]]], bool],
                 budget: int = MAX_SHRINK_RUNS) -> tuple[list[dict[str, Any]], int]:
    """(a smaller list of steps that still fails, candidates tried): delta debugging over the steps, halves first
    and single steps last, so the result is 1-minimal unless the budget ran out. `fails` says whether a candidate
    is a valid scenario that fails the same way."""
    best, tried, parts = list(steps), 0, 2
    if best:
        tried += 1
        if fails([]):
            return [], tried
    while len(best) > 1 and tried < budget:
        chunk = math.ceil(len(best) / parts)
        for i in range(0, len(best), chunk):
            candidate = best[:i] + best[i + chunk:]
            tried += 1
            if fails(candidate):
                best, parts = candidate, max(parts - 1, 2)
                break
            if tried >= budget:
                break
        else:
            if chunk == 1:
                break
            parts = min(parts * 2, len(best))
    return best, tried


def _safe_name(name: str) -> str:
    stem = name[:-5] if name.endswith(".json") else name
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem.replace("/", "__")).strip("._") or "scenario"


def _shrink_and_write(first: Outcome, doc: dict[str, Any], run0: AdapterRun, opts: Options) -> None:
    """Shrink a failed scenario and write the smallest one found, with the adapter's trace of it, under opts.out."""
    assert opts.out is not None
    base = {k: v for k, v in doc.items() if k not in ("expect", "expect_violation")}
    wanted = first.signature()
    best: dict[str, Any] = {"doc": base, "run": run0}
    deadline = time.monotonic() + MAX_SHRINK_SECONDS

    def fails(steps: list[dict[str, Any]]) -> bool:
        if time.monotonic() > deadline:
            return False
        candidate = dict(base, steps=steps)
        try:
            validate(candidate)
        except InvalidScenario:
            return False
        got = run_adapter(opts.adapter, adapter_document(candidate), opts.timeout, opts.max_output, opts.cwd)
        o = judge(first.name, first.file, candidate, got, opts.rules)
        if o.kind == DIVERGENCE and first.kind == DIVERGENCE:
            same = wanted[1] in {d["field"] for d in o.differences}
        else:
            same = o.signature() == wanted
        if same:
            best.update(doc=candidate, run=got)
        return same

    if first.kind == TIMEOUT:  # every try would take the whole timeout: the scenario is written as it is
        runs = 0
    else:
        runs = shrink_steps(list(doc["steps"]), fails)[1]
    # every candidate that failed the same way was kept, so the last one kept is the shrunk scenario
    kept = best["doc"]["steps"]
    shrunk = dict(best["doc"], name=f"{doc['name']} (shrunk by kcm conform from {len(doc['steps'])} to "
                                    f"{len(kept)} steps)")
    stem = opts.out / _safe_name(first.name)
    scenario_file, trace_file = stem.with_suffix(".json"), stem.with_suffix(".trace.jsonl")
    scenario_file.write_text(json.dumps(shrunk, indent=1) + "\n", encoding="utf-8")
    trace_file.write_bytes(best["run"].stdout)
    first.shrunk_steps, first.shrink_runs = len(shrunk["steps"]), runs
    first.shrunk_file, first.trace_file = str(scenario_file), str(trace_file)


def conform_one(name: str, file: str, doc: dict[str, Any], opts: Options) -> Outcome:
    """Run and judge one scenario; shrink and write it when it fails and an output folder is given."""
    got = run_adapter(opts.adapter, adapter_document(doc), opts.timeout, opts.max_output, opts.cwd)
    outcome = judge(name, file, doc, got, opts.rules)
    if outcome.kind in FAILURES and opts.out is not None:
        _shrink_and_write(outcome, doc, got, opts)
    return outcome


def run_conform(scenarios: list[tuple[str, str, dict[str, Any]]], opts: Options, source: str,
                jobs: int = 1) -> ConformReport:
    """Every scenario through the adapter, `jobs` at a time; OSError when the output folder cannot be written."""
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    report = ConformReport(opts.adapter, source, jobs=jobs)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        report.outcomes = list(pool.map(lambda s: conform_one(s[0], s[1], s[2], opts), scenarios))
    report.seconds = time.perf_counter() - start
    if opts.out is not None:
        (opts.out / "conform.json").write_text(json.dumps(report.to_json(), indent=1) + "\n", encoding="utf-8")
    return report


__all__ = ["ADAPTER_ERROR", "CONFORMS", "DIVERGENCE", "SKIPPED", "TIMEOUT", "VERDICTS", "VIOLATION", "AdapterRun",
           "ConformInputError", "ConformReport", "Options", "Outcome", "adapter_document", "compare_results",
           "conform_one", "generate_suite_folder", "judge", "judge_trace", "load_scenarios", "parse_adapter",
           "run_adapter", "run_conform", "shrink_steps"]
