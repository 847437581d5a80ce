"""The CI gate: the scenario library, the Z3 proofs, exploration of a small config and the sample traces, in that
order, stopping at the first failure with its smallest counterexample.

Each stage is a function returning a `Stage`; `run_gate` chains them. The `kcm gate` command only prints.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kcm.model import strictjson
from kcm.model.tables import DEFAULT_RULES, RULE_SETS, rule_set

DEFAULT_BROKERS = 5  # the cluster size `kcm prove` proves for when not told otherwise
DEFAULT_CONFIG = "tiny"
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
VALID, VIOLATION, MALFORMED = "valid", "violation", "malformed"
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class GateInputError(ValueError):
    """An input of the gate (traces folder, manifest, config, scenarios folder) that cannot be used at all."""


@dataclass
class Stage:
    """One stage's outcome: what it checked, and on failure what broke and the smallest counterexample."""

    name: str
    status: str = SKIPPED
    summary: str = ""
    seconds: float = 0.0
    failure: str = ""
    counterexample: Any = None

    def to_json(self) -> dict[str, Any]:
        """The stage as JSON-ready data."""
        return {"stage": self.name, "status": self.status, "summary": self.summary, "seconds": round(self.seconds, 3),
                "failure": self.failure or None, "counterexample": self.counterexample}


