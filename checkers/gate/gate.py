"""The CI gate: the scenario library, the Z3 proofs, exploration of a small config and the sample traces.

Every selected stage runs, and every scenario, invariant, property and trace in it is judged, so that one run
reports every failure (each a `Case`, which `checkers/reports/ci_formats.py` writes as JUnit XML, SARIF or GitHub
annotations); a stage keeps its first failure with the smallest counterexample for the text report. The proof of
kcm's own model is cached by a hash of the model's source and the proof's settings.

Each stage is a function returning a `Stage`; `run_gate` runs them. The `kcm gate` command only prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kcm.checkers.reports.ci_formats import Case
from kcm.model import strictjson
from kcm.model.tables import DEFAULT_RULES, RULE_SETS, rule_set

from kcm import DISTRIBUTION

DEFAULT_BROKERS = 5  # the cluster size `kcm prove` proves for when not told otherwise
DEFAULT_CONFIG = "tiny"
STAGES = ("scenarios", "prove", "explore", "traces")
# The stages that need an extra: stage -> (the module the core install leaves out, the extra that brings it).
STAGE_NEEDS = {"prove": ("z3", "prove"), "explore": ("numpy", "explore")}
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
    failure: str = ""  # the first failure
    counterexample: Any = None  # the first failure's
    cases: list[Case] = field(default_factory=list)  # everything the stage judged, failures included

    def failures(self) -> list[Case]:
        """The failed cases, in the order judged."""
        return [c for c in self.cases if c.status == FAILED]

    def to_json(self) -> dict[str, Any]:
        """The stage as JSON-ready data."""
        return {"stage": self.name, "status": self.status, "summary": self.summary, "seconds": round(self.seconds, 3),
                "failure": self.failure or None, "counterexample": self.counterexample,
                "failures": [{"name": c.name, "message": c.message, "rule": c.rule or None, "file": c.file,
                              "line": c.line} for c in self.failures()]}


@dataclass
class GateReport:
    """The outcome of the whole gate."""

    stages: list[Stage] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether no stage failed (stages left out with --only or --skip do not count)."""
        return all(s.status != FAILED for s in self.stages) and any(s.status == PASSED for s in self.stages)

    def failed(self) -> Stage | None:
        """The first stage that failed, if any."""
        return next((s for s in self.stages if s.status == FAILED), None)

    def cases(self) -> list[Case]:
        """Every case of every stage; a stage left out is one skipped case."""
        out = []
        for s in self.stages:
            out += s.cases or [Case(s.name, s.name, SKIPPED if s.status == SKIPPED else s.status, s.summary)]
        return out

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        bad = self.failed()
        return {"ok": self.ok, "seconds": round(self.seconds, 3), "failed_stage": bad.name if bad else None,
                "failed_stages": [s.name for s in self.stages if s.status == FAILED],
                "stages": [s.to_json() for s in self.stages]}

    def text(self) -> str:
        """A short report for people: one line per stage, every failure, then the first one's counterexample."""
        lines = ["kcm gate"]
        lines += [f"  {s.name:10} {s.status:8} {s.seconds:6.1f} s  {s.summary}" for s in self.stages]
        bad = self.failed()
        if bad is None:
            unrun = [s.name for s in self.stages if s.status == SKIPPED and s.summary.startswith("not run")]
            note = f" ({', '.join(unrun)} not run: see above)" if unrun else ""
            lines.append(f"gate passed in {self.seconds:.1f} s{note}" if self.ok else "gate ran no stage")
            return "\n".join(lines)
        for s in self.stages:
            for c in s.failures():
                where = f" ({c.file}{f', line {c.line}' if c.line else ''})" if c.file else ""
                lines.append(f"  FAILED {s.name}: {c.name}{where}: {c.message}")
        if isinstance(bad.counterexample, dict):
            lines.append(f"counterexample of the first failure ({bad.name}):")
            lines += [f"  {k}: {json.dumps(v, sort_keys=True)}" for k, v in bad.counterexample.items()
                      if k != "evidence"]
        names = [s.name for s in self.stages if s.status == FAILED]
        lines.append(f"gate FAILED at {', '.join(names)} after {self.seconds:.1f} s "
                     f"({sum(len(s.failures()) for s in self.stages)} failures)")
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
    from kcm.checkers.core.scenario import InvalidScenario, read_file, run

    stage = Stage("scenarios")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".md")
    for path in files:
        name = str(path.relative_to(folder))
        case = Case("scenarios", name, file=str(path))
        t0 = time.perf_counter()
        try:
            doc = read_file(path)
            outcome = run(doc)
        except InvalidScenario as err:
            _fail_case(stage, case, f"invalid scenario: {err}", {"scenario": name}, "invalid-scenario")
            continue
        except OSError as err:
            _fail_case(stage, case, f"cannot read: {err.strerror or err}", {"scenario": name}, "unreadable")
            continue
        finally:
            case.seconds = time.perf_counter() - t0
        if outcome.mismatches:
            # A missed expect_violation is a finding about that property; other mismatches about the file's own
            # expectations.
            wanted = doc.get("expect_violation") if isinstance(doc, dict) else None
            rule = (wanted["property"] if wanted and outcome.mismatches[0].startswith("expect_violation")
                    else "expectation")
            _fail_case(stage, case, outcome.mismatches[0], {"scenario": name, "mismatches": outcome.mismatches},
                       rule)
        else:
            stage.cases.append(case)
    if not files:
        return _fail(stage, f"no scenario files under {folder}", None, str(folder))
    bad = len(stage.failures())
    stage.status = FAILED if bad else PASSED
    stage.summary = (f"{bad} of {len(files)} scenarios failed; first: {stage.failure}" if bad else
                     f"{len(files)} scenarios hold their expectations")
    return stage


