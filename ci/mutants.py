#!/usr/bin/env python
"""Mutation check: deliberate bugs applied to the model one at a time, and which checker catches each.

Each mutant replaces the ONE function where its rule lives (in-process, undone afterwards). Each catcher
runs against the mutated code: the table laws (checkers.table_contracts), the Hypothesis machine over
the reference controller (ci profile), the scenario suite (specs/scenarios through the scenario runner)
and the explorer on the tiny config. Before any mutant, every catcher runs on the unmutated code and
must find nothing (else its verdicts mean nothing). Prints the table mutant -> caught by; exits 1 if a
mutant survives every catcher or a piece it needs is missing, 2 on a false alarm.

    python ci/mutants.py            # every mutant, every catcher
    python ci/mutants.py --fast     # a smaller Hypothesis budget
    python ci/mutants.py --fast --first   # each mutant stops at its first catcher (the CI run)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Missing(Exception):
    """A piece of the project a mutant or catcher needs has not landed."""


def module(name: str) -> Any:
    """Import a kcm module; Missing names it when it does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        raise Missing(f"{name} missing") from err


def attribute(owner: Any, name: str) -> Any:
    """An attribute the mutant patches; Missing names it when it does not exist."""
    if not hasattr(owner, name):
        raise Missing(f"{getattr(owner, '__name__', owner)}.{name} missing")
    return getattr(owner, name)