@dataclass
class GateReport:
    """The outcome of the whole gate."""

    stages: list[Stage] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every stage passed."""
        return all(s.status == PASSED for s in self.stages)

    def failed(self) -> Stage | None:
        """The stage that failed, if any (the gate stops there)."""
        return next((s for s in self.stages if s.status == FAILED), None)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        bad = self.failed()
        return {"ok": self.ok, "seconds": round(self.seconds, 3), "failed_stage": bad.name if bad else None,
                "stages": [s.to_json() for s in self.stages]}

    def text(self) -> str:
        """A short report for people: one line per stage, then the failure and its counterexample."""
        lines = ["kcm gate"]
        lines += [f"  {s.name:10} {s.status:8} {s.seconds:6.1f} s  {s.summary}" for s in self.stages]
        bad = self.failed()
        if bad is None:
            lines.append(f"gate passed in {self.seconds:.1f} s")
            return "\n".join(lines)
        if isinstance(bad.counterexample, dict):
            lines.append("counterexample:")
            lines += [f"  {k}: {json.dumps(v, sort_keys=True)}" for k, v in bad.counterexample.items()]
        lines.append(f"gate FAILED at {bad.name} after {self.seconds:.1f} s")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ scenarios


def library_dir() -> Path:
    """The shipped scenario library (specs/scenarios)."""
    return Path(str(resources.files("kcm.specs").joinpath("scenarios")))


def traces_dir() -> Path:
    """The shipped sample traces (specs/traces)."""
    return Path(str(resources.files("kcm.specs").joinpath("traces")))


def scenario_stage(folder: Path) -> Stage:
    """Run every file under folder (Markdown notes aside) as `kcm run` does; each must meet its own expectations."""
    from kcm.reference.scenario import InvalidScenario, read_file, run

    stage = Stage("scenarios")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".md")
    for path in files:
        name = str(path.relative_to(folder))
        try:
            outcome = run(read_file(path))
        except InvalidScenario as err:
            return _fail(stage, f"{name}: invalid scenario: {err}", {"scenario": name})
        except OSError as err:
            return _fail(stage, f"{name}: cannot read: {err.strerror or err}", {"scenario": name})
        if outcome.mismatches:
            return _fail(stage, f"{name}: {outcome.mismatches[0]}",
                         {"scenario": name, "mismatches": outcome.mismatches})
    if not files:
        return _fail(stage, f"no scenario files under {folder}", None)
    stage.status, stage.summary = PASSED, f"{len(files)} scenarios hold their expectations"
    return stage


# ------------------------------------------------------------------------------------------------ proofs


def prove_stage(rules: str = DEFAULT_RULES, brokers: int = DEFAULT_BROKERS) -> Stage:
    """Prove every safety invariant inductive with Z3, as `kcm prove` does; a failure carries its trace or CTI."""
    from kcm.checkers.prove.encoding import Encoding
    from kcm.checkers.prove.invariants import INVARIANTS
    from kcm.checkers.prove.proofs import PROVED, SolverGaveUp, prove

    stage = Stage("prove")
    enc = Encoding(rule_set(rules), brokers)
    for inv in INVARIANTS:
        try:
            result = prove(enc, inv, trace_depth=7)
        except SolverGaveUp as err:
            return _fail(stage, f"{inv.name}: {err}", None)
        if result.verdict != PROVED:
            cex = result.counterexample or result.cti
            return _fail(stage, f"{inv.name}: {result.verdict}", cex._asdict() if cex else None)
    stage.status = PASSED
    stage.summary = f"{len(INVARIANTS)} invariants proved inductive (rules {rules}, {brokers} brokers)"
    return stage


# ------------------------------------------------------------------------------------------------ exploration


def load_explore_config(name: str) -> dict[str, Any]:
    """The bounded config to explore; GateInputError when it cannot be loaded."""
    from kcm.reference.bounded import BadConfig, load_config

    try:
        return load_config(name)
    except BadConfig as err:
        raise GateInputError(f"--config: {err}") from None


def explore_stage(config: dict[str, Any], max_states: int | None = None) -> Stage:
    """Explore every state of the bounded config on one core (or the first max_states); every always and step
    property must hold."""
    from kcm.checkers import bfs
    from kcm.reference.bounded import BoundedSystem

    stage = Stage("explore")
    model = BoundedSystem(config)
    summary = bfs.explore(model, max_states).to_json(model)
    name = config.get("name", "config")
    stage.summary = (f"{name}: {summary['distinct_states']:,} states, depth {summary['depth']}, "
                     f"{len(summary['verdicts'])} properties checked")
    if summary["counterexamples"]:
        prop, cex = min(summary["counterexamples"].items(), key=lambda kv: (kv[1]["length"], kv[0]))
        return _fail(stage, f"{name}: {prop} violated ({cex['length']} steps after set-up)",
                     {"property": prop, "scenario": cex["scenario"]})
    stage.status = PASSED
    return stage


# ------------------------------------------------------------------------------------------------ traces


def trace_expectations(folder: Path) -> dict[str, dict[str, Any]]:
    """What each trace in folder must be judged: the manifest's entries, else from the name (`*invalid*`: a
    violation, at line N when the name holds `lineN`), else valid. GateInputError for a bad manifest."""
    listed: dict[str, Any] = {}
    manifest = folder / MANIFEST
    if manifest.exists():
        try:
            listed = strictjson.loads(strictjson.read_bounded(manifest, MAX_MANIFEST_BYTES))["expected"]
            if not isinstance(listed, dict):
                raise TypeError("'expected' is not an object")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise GateInputError(f"{manifest}: not a trace manifest ({err.__class__.__name__}: {err}); "
                                 "expected {\"expected\": {FILE: {\"verdict\": ..., \"line\": N}}}") from None
    out = {}
    for path in sorted(folder.glob("*.jsonl")):
        exp = listed.get(path.name)
        if exp is None:
            line = re.search(r"line(\d+)", path.name)
            exp = ({"verdict": VIOLATION, "line": int(line.group(1)) if line else None}
                   if "invalid" in path.name else {"verdict": VALID})
        _check_expectation(manifest, path.name, exp)
        out[path.name] = exp
    missing = sorted(set(listed) - set(out))
    if missing:
        raise GateInputError(f"{manifest}: lists traces that are not in {folder}: {', '.join(missing)}")
    return out


def _check_expectation(manifest: Path, name: str, exp: Any) -> None:
    ok = (isinstance(exp, dict) and exp.get("verdict") in (VALID, VIOLATION, MALFORMED)
          and (exp.get("line") is None or (isinstance(exp["line"], int) and exp["line"] >= 1))
          and exp.get("rules", DEFAULT_RULES) in RULE_SETS and isinstance(exp.get("rule", ""), str))
    if not ok:
        raise GateInputError(f"{manifest}: entry {name!r}: expected {{\"verdict\": valid|violation|malformed, "
                             f"\"line\": N >= 1, \"rule\": words, \"rules\": {'|'.join(RULE_SETS)}}}, got {exp!r}")


def judge_trace(path: Path, exp: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """('' , verdict) when the trace is judged as expected, else (what differs, verdict)."""
    from kcm.checkers.oracle_trace import check_file

    try:
        v = check_file(str(path), rule_set(exp.get("rules", DEFAULT_RULES)))
    except OSError as err:
        return f"cannot read: {err.strerror or err}", {}
    got = VALID if v.ok else MALFORMED if v.malformed else VIOLATION
    if got != exp["verdict"]:
        where = "" if v.ok else f" at line {v.line}: {v.rule}"
        return f"expected {exp['verdict']}, judged {got}{where}", v.to_json()
    if not v.ok and exp.get("line") is not None and v.line != exp["line"]:
        return f"expected the first failure at line {exp['line']}, found it at line {v.line}: {v.rule}", v.to_json()
    if not v.ok and exp.get("rule") and exp["rule"] not in v.rule:
        return f"expected a breach of {exp['rule']!r} at line {v.line}, found {v.rule!r}", v.to_json()
    return "", v.to_json()


def traces_stage(folder: Path, expectations: dict[str, dict[str, Any]]) -> Stage:
    """check-trace over every *.jsonl of folder; each must be judged as expected."""
    stage = Stage("traces")
    for name, exp in expectations.items():
        wrong, verdict = judge_trace(folder / name, exp)
        if wrong:
            found = {k: v for k, v in verdict.items() if k not in ("ok", "events")}
            return _fail(stage, f"{name}: {wrong}", {"trace": name, "expected": exp, **found})
    if not expectations:
        return _fail(stage, f"no *.jsonl traces in {folder}", None)
    failing = sum(1 for e in expectations.values() if e["verdict"] != VALID)
    stage.status = PASSED
    stage.summary = (f"{len(expectations)} traces judged as expected ({len(expectations) - failing} valid, "
                     f"{failing} failing at their line)")
    return stage


# ------------------------------------------------------------------------------------------------ the gate


def _fail(stage: Stage, failure: str, counterexample: Any) -> Stage:
    stage.status, stage.failure, stage.counterexample = FAILED, failure, counterexample
    stage.summary = f"{stage.summary}; {failure}" if stage.summary else failure
    return stage


def run_gate(traces: Path | None = None, config: str = DEFAULT_CONFIG, scenarios: Path | None = None,
             on_stage: Callable[[Stage], None] | None = None) -> GateReport:
    """Run the four stages in order, stopping at the first failure; GateInputError before anything runs when an
    input cannot be used."""
    traces = traces if traces is not None else traces_dir()
    scenarios = scenarios if scenarios is not None else library_dir()
    for what, folder in (("--traces", traces), ("--scenarios", scenarios)):
        if not folder.is_dir():
            raise GateInputError(f"{what}: {folder} is not a folder")
    expectations = trace_expectations(traces)
    cfg = load_explore_config(config)
    steps: list[tuple[str, Callable[[], Stage]]] = [
        ("scenarios", lambda: scenario_stage(scenarios)),
        ("prove", prove_stage),
        ("explore", lambda: explore_stage(cfg)),
        ("traces", lambda: traces_stage(traces, expectations)),
    ]
    report = GateReport([Stage(name) for name, _ in steps])
    start = time.perf_counter()
    for i, (_, step) in enumerate(steps):
        t0 = time.perf_counter()
        stage = step()
        stage.seconds = time.perf_counter() - t0
        report.stages[i] = stage
        if on_stage is not None:
            on_stage(stage)
        if stage.status != PASSED:
            break
    report.seconds = time.perf_counter() - start
    return report
