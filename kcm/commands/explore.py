"""`kcm explore`: exhaustive exploration of a bounded cluster, on one core or on Spark."""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcm import flags
from kcm.checkers.core import evidence
from kcm.checkers.core.bounded import BadConfig, BoundedSystem, load_config
from kcm.checkers.explore import liveness, stopping, walk
from kcm.checkers.reductions import choice as reductions
from kcm.checkers.reports import ci_formats
from kcm.properties import catalogue, user
from kcm.properties.user import BadProperty

if TYPE_CHECKING:  # the explorers' modules need NumPy: imported where they run (see _run)
    from kcm.checkers.explore.level_loop import Progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of `kcm explore`."""
    p.add_argument("--config", default="tiny", help="a config name from specs/configs/ or a path (default: tiny)")
    p.add_argument("--engine", choices=("local", "spark"), default="local")
    p.add_argument("--master", metavar="URL",
                   help="spark engine: a Spark master URL (default: spark-submit's or spark-defaults.conf's master, "
                        "else local[*]; a local master gets task retries: local[N] runs as local[N,4])")
    p.add_argument("--spark-memory", metavar="SIZE",
                   help="spark engine: JVM heap of the driver (in local mode also the executors') and of each "
                        "executor (default 4g for the driver kcm starts; under spark-submit the driver's is "
                        "spark-submit's --driver-memory)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="spark engine: a Spark setting passed through (repeatable), as spark-submit's --conf")
    p.add_argument("--driver-below", type=flags.count(0, flags.MAX_STATES), metavar="N",
                   help="spark engine: levels of at most N states are expanded in the driver, without Spark's job "
                        "latency (default 2000; 0: every level on Spark); the same counts and counterexamples")
    p.add_argument("--spark-log", action="store_true",
                   help="spark engine: Spark's own logging (start-up lines, warnings) instead of errors only")
    p.add_argument("--workers", type=flags.count(1, 256), default=1, metavar="N",
                   help="local engine: N worker processes sharing each level's states, only fingerprints and "
                        "links sent between them (TLC's -workers; default 1: this process alone); the same counts "
                        "and counterexamples")
    p.add_argument("--max-states", type=flags.count(1, flags.MAX_STATES),
                   help="stop after this many distinct states (the run is then partial)")
    p.add_argument("--estimate", nargs="?", const=60.0, type=flags.seconds(0.1, flags.MAX_SECONDS), metavar="SECONDS",
                   help="estimate the whole space's distinct states, depth and time per engine instead of exploring "
                        "it: exact levels for about SECONDS (default 60; --max-states caps them), one level "
                        "sampled, the rest extrapolated (docs/exploration.md)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--out", help="write each counterexample as a `kcm run` scenario into this folder")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (counterexamples, coverage)")
    ci_formats.add_markdown_argument(p)
    p.add_argument("--coverage", action="store_true", help="also report which table edges the exploration covered")
    p.add_argument("--walks", type=flags.count(1, flags.MAX_WALKS),
                   help="random-walk mode (either engine): run N seeded walks instead of BFS")
    p.add_argument("--depth", type=flags.count(0, flags.MAX_DEPTH),
                   default=100, help="steps per random walk at most (default: 100)")
    p.add_argument("--seed", type=flags.count(0, flags.MAX_SEED),
                   default=0, help="seed of the random walks (default: 0)")
    p.add_argument("--reductions", default=reductions.DEFAULT, metavar="LIST",
                   help="the reductions to apply: 'auto' (default: every one whose soundness argument holds for the "
                        "config), 'none' (the full space), or a comma-separated list of "
                        f"{', '.join(reductions.NAMES)} (an error where one is not sound)")
    p.add_argument("--symmetry", action="store_true", help="the same as --reductions symmetry")
    p.add_argument("--symmetry-compare", "--reductions-compare", dest="symmetry_compare", action="store_true",
                   help="also run the full space (no reduction) on the local engine and report both counts")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="write a checkpoint to FILE at level boundaries (one format: any engine resumes any other's)")
    p.add_argument("--checkpoint-every", metavar="SECONDS", type=flags.seconds(0, flags.MAX_SECONDS), default=60.0,
                   help="at most one checkpoint per this many seconds (default 60; 0: at every level)")
    p.add_argument("--resume", metavar="FILE", help="continue the run saved in this checkpoint (same config)")
    p.add_argument("--max-memory", type=_size, metavar="SIZE",
                   help="stop cleanly (checkpoint, partial result, exit 3) once this process and its workers hold "
                        "more than SIZE of memory (e.g. 6G, 500M; read at least once a second)")
    p.add_argument("--property", dest="user_properties", action="append", default=[], metavar="PATH.py:FUNCTION",
                   help="also check this Python predicate of yours (or module:function; repeatable): one parameter, "
                        "the state, or three, before, action, after; True while the rule holds. Loading it runs "
                        "your code (docs/user-properties.md)")
    p.add_argument("--only-property", dest="only", action="append", metavar="ID",
                   help="check only the property of this id, of the catalogue or --property (repeatable)")
    p.add_argument("--continue", dest="keep_going", action="store_true",
                   help="explore the whole boundary; by default the search stops after the level of the first "
                        "violation (every counterexample is still the shortest, and the same on every engine)")


def main(args: argparse.Namespace) -> int:
    """Run the exploration and print the summary; exit 1 if a property is violated, 2 on a bad config, 3 when
    partial (--max-states; or stopped by SIGINT, SIGTERM or --max-memory, with a checkpoint to resume)."""
    stop = stopping.StopRequest(args.max_memory)
    try:
        with stopping.on_signals(stop):
            return _run(args, stop)
    except stopping.Interrupted as err:
        where = err.where or "outside the search (before it began, or judging its result): nothing to resume"
        print(f"kcm explore: {err} {where}", file=sys.stderr)
        return PARTIAL


class _Refused(Exception):
    """A flag, config or file kcm explore refuses, told in one line (exit 2)."""


def _run(args: argparse.Namespace, stop: stopping.StopRequest) -> int:
    """`main` with SIGINT and SIGTERM handled by `stop`: parse, call the engine the registry names, print."""
    # The explorers need NumPy, which the core install leaves out: imported here, so that `--help` works there.
    from kcm.checkers import engines
    from kcm.checkers.explore.checkpoint import BadCheckpoint

    try:
        model, mine, choice = _prepare(args)
        if args.estimate is not None:
            return _estimate(args, choice.model, model.cfg.get("name", args.config))
        options = _options(args, model, mine, choice, stop)
        found = engines.explore(engines.name_of(args.engine, args.workers, args.walks is not None), choice.model,
                                options)
        summary, cov = _summary(args, model, choice, found, options, stop)
        _write(args, summary)
    except (_Refused, BadConfig, ValueError, BadCheckpoint, engines.EngineError, OSError, RuntimeError) as err:
        print(f"kcm explore: {err}", file=sys.stderr)
        return 2
    if not args.coverage:
        summary.pop("coverage", None)
    _print(args, summary, cov)
    if stop.acted:  # whatever it found so far, the run is to be resumed
        return PARTIAL
    return 1 if summary["counterexamples"] else 0 if summary["complete"] else PARTIAL


def _prepare(args: argparse.Namespace) -> tuple[BoundedSystem, list[Any], Any]:
    """The config's bounded system, the user's properties and the reductions chosen, after the flags are checked
    (_Refused, BadConfig or ValueError on a bad one)."""
    if args.walks is not None and (args.walks < 1 or args.depth < 0):
        raise _Refused("--walks takes N >= 1 and --depth D >= 0")
    cfg = load_config(args.config)
    mine = user.load_all(args.user_properties, catalogue.ids())
    if mine and (args.symmetry or args.symmetry_compare):
        raise BadProperty("--property: not with --symmetry (a predicate of yours may tell brokers apart)")
    only = _only(args.only, cfg, mine)
    model = BoundedSystem(cfg)
    model.add_properties(mine, only)
    wanted = ("symmetry",) if args.symmetry else reductions.parse(args.reductions)
    choice = reductions.choose(model, wanted, user_properties=bool(mine), exhaustive=args.walks is None)
    if args.out and (why := flags.prepare_folder(args.out)):
        raise _Refused(f"--out {args.out}: {why}")
    if args.checkpoint_every < 0:
        raise _Refused("--checkpoint-every must be 0 or more seconds")
    if args.workers < 1 or args.workers > 256 or args.workers > 1 and (args.engine != "local" or args.walks):
        raise _Refused("--workers takes 1 to 256, with the local engine's exhaustive search")
    if args.walks is not None and (args.checkpoint is not None or args.resume is not None):
        raise _Refused("--checkpoint and --resume are for the exhaustive search, not --walks")
    if args.walks is not None and args.coverage:
        raise _Refused("--coverage counts the exhaustive search's transitions, not --walks")
    if args.max_memory is not None and (args.walks is not None or not stopping.can_measure()):
        raise _Refused("--max-memory is for the exhaustive search, on a system with /proc (Linux)")
    return model, mine, choice


def _options(args: argparse.Namespace, model: BoundedSystem, mine: list[Any], choice: Any,
             stop: stopping.StopRequest) -> Any:
    """The engine's options from the flags: the checkpoint to write (one is kept for a stop even without
    --checkpoint) and the one to resume (BadCheckpoint if it is not this run's), the bounds, progress lines."""
    from kcm.checkers import engines
    from kcm.checkers.explore import bfs, checkpoint
    from kcm.checkers.explore.level_loop import resume_note

    identity = checkpoint.config_identity(dict(model.cfg, user_properties=user.identity(model.properties()))
                                          if mine else model.cfg, choice.identity())
    checkpointer = None
    if args.checkpoint is not None:
        checkpointer = checkpoint.Checkpointer(args.checkpoint, args.checkpoint_every, identity, engine=args.engine)
    elif args.walks is None:  # written only if the run is stopped (see --max-memory)
        checkpointer = _default_checkpointer(default_checkpoint(model.cfg.get("name", args.config)), identity,
                                             args.engine)
    resume = checkpoint.load(args.resume, identity) if args.resume is not None else None
    if resume is not None and not args.quiet:
        print(resume_note(resume, by_level=args.engine == "spark"), file=sys.stderr, flush=True)
    stop_at = None if args.keep_going or args.walks is not None else bfs.safety_names(choice.model)
    return engines.Options(
        max_states=args.max_states, progress=None if args.quiet else _progress, checkpoint=checkpointer,
        resume=resume, stop_at=stop_at, coverage=_counting(args), stop=stop, workers=args.workers,
        walks=args.walks or 1, depth=args.depth, seed=args.seed, walk_progress=None if args.quiet else _walk_progress,
        master=args.master, spark_memory=args.spark_memory, conf=args.conf, spark_log=args.spark_log,
        driver_below=args.driver_below)


def _progress(p: Progress) -> None:
    """A progress line of the breadth-first search, on stderr."""
    eta = "ETA unknown (frontier still growing)" if p.eta_seconds is None else \
        f"ETA ~{p.eta_seconds:,.0f} s (estimate from the frontier's growth)"
    print(f"level {p.level}: {p.states:,} distinct states, {p.states_per_second:,.0f} states/s, "
          f"frontier {p.frontier:,}, {eta}", file=sys.stderr, flush=True)


def _walk_progress(walks: int, states: int, seconds: float) -> None:
    """A progress line of the random walks, on stderr."""
    print(f"walks {walks}: {states} distinct states, {states / seconds if seconds else 0:,.0f} states/s",
          file=sys.stderr, flush=True)


def _summary(args: argparse.Namespace, model: BoundedSystem, choice: Any, found: Any, options: Any,
             stop: stopping.StopRequest) -> tuple[dict[str, Any], Any]:
    """The run's summary (the JSON document: verdicts with the liveness ones, the reductions, the stop) and its
    coverage (None unless the run counted it)."""
    from kcm.checkers import engines

    explored = choice.model
    if args.walks is None and not stop.acted:  # a walk sees no whole graph: its EVENTUALLY verdicts stay "not judged"
        found = reductions.shorten(choice, found, args.max_states, options.stop_at)
        liveness.add_verdicts(found, model, args.max_states)
    summary = found.to_json(explored)
    summary["config"] = model.cfg.get("name", args.config)
    summary["reductions"] = choice.to_dict()
    if stop.acted:
        path = str(options.checkpoint.path)
        summary["interrupted"] = {"reason": stop.reason, "checkpoint": path, "resume": resume_command(args, path),
                                  "frontier_states_left_out": stop.states_left_out}
    # Unreduced on the local engine: every engine the same counts.
    if args.symmetry_compare and choice.applied and not stop.acted:
        unreduced = engines.explore("walks" if args.walks is not None else "local", model, engines.Options(
            max_states=args.max_states, stop_at=options.stop_at, walks=options.walks, depth=args.depth,
            seed=args.seed))
        summary["reductions"]["unreduced_states"] = unreduced.distinct_states
    if "symmetry" in choice.applied:
        summary["symmetry"] = {"group_size": len(explored.group), "reduced_states": found.distinct_states}
        if "unreduced_states" in summary["reductions"]:
            summary["symmetry"]["unreduced_states"] = summary["reductions"]["unreduced_states"]
    cov = None
    if found.tally is not None:  # counted by the run's own engine as it took each transition
        from kcm.checkers.explore import coverage

        cov = coverage.of_run(model, found.tally, summary["config"])
        summary["coverage"] = cov.to_dict()
    return summary, cov


def _write(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    """The files asked for: the counterexamples as scenarios (--out), the HTML and Markdown reports (_Refused
    naming the file that could not be written)."""
    if args.out:
        folder = Path(args.out)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name, cex in summary["counterexamples"].items():
                (folder / f"{name}.json").write_text(json.dumps(cex["scenario"], indent=1) + "\n")
        except OSError as err:
            raise _Refused(f"--out {args.out}: {err.strerror or err}") from None
    if args.html:
        from kcm.checkers.reports import html_report

        try:
            html_report.write(args.html, html_report.exploration_page(summary, summary.get("coverage")))
        except OSError as err:
            raise _Refused(f"cannot write {args.html}: {err.strerror}") from None
    if args.markdown:
        from kcm.checkers.reports import markdown_report

        try:
            markdown_report.append(args.markdown, markdown_report.exploration_summary(summary))
        except OSError as err:
            raise _Refused(f"cannot write {args.markdown}: {err.strerror}") from None


def _print(args: argparse.Namespace, summary: dict[str, Any], cov: Any) -> None:
    """Print the summary: JSON, or the text of the search (or of the walks) with its warnings and coverage."""
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(walk.render(summary) if args.walks is not None else _text(summary))
    for line in summary.get("warnings", ()):  # goals a complete run never reached (checkers/explore/verdicts.py)
        print(f"  warning: {line}")
    if args.walks is None:
        print(_reductions_text(summary))
    if cov is not None and args.coverage:
        from kcm.checkers.explore import coverage

        print(coverage.text(cov))


def _reductions_text(s: dict) -> str:
    """The reductions lines of the text summary: what was applied, with the counts, and what was refused."""
    red = s["reductions"]
    unreduced = f", {red['unreduced_states']:,} without" if "unreduced_states" in red else ""
    lines = []
    if "symmetry" in red["applied"]:
        sym = s["symmetry"]
        lines.append(f"  reduction symmetry: a group of {sym['group_size']} broker permutation(s), "
                     f"{sym['reduced_states']:,} states reduced{unreduced}")
    if "por" in red["applied"]:
        lines.append(f"  reduction por (partial-order, persistent sets over partitions): {s['distinct_states']:,} "
                     f"states{unreduced}")
    if "dead-brokers" in red["applied"]:
        lines.append(f"  reduction dead-brokers (what a broker down for good kept in memory is forgotten): "
                     f"{s['distinct_states']:,} states{unreduced}")
    if "counterexamples" in red:
        lines.append(f"  counterexamples: {red['counterexamples']}")
    if not red["applied"]:
        lines.append("  reductions: none (the full space)")
    lines += [f"  not applied: {name}: {why}" for name, why in red["refused"].items()]
    return "\n".join(lines)


def _only(ids: list[str] | None, cfg: dict[str, Any], mine: list[Any]) -> set[str] | None:
    """The ids --only-property keeps (None: every property); the catalogue's among them become the config's list,
    so that the config checks them even where it would leave them out (BadProperty for an unknown id)."""
    if ids is None:
        return None
    known = set(catalogue.ids()) | {p.name for p in mine}
    for name in ids:
        if name not in known:
            raise BadProperty(f"--only-property {name}: no such property; known: {', '.join(sorted(known))}")
    ours = [name for name in dict.fromkeys(ids) if name in catalogue.ids()]
    if ours:
        cfg["properties"] = ours
    return set(ids)


def _counting(args: argparse.Namespace) -> bool:
    """Whether the run counts its transitions for coverage (the report, --html, wants them; walks do not count)."""
    return (args.coverage or args.html is not None) and args.walks is None


def _estimate(args: argparse.Namespace, explored: Any, name: str) -> int:
    """`--estimate`: the size of the whole space and its time per engine, printed (text or JSON)."""
    from kcm.checkers.explore import estimate

    if args.walks is not None or args.resume is not None or args.checkpoint is not None:
        print("kcm explore: --estimate runs on its own, not with --walks, --checkpoint or --resume", file=sys.stderr)
        return 2
    est = estimate.estimate(explored, args.estimate, args.max_states, args.seed)
    out = dict(est.to_json(), config=name)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    depth = f"{out['depth']}" if est.closed else f"~{out['depth']} ({out['depth_low']}-{out['depth_high']})"
    states = (f"{out['distinct_states']:,}" if est.closed else
              f"~{out['distinct_states']:,} (range {out['distinct_states_low']:,}-{out['distinct_states_high']:,})")
    lines = [f"kcm explore --estimate: config {name}", f"  distinct states {states}, depth {depth}",
             f"  method: {out['method']}",
             f"  exact levels: {', '.join(f'{n:,}' for n in out['exact_levels'])}"]
    if out["sampled_level"] is not None:
        sampled = (f"levels from {out['probes']:,} random descents: "
                   f"{', '.join(f'~{n:,}' for n in out['probed_levels'])}" if out["probed_levels"] is not None
                   else f"sampled level: ~{out['sampled_level']:,}")
        lines.append(f"  {sampled}; projected levels: "
                     f"{', '.join(f'{n:,}' for n in out['projected_levels']) or 'none'}")
    lines.append(f"  measured {out['states_per_second']:,.0f} states/s on the local engine ({out['explored_states']:,} "
                 f"states); the estimate took {out['seconds']} s")
    lines.append("  time to explore the whole space:")
    lines += [f"    {e['engine']:18} ~{_duration(e['seconds'])} ({_duration(e['seconds_low'])}-"
              f"{_duration(e['seconds_high'])}); speed: {e['speed_from']}" for e in out["engines"]]
    print("\n".join(lines))
    return 0


def _duration(seconds: float) -> str:
    """Seconds as a person reads them: 40 s, 12 min, 3.5 h."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


PARTIAL = 3  # exit code of a run cut short by --max-states that found no violation: nothing is known to hold


def _size(text: str) -> int:
    """The argparse type of --max-memory: bytes (see `stopping.parse_size`)."""
    try:
        return stopping.parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _default_checkpointer(path: str, identity: str, engine: str) -> Any:
    """The writer of a stop's checkpoint at `path`, or, while another run of the same config in this folder holds
    that file (or something else has its name), at the first free one of `-2` to `-9` before `.ckpt` (the stop's
    message names the file)."""
    from kcm.checkers.explore import checkpoint
    from kcm.checkers.explore.checkpoint_lock import CheckpointBusy

    stem = path.removesuffix(".ckpt")
    for name in [path] + [f"{stem}-{n}.ckpt" for n in range(2, 10)]:
        try:
            return checkpoint.Checkpointer(name, math.inf, identity, engine=engine)
        except (CheckpointBusy, checkpoint.BadCheckpoint) as err:
            taken = err
    raise taken


def default_checkpoint(config: str) -> str:
    """Where a run without --checkpoint writes the checkpoint when it is stopped: kcm-explore-<config>.ckpt in the
    working folder (the config's name, `bugs/KIP-101` as bugs-KIP-101)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(config).removesuffix(".json")).strip("-.") or "config"
    return f"kcm-explore-{name[-100:]}.ckpt"


def resume_command(args: argparse.Namespace, path: str) -> str:
    """The command line that resumes this run from the checkpoint `path`: its flags as given, --resume `path`."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    words = ["kcm", "explore"]
    for action in parser._actions:
        if not action.option_strings or action.dest in ("resume", "estimate"):
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # store_true and the like
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join(words + ["--resume", path])


def _steps(n: int) -> str:
    return "this 1 step" if n == 1 else f"these {n} steps"


def _partial(s: dict) -> str:
    if s["complete"]:
        return ""
    if "interrupted" in s:
        return f" (partial: stopped, {s['interrupted']['reason']})"
    if s.get("stopped_at_violation"):
        return " (stopped after the level of the first violation; --continue explores everything)"
    return " (partial: --max-states)"


def _text(s: dict) -> str:
    lines = [f"kcm explore: config {s['config']}, engine {s['engine']}",
             f"  distinct states {s['distinct_states']:,}{_partial(s)}, "
             f"transitions {s['transitions']:,}, depth {s['depth']}, {s['seconds']} s, "
             f"{s['states_per_second'] or 0:,} states/s, visited set {s['bytes_per_state']} bytes/state",
             f"  probability that a fingerprint collision hid a state: <= {s['collision_probability']:.1e}",
             "  properties:"]
    lines += [f"    {name:34} {verdict}" for name, verdict in s["verdicts"].items()]
    for name, cex in s["counterexamples"].items():
        steps = cex["scenario"]["steps"]
        loop = len(steps) - cex["length"] + cex["loop_start"] if "loop_start" in cex else None
        first = len(steps) - cex["length"]
        setup = ("step 0 sets up the config's topics, " if first == 1 else
                 f"steps 0-{first - 1} set up the config's topics and deliver their requests, " if first else "")
        if "error" in cex["evidence"]:
            lines.append(f"  error of {name}: the predicate failed after {_steps(cex['length'])} ({setup}the diff "
                         f"of each step below), with:")
            lines += ["    | " + line for line in cex["evidence"]["error"].splitlines()]
        elif loop is None:
            lines.append(f"  counterexample to {name}: violated after {_steps(cex['length'])} ({setup}the diff of "
                         f"each step below; --json or --html for every state):")
        elif loop == len(steps):
            lines.append(f"  counterexample to {name}: after {_steps(cex['length'])} ({setup}see below) the cluster "
                         f"stays unsettled with no fair step left to take:")
        else:
            lines.append(f"  counterexample to {name}: a lasso of {cex['length']} step{'s' * (cex['length'] != 1)} "
                         f"({setup}see below); the steps from {loop} on repeat forever, fairly:")
        lines += evidence.text(cex["evidence"])
    if "interrupted" in s:
        stopped = s["interrupted"]
        left_out = " (without the frontier's states: its resume replays)" if stopped["frontier_states_left_out"] else ""
        lines.append(f"  stopped ({stopped['reason']}): checkpoint of the last level boundary written to "
                     f"{stopped['checkpoint']}{left_out}; to resume: {stopped['resume']}")
    if not s["complete"] and not s["counterexamples"]:
        lines.append(f"  partial run: no property is violated within {s['distinct_states']:,} states; nothing is "
                     f"shown to hold (exit {PARTIAL})")
    return "\n".join(lines)