@contextlib.contextmanager
def replaced(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    """Replace owner.name by make(original) everywhere it was imported to, and restore it afterwards."""
    original = attribute(owner, name)
    mutant = make(original)
    sites = [(owner, name)]
    if not isinstance(owner, type):
        # `from m import f` copies the reference: patch every kcm module holding the same object.
        for mod in list(sys.modules.values()):
            if mod is owner or not getattr(mod, "__name__", "").startswith("kcm."):
                continue
            for attr, value in list(vars(mod).items()):
                if value is original:
                    sites.append((mod, attr))
    for site, attr in sites:
        setattr(site, attr, mutant)
    try:
        yield
    finally:
        for site, attr in sites:
            setattr(site, attr, original)


class Mutant(NamedTuple):
    """A deliberate bug: its name, the rule it breaks, and how to apply it (a context manager)."""

    name: str
    breaks: str
    apply: Callable[[], contextlib.AbstractContextManager]


class Catcher(NamedTuple):
    """A checker: `run(fast)` returns evidence (caught) or None (nothing found); Missing if it cannot run."""

    name: str
    run: Callable[[bool], str | None]
    in_fast: bool


# -- mutants ----------------------------------------------------------------------------------

def _online_to_new() -> contextlib.AbstractContextManager:
    from kcm.model.states import PartitionState as P
    from kcm.model.tables import RuleSet

    def make(original: Any) -> Any:
        return lambda self, a, b: (a, b) == (P.ONLINE, P.NEW) or original(self, a, b)
    return replaced(RuleSet, "allows_partition", make)


def _no_epoch_bump() -> contextlib.AbstractContextManager:
    leadership = module("kcm.reference.leadership")
    return replaced(leadership, "bump_leader_epoch", lambda original: lambda current: current.leader_epoch)


def _no_zkversion_check() -> contextlib.AbstractContextManager:
    leadership = module("kcm.reference.leadership")

    def controller_write(original: Any) -> Any:
        def write(t: Any, tp: tuple, new: Any, expected_zk_version: int) -> bool:
            current = t.zk.partitions.get(tp)  # expect whatever is there: the condition never fails
            return original(t, tp, new, current.zk_version if current is not None else expected_zk_version)
        return write

    def leader_write(original: Any) -> Any:
        def write(t: Any, tp: tuple, leader: int, isr: tuple[int, ...]) -> None:
            key = (tp[0], tp[1], leader)  # the leader writes as if its zkVersion were current
            t.replicas[key] = t.replicas[key]._replace(zk_version=t.zk.partitions[tp].zk_version)
            original(t, tp, leader, isr)
        return write

    # Two writers check the zkVersion: the controller (leader and ISR) and the leader (its ISR changes).
    stack = contextlib.ExitStack()
    stack.enter_context(replaced(leadership, "conditional_write", controller_write))
    with contextlib.suppress(Missing):
        stack.enter_context(replaced(module("kcm.reference.dataplane"), "_write_isr", leader_write))
    return stack


def _no_broker_epoch_check() -> contextlib.AbstractContextManager:
    requests = module("kcm.reference.requests")
    return replaced(requests, "stale_controller_epoch", lambda original: lambda t, accepted, carried: False)


def _oar_out_early() -> contextlib.AbstractContextManager:
    reassignment = module("kcm.reference.reassignment")
    def make(original: Any) -> Any:
        def round_(t: Any, tp: tuple, r: Any) -> None:
            # A led partition completes at once: OAR - RAR leaves AR without waiting for RAR to join the ISR.
            if tp in t.ctx.leadership:
                reassignment.complete(t, tp, r)
            else:
                original(t, tp, r)
        return round_
    return replaced(reassignment, "on_partition_reassignment", make)


def _unclean_offline_selector() -> contextlib.AbstractContextManager:
    selectors = module("kcm.reference.selectors")
    return replaced(selectors, "offline",
                    lambda original: lambda ar, isr, live, unclean: original(ar, isr, live, True))


def _truncate_to_leo() -> contextlib.AbstractContextManager:
    dataplane = module("kcm.reference.dataplane")
    # Every truncation of a follower's log (to its HW on becoming follower or restarting) keeps the whole log.
    return replaced(dataplane, "_truncated", lambda original: lambda data, offset: original(data, data.leo))


def _no_reassignment_resume() -> contextlib.AbstractContextManager:
    controller = module("kcm.reference.controller")

    def make(original: Any) -> Any:
        def failover(t: Any) -> None:
            # The new controller does not see /admin/reassign_partitions: nothing is loaded or resumed.
            pending, t.zk.reassign_partitions = t.zk.reassign_partitions, {}
            try:
                original(t)
            finally:
                t.zk.reassign_partitions = pending
        return failover
    return replaced(controller, "on_controller_failover", make)


MUTANTS: list[Mutant] = [
    Mutant("online-to-new", "the partition table allows OnlinePartition -> NewPartition", _online_to_new),
    Mutant("no-epoch-bump", "an election keeps the old leader epoch", _no_epoch_bump),
    Mutant("no-zkversion-check", "conditional ZooKeeper writes ignore the zkVersion", _no_zkversion_check),
    Mutant("no-broker-epoch-check", "brokers accept requests from an older controller epoch", _no_broker_epoch_check),
    Mutant("oar-out-early", "OAR replicas leave AR before RAR has joined the ISR", _oar_out_early),
    Mutant("unclean-offline-selector", "the offline selector picks outside the ISR with unclean election off",
           _unclean_offline_selector),
    Mutant("truncate-to-leo", "a recovering follower truncates to its LEO instead of its HW", _truncate_to_leo),
    Mutant("no-reassignment-resume", "controller failover forgets reassignments in flight", _no_reassignment_resume),
]


# -- catchers ---------------------------------------------------------------------------------

def catch_laws(fast: bool) -> str | None:
    """The table laws, checked on every rule set and pair of states."""
    found = module("kcm.checkers.gate.table_contracts").violations()
    return found[0] if found else None


# The configs the Hypothesis catcher drives the reference through: the seeds' tables, and Kafka's
# tables with min.insync.replicas 2 (unclean election off in both: the offline selector must keep to the ISR).
HYPOTHESIS_CONFIGS = (
    {"brokers": (0, 1, 2)},
    {"brokers": (0, 1, 2), "rules": "kafka", "unclean_leader_election": False, "min_insync_replicas": 2},
)


FAST_EXAMPLES = 300
_excluded_properties: set[str] | None = None  # properties the unmutated reference already breaks (baseline)


def _hypothesis_once(fast: bool, excluded: set[str]) -> Any:
    """One run of the machine on every config; the PropertyViolation it raised, or None."""
    api = module("kcm.reference.api")
    from hypothesis import Phase, Verbosity, settings
    from hypothesis.stateful import run_state_machine_as_test
    from kcm.checkers.gate import hypothesis_machine as hm
    from kcm.model.cluster import ClusterConfig
    from kcm.properties.catalogue import CATALOGUE

    hm.register_profiles()
    # No shrinking: the table needs a detection, not the minimal sequence (the test suite shrinks).
    # Fast: the ci profile's determinism with more examples (a mutant run does not shrink, so they are cheap).
    chosen = settings(settings.get_profile("ci" if fast else "thorough"), report_multiple_bugs=False,
                      verbosity=Verbosity.quiet, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                      **({"max_examples": FAST_EXAMPLES} if fast else {}))
    props = [p for p in CATALOGUE if p.name not in excluded]
    for values in HYPOTHESIS_CONFIGS:
        model = hm.ContractModel(ClusterConfig(**values), api.start, api.step, props)
        machine = hm.build_machine(model, name="Mutant", contract_ops=True)
        try:
            run_state_machine_as_test(machine, settings=chosen)
        except hm.PropertyViolation as err:
            return err
    return None


def catch_hypothesis(fast: bool) -> str | None:
    """The contract-ops Hypothesis machine over the reference controller (thorough profile; ci with --fast)."""
    global _excluded_properties
    if _excluded_properties is None:
        # Baseline: a property the unmutated reference already breaks cannot judge a mutant; report it, leave it out.
        excluded: set[str] = set()
        while (err := _hypothesis_once(fast, excluded)) is not None:
            if err.prop is None:
                return str(err)
            excluded.add(err.prop)
            print(f"  (property {err.prop} fails without a mutant: left out)\n    " +
                  "\n    ".join(str(err).splitlines()[:2]))
        _excluded_properties = excluded
        return None
    err = _hypothesis_once(fast, _excluded_properties)
    return None if err is None else str(err)


def kcm(argv: list[str]) -> tuple[int, str, str]:
    """Run one `kcm` subcommand in-process (so the mutant applies); its exit code, stdout and stderr."""
    from kcm import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse refusing the arguments
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


SCENARIOS = ROOT / "specs" / "scenarios"
_passing_scenarios: list[Path] | None = None  # the files that pass unmutated (set by the baseline run)


def catch_scenarios(fast: bool) -> str | None:
    """The scenario suite: every specs/scenarios file through `kcm run`; a failing `expect` catches the mutant."""
    global _passing_scenarios
    module("kcm.commands.run")
    files = sorted(SCENARIOS.rglob("*.json")) if SCENARIOS.is_dir() else []
    if not files:
        raise Missing("specs/scenarios missing")
    if _passing_scenarios is None:
        # Baseline: a file that already fails without a mutant cannot judge one; it is reported and left out.
        _passing_scenarios = []
        for path in files:
            code, _, _ = kcm(["run", str(path)])
            if code == 0:
                _passing_scenarios.append(path)
            else:
                print(f"  (scenario {path.relative_to(ROOT)} fails without a mutant, exit {code}: left out)")
        return None
    for path in _passing_scenarios:
        code, _, err = kcm(["run", str(path)])
        if code != 0:
            return f"{path.relative_to(ROOT)} exit {code}: {err.strip().splitlines()[0] if err.strip() else ''}"
    return None


# The bounded configs the explorer catcher walks exhaustively: the CI config, the Quick start's, and a data-plane
# space with asynchronous delivery (stale caches) and high-watermark truncation.
EXPLORE_CONFIGS = ("tiny", "controller", "mutants")


def catch_explore(fast: bool) -> str | None:
    """`kcm explore`'s local engine on each EXPLORE_CONFIGS config: any property violated catches the mutant."""
    bfs = module("kcm.checkers.explore.bfs")
    bounded = module("kcm.checkers.core.bounded")
    for name in EXPLORE_CONFIGS:
        found = bfs.explore(bounded.BoundedSystem(bounded.load_config(name)))
        if found.violations:
            prop = min(found.violations, key=lambda p: len(found.violations[p]))
            return f"config {name}: {prop} violated after {len(found.violations[prop])} steps"
    return None


# Cheapest first: with --first a mutant stops at the first that catches it.
CATCHERS: list[Catcher] = [
    Catcher("table laws", catch_laws, True),
    Catcher("scenarios", catch_scenarios, True),
    Catcher("hypothesis", catch_hypothesis, True),
    Catcher("explore", catch_explore, True),
]


# -- the run ----------------------------------------------------------------------------------

def _verdict(catcher: Catcher, fast: bool) -> tuple[str, bool | None]:
    """(cell text, caught?) with None when the catcher could not run."""
    try:
        evidence = catcher.run(fast)
    except Missing as err:
        return f"n/a: {err}", None
    except Exception as err:  # a crash under a mutant is a detection, but say it was a crash
        return f"crash: {type(err).__name__}: {str(err).splitlines()[0][:70] if str(err) else ''}", True
    if evidence is None:
        return "-", False
    return f"caught: {evidence.splitlines()[0][:90]}", True


def main(argv: list[str] | None = None) -> int:
    """Run every mutant against every catcher and print the table; the exit code says whether all were caught."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="the CI subset: small Hypothesis budget")
    parser.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    parser.add_argument("--catcher", action="append", default=[], choices=[c.name for c in CATCHERS],
                        help="run only this catcher (repeatable)")
    parser.add_argument("--first", action="store_true",
                        help="stop each mutant at the first catcher that catches it (catchers run cheapest first)")
    args = parser.parse_args(argv)
    known = {m.name for m in MUTANTS}
    unknown = [n for n in args.only if n not in known]
    if unknown:
        print(f"unknown mutant(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    catchers = [c for c in CATCHERS if (c.in_fast or not args.fast) and (not args.catcher or c.name in args.catcher)]
    mutants = [m for m in MUTANTS if not args.only or m.name in args.only]

    # Each catcher first runs on the unmutated model and must find nothing, else its verdicts mean nothing. The
    # baseline runs when a catcher is first needed: with --first, a catcher no mutant reaches never runs.
    based: set[str] = set()

    def baseline(c: Catcher) -> bool:
        if c.name not in based:
            based.add(c.name)
            t0 = time.monotonic()
            text, caught = _verdict(c, args.fast)
            print(f"  baseline (no mutant) of {c.name}: {text}  ({time.monotonic() - t0:.1f} s)", flush=True)
            if caught:
                print(f"FALSE ALARM: {c.name} fails on the unmutated model; the mutation table would mean nothing")
                return False
        return True

    status = 0
    print(f"{'mutant':<26} {'caught by':<60} time")
    for m in mutants:
        t0 = time.monotonic()
        cells: list[str] = []
        caught_by: list[str] = []
        try:
            for c in catchers:
                if not baseline(c):
                    return 2
                with m.apply():
                    text, caught = _verdict(c, args.fast)
                cells.append(f"{c.name}: {text}")
                if caught:
                    caught_by.append(c.name)
                    if args.first:
                        break
        except Missing as err:
            print(f"{m.name:<26} NOT APPLICABLE: {err}")
            status = max(status, 1)
            continue
        verdict = ", ".join(caught_by) if caught_by else "SURVIVED"
        print(f"{m.name:<26} {verdict:<60} {time.monotonic() - t0:.1f} s", flush=True)
        for cell in cells:
            print(f"{'':<28}{cell}")
        if not caught_by:
            status = max(status, 1)
    print()
    print("every mutant caught" if status == 0 else "some mutant survived or could not be applied")
    return status


if __name__ == "__main__":
    sys.exit(main())
