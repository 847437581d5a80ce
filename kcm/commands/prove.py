"""`kcm prove`: Z3 induction proofs of the controller's safety invariants, or bounded model checking."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kcm import flags
from kcm.checkers.core import evidence
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config, validate_config
from kcm.checkers.core.scenario import MAX_SCENARIO_BYTES, InvalidScenario
from kcm.checkers.core.scenario import validate as validate_scenario
from kcm.checkers.prove import bounded_bmc
from kcm.checkers.prove.bounded import BoundedEncoding, UnsupportedConfig
from kcm.checkers.prove.encoding import Encoding
from kcm.checkers.prove.invariants import INVARIANTS, invariant
from kcm.checkers.prove.proofs import NO_VIOLATION, PROVED, Counterexample, Result, SolverGaveUp, bmc, prove
from kcm.model.strictjson import InputError, loads, read_bounded
from kcm.model.tables import DEFAULT_RULES, RULE_SETS, rule_set

MAX_BROKERS = 8


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm prove`."""
    p.add_argument("--rules", default=DEFAULT_RULES, choices=sorted(RULE_SETS),
                   help=f"the rule set (transition tables) the encoded controller follows (default: {DEFAULT_RULES}; "
                        "a --config that names its rules overrides it)")
    p.add_argument("--brokers", type=flags.count(1, MAX_BROKERS),
                   default=5, help=f"cluster size, 1..{MAX_BROKERS} (default 5)")
    p.add_argument("--invariant", action="append", choices=[i.name for i in INVARIANTS], help="only these")
    p.add_argument("--bmc", type=flags.count(0, flags.MAX_BMC_DEPTH),
                   metavar="K", help="bounded model checking to depth K instead of induction")
    p.add_argument(
        "--config",
        help="with --bmc: an explorer config (NAME of specs/configs/, or a JSON file) checked over its exact "
        "encoding; a scenario-style file ({'config': {...}}) only sets brokers and rules of the induction encoding",
    )
    p.add_argument("--bug", action="append", default=[], choices=sorted(BUGS), help="switch on a seeded bug")
    p.add_argument(
        "--trace-depth",
        type=flags.count(0, flags.MAX_BMC_DEPTH),
        default=7,
        metavar="D",
        help="when a proof fails, search executions up to D steps for a trace (default 7, 0: off)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")


BUGS = {
    "no-leader-epoch-bump": {"bump_epoch_on_election": False},
    "no-controller-epoch-check": {"brokers_check_controller_epoch": False},
}


def _load_config(name: str) -> dict[str, Any]:
    path = Path(name)
    if not path.suffix:
        return load_config(name)
    try:
        data = loads(read_bounded(path, MAX_SCENARIO_BYTES))
        if isinstance(data, dict) and "config" in data:
            validate_scenario({"config": data["config"], "steps": []})  # only its config is read
            return data["config"]
        validate_config(data)
    except OSError as exc:
        raise ValueError(f"no config {name!r} ({exc.strerror or exc.__class__.__name__})") from None
    except (InputError, InvalidScenario, BadConfig) as exc:
        raise ValueError(f"{name}: {exc}") from None
    return data


def _encoding(args: argparse.Namespace) -> Encoding:
    rules, brokers, unclean = args.rules, args.brokers, False
    if args.config:
        config = _load_config(args.config)
        brokers = len(config["brokers"])
        rules = config.get("rules", rules)
        unclean = bool(config.get("unclean_leader_election", False))
    if not 1 <= brokers <= MAX_BROKERS:
        raise ValueError(f"--brokers must be between 1 and {MAX_BROKERS}, not {brokers}")
    switches: dict[str, bool] = {}
    for bug in args.bug:
        switches.update(BUGS[bug])
    return Encoding(rule_set(rules), brokers, unclean_leader_election=unclean, **switches)


def _explorer_config(name: str) -> bool:
    """Whether --config names an explorer config (not a scenario-style {'config': ...} file)."""
    path = Path(name)
    if not path.suffix:
        return True
    try:
        data = loads(read_bounded(path, MAX_SCENARIO_BYTES))
    except (OSError, InputError):
        return True  # load_config reports the problem
    return not (isinstance(data, dict) and "config" in data)


