"""The transition tables rendered for people and machines: Markdown, JSON, Graphviz dot, SVG."""

from __future__ import annotations

import json
import shutil
import subprocess

from kcm.model.tables import RuleSet

MACHINES = ("partition", "replica")


def _rows(rules: RuleSet, machine: str) -> dict[str, frozenset[str]]:
    return rules.partition if machine == "partition" else rules.replica


def table_json(rules: RuleSet, machines: tuple[str, ...] = MACHINES) -> str:
    """{"partition": {TARGET: [VALID PREVIOUS...]}, "replica": {...}}, every list sorted by name."""
    doc = {m: {t: sorted(prev) for t, prev in sorted(_rows(rules, m).items())} for m in machines}
    return json.dumps(doc, indent=2)


def table_markdown(rules: RuleSet, machines: tuple[str, ...] = MACHINES) -> str:
    """The tables as the seeds write them: each target with the states it may be entered from."""
    lines = [f"# Transition tables: rules '{rules.name}'", "", rules.description, ""]
    for m in machines:
        rows = _rows(rules, m)
        states = rules.partition_states() if m == "partition" else rules.replica_states()
        lines += [f"## {m.capitalize()} state machine", "", f"Valid states: {', '.join(states)}", "",
                  "| target state | valid previous states |", "|---|---|"]
        for target in states:
            lines.append(f"| {target} | {', '.join(sorted(rows[target]))} |")
        lines.append("")
        lines.append("Valid state transitions:")
        for target in states:
            lines.append(f"- {','.join(sorted(rows[target]))} -> {target}")
        lines.append("")
    return "\n".join(lines)


def table_dot(rules: RuleSet, machines: tuple[str, ...] = MACHINES) -> str:
    """The state machines as a Graphviz digraph, one cluster per machine."""
    out = ["digraph kcm {", "  rankdir=LR;", '  node [shape=box, style=rounded, fontname="Helvetica"];',
           f'  label="kcm transition tables: rules {rules.name}"; labelloc=t;']
    for m in machines:
        out.append(f'  subgraph cluster_{m} {{ label="{m} state machine";')
        states = rules.partition_states() if m == "partition" else rules.replica_states()
        for s in states:
            out.append(f'    "{m}:{s}" [label="{s}"];')
        for target in states:
            for prev in sorted(_rows(rules, m)[target]):
                out.append(f'    "{m}:{prev}" -> "{m}:{target}";')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


class GraphvizMissing(RuntimeError):
    """Graphviz's `dot` is not installed."""


def table_svg(rules: RuleSet, machines: tuple[str, ...] = MACHINES) -> str:
    """The state machines drawn as SVG by Graphviz's `dot` (GraphvizMissing if it is not installed)."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizMissing(
            "Graphviz's `dot` is not installed: install Graphviz (Debian and Ubuntu: apt-get install graphviz; "
            "macOS: brew install graphviz); `--format dot` works without it"
        )
    done = subprocess.run([dot, "-Tsvg"], input=table_dot(rules, machines), capture_output=True, text=True,
                          check=True)
    return done.stdout