# ------------------------------------------------------------------------------------------------ proofs


def model_hash(rules: str, brokers: int) -> str:
    """A hash of what the self-proof depends on: the source of the model, properties and prover, and its settings."""
    import kcm.checkers.prove as prove_pkg
    import kcm.model as model_pkg
    import kcm.properties as properties_pkg

    digest = hashlib.sha256(f"{rules}/{brokers}".encode())
    for pkg in (model_pkg, properties_pkg, prove_pkg):
        for path in sorted(Path(str(resources.files(pkg))).glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def cache_dir() -> Path:
    """Where the gate keeps the proofs it already passed ($KCM_CACHE_DIR, else ~/.cache/kcm)."""
    base = os.environ.get("KCM_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                          os.path.expanduser("~/.cache"), "kcm")
    return Path(base)


def prove_stage(rules: str = DEFAULT_RULES, brokers: int = DEFAULT_BROKERS, cache: bool = False,
                file: str | None = None) -> Stage:
    """Prove every safety invariant inductive with Z3, as `kcm prove` does; a failure carries its trace or CTI.

    With `cache`, a proof that passed for the same model hash is not run again (only passes are cached). `file` is
    where a CI report places a failure (the gate's config file: the proof has no file of its own).
    """
    stage = Stage("prove")
    key = model_hash(rules, brokers) if cache else ""
    marker = cache_dir() / f"prove-{key}.json"
    if cache and marker.is_file():
        try:
            saved = json.loads(marker.read_text(encoding="utf-8"))
            stage.cases = [Case("prove", n, PASSED, "proved (cached)") for n in saved["invariants"]]
            stage.status = PASSED
            stage.summary = f"{saved['summary']} (cached: model hash {key[:12]})"
            return stage
        except (OSError, ValueError, KeyError, TypeError):
            pass  # an unreadable cache entry: prove again
    from kcm.checkers.prove.encoding import Encoding
    from kcm.checkers.prove.invariants import INVARIANTS
    from kcm.checkers.prove.proofs import PROVED, SolverGaveUp, prove

    enc = Encoding(rule_set(rules), brokers)
    for inv in INVARIANTS:
        case = Case("prove", inv.name, rule=inv.name, file=file)
        t0 = time.perf_counter()
        try:
            result = prove(enc, inv, trace_depth=7)
        except SolverGaveUp as err:
            _fail_case(stage, case, str(err), None, inv.name)
            continue
        finally:
            case.seconds = time.perf_counter() - t0
        if result.verdict != PROVED:
            cex = result.counterexample or result.cti
            _fail_case(stage, case, result.verdict, cex._asdict() if cex else None, inv.name)
        else:
            stage.cases.append(case)
    bad = len(stage.failures())
    stage.status = FAILED if bad else PASSED
    stage.summary = (f"{bad} of {len(INVARIANTS)} invariants not proved; first: {stage.failure}" if bad else
                     f"{len(INVARIANTS)} invariants proved inductive (rules {rules}, {brokers} brokers)")
    if cache and not bad:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps({"invariants": [i.name for i in INVARIANTS], "summary": stage.summary}))
        except OSError:
            pass  # a read-only home: the gate still ran the proof
    return stage


# ------------------------------------------------------------------------------------------------ exploration


def load_explore_config(name: str) -> dict[str, Any]:
    """The bounded config to explore; GateInputError when it cannot be loaded."""
    from kcm.checkers.core.bounded import BadConfig, load_config

    try:
        return load_config(name)
    except BadConfig as err:
        raise GateInputError(f"--config: {err}") from None


def _config_file(name: str) -> Path:
    from kcm.checkers.core.bounded import config_file

    return config_file(name)


def explore_stage(config: dict[str, Any], max_states: int | None = None, file: str | None = None) -> Stage:
    """Explore every state of the bounded config on one core (or the first max_states); every always and step
    property must hold. `file` (the config's file) is where a CI report places a failure."""
    from kcm.checkers.core.bounded import BoundedSystem
    from kcm.checkers.explore import bfs

    stage = Stage("explore")
    model = BoundedSystem(config)
    summary = bfs.explore(model, max_states).to_json(model)
    name = config.get("name", "config")
    stage.summary = (f"{name}: {summary['distinct_states']:,} states, depth {summary['depth']}, "
                     f"{len(summary['verdicts'])} properties checked")
    cexs = summary["counterexamples"]
    rules = {p.name: p.rule for p in model.properties()}
    for prop, verdict in summary["verdicts"].items():
        case = Case("explore", f"{name}: {prop}", rule=prop, rule_text=rules.get(prop, ""),
                    file=file)
        if prop in cexs:
            cex = cexs[prop]
            stage.cases.append(case)
            case.status, case.message = FAILED, f"{prop} violated after {cex['length']} steps: {rules.get(prop, '')}"
            case.detail = {"scenario": cex["scenario"], "witness": cex["evidence"]["witness"]}
            case.evidence = cex["evidence"]
        else:
            case.message = verdict
            stage.cases.append(case)
    if cexs:
        prop, cex = min(cexs.items(), key=lambda kv: (kv[1]["length"], kv[0]))
        return _fail(stage, f"{name}: {prop} violated ({cex['length']} steps after set-up)",
                     {"property": prop, "scenario": cex["scenario"], "evidence": cex["evidence"]})
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
    from kcm.checkers.oracle.oracle_trace import check_file

    try:
        v = check_file(str(path), rule_set(exp.get("rules", DEFAULT_RULES)))
    except OSError as err:
        return f"cannot read: {err.strerror or err}", {}
    got = VALID if v.ok else MALFORMED if v.malformed else VIOLATION
    if got != exp["verdict"]:
        where = "" if v.ok else f" at line {v.line}: {v.rule}"
        return f"expected {exp['verdict']}, judged {got}{where}", v.to_dict()
    if not v.ok and exp.get("line") is not None and v.line != exp["line"]:
        return f"expected the first failure at line {exp['line']}, found it at line {v.line}: {v.rule}", v.to_dict()
    if not v.ok and exp.get("rule") and exp["rule"] not in v.rule:
        return f"expected a breach of {exp['rule']!r} at line {v.line}, found {v.rule!r}", v.to_dict()
    return "", v.to_dict()


def _trace_rule(verdict: dict[str, Any]) -> tuple[str, str]:
    """(rule id, rule in words) of a trace judged otherwise than expected: the id of the rule its verdict names
    (a catalogue property or a trace-only rule), malformed-trace, or the trace's expectation when it was valid."""
    from kcm.checkers.oracle.oracle_trace import TRACE_ONLY

    if not verdict:
        return "unreadable", ""
    if verdict.get("malformed"):
        return "malformed-trace", ""
    found = verdict.get("rule_id") or ""
    return (found, TRACE_ONLY.get(found, "")) if found else ("expectation", "")


def traces_stage(folder: Path, expectations: dict[str, dict[str, Any]]) -> Stage:
    """check-trace over every *.jsonl of folder; each must be judged as expected."""
    stage = Stage("traces")
    for name, exp in expectations.items():
        case = Case("traces", name, file=str(folder / name))
        t0 = time.perf_counter()
        wrong, verdict = judge_trace(folder / name, exp)
        case.seconds = time.perf_counter() - t0
        if wrong:
            found = {k: v for k, v in verdict.items() if k not in ("ok", "events")}
            case.line = verdict.get("line") or exp.get("line")
            _fail_case(stage, case, wrong, {"trace": name, "expected": exp, **found}, *_trace_rule(verdict))
        else:
            stage.cases.append(case)
    if not expectations:
        return _fail(stage, f"no *.jsonl traces in {folder}", None, str(folder))
    bad = len(stage.failures())
    failing = sum(1 for e in expectations.values() if e["verdict"] != VALID)
    stage.status = FAILED if bad else PASSED
    stage.summary = (f"{bad} of {len(expectations)} traces judged otherwise than expected; first: {stage.failure}"
                     if bad else f"{len(expectations)} traces judged as expected ({len(expectations) - failing} "
                     f"valid, {failing} failing at their line)")
    return stage


# ------------------------------------------------------------------------------------------------ the gate


def _fail(stage: Stage, failure: str, counterexample: Any, folder: str | None = None) -> Stage:
    stage.status, stage.failure, stage.counterexample = FAILED, failure, counterexample
    stage.summary = f"{stage.summary}; {failure}" if stage.summary else failure
    if not stage.failures():  # a stage with nothing to judge: the folder that held nothing
        stage.cases.append(Case(stage.name, stage.name, FAILED, failure, "empty-input", file=folder,
                                detail=counterexample))
    return stage


def _fail_case(stage: Stage, case: Case, message: str, counterexample: Any, rule: str, rule_text: str = "") -> None:
    """Record a failed case; the stage's first failure is the one its text report shows."""
    case.status, case.message, case.detail = FAILED, message, counterexample
    case.rule, case.rule_text = rule, rule_text or case.rule_text
    stage.cases.append(case)
    if not stage.failure:
        stage.failure, stage.counterexample = f"{case.name}: {message}", counterexample


def _without_extra(name: str, err: ModuleNotFoundError) -> Stage:
    """The stage skipped, with the reason, when what it needs is an extra this install left out (a core install
    has neither Z3 nor NumPy); any other missing module is kcm's own fault and goes on up."""
    module, extra = STAGE_NEEDS.get(name, ("", ""))
    if not module or (err.name or "").split(".")[0] != module:
        raise err
    return Stage(name, SKIPPED, f"not run: needs {module}, which this install leaves out "
                                f"(pip install '{DISTRIBUTION}[{extra}]')")


def run_gate(traces: Path | None = None, config: str = DEFAULT_CONFIG, scenarios: Path | None = None,
             on_stage: Callable[[Stage], None] | None = None, only: list[str] | None = None,
             skip: list[str] | None = None, cache: bool = False) -> GateReport:
    """Run every selected stage (all four unless `only` or `skip` says otherwise) and report every failure;
    GateInputError before anything runs when an input cannot be used."""
    for name in (only or []) + (skip or []):
        if name not in STAGES:
            raise GateInputError(f"--only/--skip: unknown stage {name!r}; stages: {', '.join(STAGES)}")
    chosen = [s for s in STAGES if (not only or s in only) and s not in (skip or [])]
    traces = traces if traces is not None else traces_dir()
    scenarios = scenarios if scenarios is not None else library_dir()
    for what, folder, stage in (("--traces", traces, "traces"), ("--scenarios", scenarios, "scenarios")):
        if stage in chosen and not folder.is_dir():
            raise GateInputError(f"{what}: {folder} is not a folder")
    expectations = trace_expectations(traces) if "traces" in chosen else {}
    cfg = load_explore_config(config) if "explore" in chosen else {}
    config_path = str(_config_file(config))
    runs: dict[str, Callable[[], Stage]] = {
        "scenarios": lambda: scenario_stage(scenarios),
        "prove": lambda: prove_stage(cache=cache, file=config_path),
        "explore": lambda: explore_stage(cfg, file=config_path),
        "traces": lambda: traces_stage(traces, expectations),
    }
    report = GateReport([Stage(name, SKIPPED, "left out (--only/--skip)") for name in STAGES])
    start = time.perf_counter()
    for i, name in enumerate(STAGES):
        if name not in chosen:
            continue
        t0 = time.perf_counter()
        try:
            stage = runs[name]()
        except ModuleNotFoundError as err:
            stage = _without_extra(name, err)
        stage.seconds = time.perf_counter() - t0
        report.stages[i] = stage
        if on_stage is not None:
            on_stage(stage)
    report.seconds = time.perf_counter() - start
    return report