def main(args: argparse.Namespace) -> int:
    """Run the proofs (or BMC) and print a table or JSON; exit 1 if any invariant is not proved (or is violated)."""
    if args.bmc is not None and args.config and _explorer_config(args.config):
        return _bmc_config(args)
    try:
        enc = _encoding(args)
        if args.bmc is not None and args.bmc < 0:
            raise ValueError(f"--bmc depth must be >= 0, not {args.bmc}")
    except (ValueError, KeyError) as exc:
        print(f"kcm prove: {exc.args[0]}", file=sys.stderr)
        return 2
    invs = [invariant(n) for n in args.invariant] if args.invariant else list(INVARIANTS)
    try:
        results = [
            bmc(enc, inv, args.bmc) if args.bmc is not None else prove(enc, inv, args.trace_depth) for inv in invs
        ]
    except SolverGaveUp as exc:
        print(f"kcm prove: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([result_json(r) for r in results], indent=2))
    else:
        mode = f"BMC to depth {args.bmc}" if args.bmc is not None else "induction"
        print(f"kcm prove: {mode}, rules {enc.rules.name}, {enc.n} brokers, one symbolic partition")
        print(render_table(results))
    return 0 if all(r.verdict in (PROVED, NO_VIOLATION) for r in results) else 1


def result_json(r: Result) -> dict[str, Any]:
    """One result as JSON-ready data."""
    return {
        "invariant": r.invariant,
        "verdict": r.verdict,
        "solver_seconds": round(r.seconds, 4),
        "strengthening": list(r.strengthening),
        "needed_because": _with_diffs(r.needed_because) if r.needed_because else None,
        "counterexample": _with_diffs(r.counterexample) if r.counterexample else None,
        "counterexample_to_induction": _with_diffs(r.cti) if r.cti else None,
    }


def render_table(results: list[Result]) -> str:
    """A readable table of verdicts, then the strengthenings and counterexamples."""
    width = max(len(r.invariant) for r in results)
    lines = [f"{'invariant':<{width}}  {'verdict':<14} solver time", "-" * (width + 30)]
    lines += [f"{r.invariant:<{width}}  {r.verdict:<14} {r.seconds * 1000:8.1f} ms" for r in results]
    for r in results:
        if r.needed_because is not None:
            lines += ["", f"{r.invariant}: not inductive alone; strengthened with:"]
            lines += [f"  - {s}" for s in r.strengthening]
            lines += _render_cex("counterexample to induction that needed it", r.needed_because)
        if r.cti is not None:
            lines += ["", f"{r.invariant}: not inductive"]
            lines += _render_cex("counterexample to induction", r.cti)
        if r.counterexample is not None:
            lines += ["", f"{r.invariant}: {r.verdict}"]
            lines += _render_cex("trace" if r.counterexample.actions else "counterexample", r.counterexample)
    return "\n".join(lines)


def _render_cex(title: str, cex: Counterexample) -> list[str]:
    lines = [f"  {title} (breaks {cex.conjunct}):"]
    if cex.actions:
        lines += _trace_lines(cex.actions, cex.states)
    elif len(cex.states) == 2:
        lines += [
            f"    before: {_state_line(cex.states[0])}",
            f"    --{cex.action}-->",
            f"    after:  {_state_line(cex.states[1])}",
        ]
    else:
        lines.append(f"    {cex.action}: {_state_line(cex.states[0])}")
    return lines


def _state_line(st: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in st.items())


def _trace_lines(actions: Any, states: list[dict[str, Any]]) -> list[str]:
    """The first state whole, then after each step only what it changed (as `kcm explore` prints its traces)."""
    lines = [f"    state 0: {_state_line(states[0])}"]
    for i, (act, st) in enumerate(zip(actions, states[1:], strict=True), 1):
        changed = evidence.diff(states[i - 1], st)
        lines += [f"    --{act}-->",
                  f"    state {i}: " + (", ".join(f"{k}: {c['before']} -> {c['after']}" for k, c in changed.items())
                                         or "(unchanged)")]
    return lines


def _with_diffs(cex: Any) -> dict[str, Any]:
    """A counterexample as JSON-ready data, with the diff of each step next to the states."""
    out = cex._asdict()
    states = list(out.get("states") or [])
    out["diffs"] = [evidence.diff(a, b) for a, b in zip(states, states[1:], strict=False)]
    return out


def _bmc_config(args: argparse.Namespace) -> int:
    """`--bmc K --config NAME`: BMC of an explorer config over its exact encoding, with the explorer's names."""
    try:
        if args.bmc < 0:
            raise ValueError(f"--bmc depth must be >= 0, not {args.bmc}")
        if args.bug or args.invariant:
            raise ValueError("--bug and --invariant apply to the induction encoding, not to an explorer config's BMC")
        system = BoundedSystem(load_config(args.config))
        enc = BoundedEncoding(system)
    except (BadConfig, UnsupportedConfig, ValueError) as exc:
        print(f"kcm prove: {exc.args[0]}", file=sys.stderr)
        return 2
    wanted = [p.name for p in system.properties()]
    try:
        findings = bounded_bmc.bmc(enc, args.bmc, wanted)
    except RuntimeError as exc:
        print(f"kcm prove: {exc}", file=sys.stderr)
        return 2
    checked = {f.name for f in findings}
    unchecked = {n: bounded_bmc.EXPLORER_ONLY.get(n, "not encoded symbolically") for n in wanted if n not in checked}
    name = system.cfg.get("name", args.config)
    if args.json:
        print(json.dumps({
            "mode": "bmc", "config": name, "depth": args.bmc, "rules": enc.rules.name, "brokers": list(enc.ids),
            "results": [finding_json(f) for f in findings],
            "explorer_only": unchecked,
        }, indent=2))
    else:
        print(f"kcm prove: BMC to depth {args.bmc} of config {name} ({enc.rules.name}, brokers "
              f"{list(enc.ids)}, families {', '.join(sorted(system.families))}) over its exact encoding")
        print(render_findings(findings, unchecked))
    return 1 if any(f.verdict == bounded_bmc.VIOLATED for f in findings) else 0


def finding_json(f: bounded_bmc.Finding) -> dict[str, Any]:
    """One BMC finding as JSON-ready data."""
    return {"property": f.name, "verdict": f.verdict, "solver_seconds": round(f.seconds, 4), "depth": f.depth,
            "trace": {"actions": list(f.actions), "states": list(f.states),
                      "diffs": [evidence.diff(a, b) for a, b in zip(f.states, f.states[1:], strict=False)]}
            if f.states else None}


def render_findings(findings: list[bounded_bmc.Finding], unchecked: dict[str, str]) -> str:
    """The BMC verdict table, then each violation's trace, then what only the explorer checks."""
    width = max([len(f.name) for f in findings] + [8])
    lines = [f"{'property':<{width}}  {'verdict':<14} solver time", "-" * (width + 30)]
    lines += [f"{f.name:<{width}}  {f.verdict:<14} {f.seconds * 1000:8.1f} ms" for f in findings]
    for f in findings:
        if f.verdict == bounded_bmc.VIOLATED:
            lines += ["", f"{f.name}: violated after {len(f.actions)} step{'s' * (len(f.actions) != 1)}"]
            lines += _trace_lines(f.actions, f.states)
        elif f.verdict == bounded_bmc.REACHED:
            lines.append(f"{f.name}: reached by {' -> '.join(f.actions) or 'the initial state'}")
    if any(f.name not in bounded_bmc.GOALS for f in findings):
        lines.append("(the state and step properties are asked in one joint query: its time is shown on each of them)")
    if unchecked:
        lines += ["", "checked by kcm explore only:"]
        lines += [f"  {n}: {why}" for n, why in unchecked.items()]
    return "\n".join(lines)
