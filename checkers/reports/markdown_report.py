"""Markdown summaries for GitHub: a job's summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment.

A summary says what was checked, lists every failure where it happened, and draws each counterexample's sequence
diagram as a Mermaid `sequenceDiagram`, which GitHub renders. The diagram is `html_report.sequence`'s data (the
same lanes and arrows as the HTML report's SVG), written in Mermaid's syntax; this module decides nothing itself.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from kcm.checkers.reports.html_report import Message, StepHead, sequence

# A case's statuses, as `ci_formats.py` names them (it imports this module to write a summary, so this one
# imports nothing of it: the cases are read by their fields).
FAILED, SKIPPED = "failed", "skipped"
MAX_LABEL = 120  # characters of an arrow's label or a step's action kept on the diagram
MAX_DETAIL = 4000  # characters of a failure's JSON detail kept in its <details> block
TRACE_TAIL = 40  # a trace's events drawn before the one judged
TRACE_SUITES = ("check-trace", "traces")  # the cases that judge a trace (the command's, the gate's stage)
VIOLATION_FILL, GOAL_FILL = "rgb(253, 236, 236)", "rgb(232, 245, 233)"  # a marked step's box
# Characters Mermaid (or the Markdown fence around it) would read as syntax in a label -> Mermaid's entity code
_MERMAID_CODES = {ord(ch): f"#{ord(ch)};" for ch in "#;%<>`{}"}


def _mermaid_text(text: str, limit: int = MAX_LABEL) -> str:
    """Text Mermaid shows as written: its entity codes for the characters its syntax (or Markdown's fence) reads."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return text.translate(_MERMAID_CODES)


def mermaid(evidence: dict[str, Any]) -> str:
    """The counterexample's sequence diagram as a fenced Mermaid block: a participant per lane, each step a note
    across all of them, then its messages as arrows."""
    return _mermaid(*sequence(evidence), "step")


def _mermaid(lanes: list[str], rows: list[StepHead | Message], unit: str) -> str:
    """Sequence-diagram data (`html_report.sequence`'s, or a trace's) in Mermaid's syntax; a header names its
    `unit` (a step of a counterexample, a line of a trace)."""
    ids = {lane: f"P{n}" for n, lane in enumerate(lanes)}
    out = ["```mermaid", "sequenceDiagram"]
    out += [f"    participant {ids[lane]} as {_mermaid_text(lane)}" for lane in lanes]
    span = f"{ids[lanes[0]]},{ids[lanes[-1]]}"
    framed = False  # inside the box of the step that violates the property (or reaches the goal)
    for row in rows:
        if isinstance(row, StepHead):
            if framed:
                out.append("    end")
            framed = bool(row.mark)
            if framed:  # the HTML report's colours: red for a violation, green for a goal reached
                out.append(f"    rect {GOAL_FILL if row.mark.endswith('reached here') else VIOLATION_FILL}")
            loop = " (the loop starts here)" if row.loop_start else ""
            mark = f" ({_mermaid_text(row.mark)})" if row.mark else ""  # the step that violates (reaches) it
            out.append(f"    Note over {span}: {unit} {row.step}: {_mermaid_text(row.action)}{loop}{mark}")
        else:
            out.append(f"    {ids[row.frm]}->>{ids[row.to]}: {_mermaid_text(row.label)}")
    if framed:
        out.append("    end")
    out.append("```")
    return "\n".join(out)


def _trace_events(path: str, last: int) -> list[tuple[int, dict[str, Any]]]:
    """(line, event) of a trace's events up to line `last` (the one judged), the last TRACE_TAIL + 1 of them; []
    when the file does not read as it did when judged (every event up to `last` valid)."""
    from kcm.checkers.oracle.oracle_trace import MAX_LINE_BYTES, parse_line
    from kcm.model import strictjson

    kept: deque[tuple[int, dict[str, Any]]] = deque(maxlen=TRACE_TAIL + 1)
    try:
        with open(path, "rb") as fh:
            for number, (raw, whole) in enumerate(strictjson.bounded_lines(fh, MAX_LINE_BYTES), 1):
                if number > last:
                    break
                text = raw.decode("utf-8", "surrogateescape").strip()
                if not text:
                    continue
                event = parse_line(text)[0] if whole else None
                if event is None:
                    return []
                kept.append((number, event))
    except (OSError, strictjson.InputError):
        return []
    return list(kept) if kept and kept[-1][0] == last else []


def _trace_arrow(ev: dict[str, Any]) -> tuple[str, str, str]:
    """(from lane, to lane, label) of one trace event, in the lanes and words of the counterexamples' diagrams."""
    kind, broker = ev["type"], f"broker {ev.get('broker')}"
    if kind in ("broker_up", "broker_down"):
        return broker, "ZooKeeper", "registers" if kind == "broker_up" else "session gone"
    if kind == "controller_elected":
        return "ZooKeeper", "controller", f"/controller = broker {ev['broker']}, epoch {ev['epoch']}"
    if kind == "partition_state_change":
        return "controller", "controller", f"{ev['partition']}: {ev['from']} -> {ev['to']}"
    if kind == "replica_state_change":
        return "controller", "controller", f"{ev['partition']} replica {ev['replica']}: {ev['from']} -> {ev['to']}"
    if kind == "leader_and_isr_write":
        return "controller", "ZooKeeper", (f"write {ev['partition']}: leader={ev['leader']} LE={ev['leader_epoch']} "
                                           f"isr={ev['isr']} CE={ev['controller_epoch']} zkVersion={ev['zk_version']}")
    if kind in ("request_sent", "request_received"):
        parts = ev["partitions"]
        label = f"{ev['request']} {','.join(str(q.get('partition')) for q in parts)}"
        if ev["request"] == "LeaderAndIsr" and len(parts) == 1:
            label += f" leader={parts[0].get('leader')} LE={parts[0].get('leader_epoch')} isr={parts[0].get('isr')}"
        label += f" CE={ev['controller_epoch']}"
        if kind == "request_sent":
            return "controller", broker, label
        return broker, broker, ("refuses " if ev.get("accepted") is False else "takes ") + label
    if kind == "produce":
        return "client", broker, (f"produce {ev['partition']} x{ev.get('count', 1)} at {ev['offset']}: "
                                  f"LEO {ev['leo']}, HW {ev['hw']}")
    if kind == "fetch":
        return broker, f"broker {ev['leader']}", (f"Fetch {ev['partition']} at {ev['fetch_offset']}: "
                                                  f"LEO {ev['leo']}, HW {ev['hw']}")
    return "controller", "controller", kind


def trace_mermaid(path: str, line: int, rule: str) -> str:
    """The trace up to its judged line as a Mermaid sequence diagram (the last TRACE_TAIL events before it), that
    line's event framed and marked with the rule it breaks; "" when the trace cannot be read back."""
    events = _trace_events(path, line)
    if not events:
        return ""
    brokers = sorted({ev[k] for _, ev in events for k in ("broker", "leader") if type(ev.get(k)) is int})
    lanes = ["client", "ZooKeeper", "controller"] + [f"broker {b}" for b in brokers]
    rows: list[StepHead | Message] = []
    if len(events) > TRACE_TAIL:  # a long trace: its start left out
        rows.append(StepHead(events[0][0], "the lines before this one are left out", False))
    rows += [Message(*_trace_arrow(ev)) for _, ev in events[:-1]]
    number, ev = events[-1]
    mark = f"{rule} broken here" if rule[:1].isupper() else "the line judged"  # a property id, or kcm's own rule
    rows += [StepHead(number, json.dumps(ev, separators=(",", ":")), False, mark), Message(*_trace_arrow(ev))]
    return _mermaid(lanes, rows, "line")


def _cell(text: Any) -> str:
    """Text for one cell of a Markdown table: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code that holds any text (fenced by one backtick more than its longest run of them)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {_cell(text)} {ticks}" if longest else f"`{_cell(text)}`"


def evidence_section(evidence: dict[str, Any], title: str) -> list[str]:
    """A counterexample: the property in words, the witness, the sequence diagram."""
    w = evidence["witness"]
    at = f" at step {w['step']}" if w.get("step") is not None else ""
    out = [f"#### {title}", "", f"**{evidence['property']}** ({evidence['kind']}): {_cell(evidence['rule'])}", "",
           f"Witness{at}: {_cell(w['why'])}", ""]
    if "error" in evidence:  # a user's predicate that raised: its traceback
        out += ["````text", evidence["error"].replace("````", "'''"), "````", ""]
    return out + [mermaid(evidence), ""]


def _detail(detail: Any) -> list[str]:
    if detail is None:
        return []
    text = json.dumps(detail, indent=1, sort_keys=True, default=str)
    if len(text) > MAX_DETAIL:
        text = text[:MAX_DETAIL] + "\n..."
    fence = "```" if "```" not in text else "````"
    return ["<details><summary>detail</summary>", "", f"{fence}json", text, fence, "", "</details>", ""]


def failures_section(cases: Iterable[Any]) -> list[str]:
    """Every failed case: where (file and line), the rule broken and the message; then each one's counterexample
    with its sequence diagram, or its detail."""
    failed = [c for c in cases if c.status == FAILED]
    if not failed:
        return []
    out = ["### Failures", "", "| check | case | where | rule | what |", "|---|---|---|---|---|"]
    for c in failed:
        where = f"{_code(c.file)}{f' line {c.line}' if c.line else ''}" if c.file else ""
        out.append(f"| {_cell(c.suite)} | {_cell(c.name)} | {where} | {_cell(c.rule)} | {_cell(c.message)} |")
    out.append("")
    for c in failed:
        if c.evidence is not None:
            out += evidence_section(c.evidence, f"{c.suite}: {c.name}")
        else:
            drawn = (trace_mermaid(c.file, c.line, c.rule or "") if c.suite in TRACE_SUITES and c.file and c.line
                     and c.rule != "malformed-trace" else "")
            if drawn or c.detail is not None:
                out += [f"#### {c.suite}: {c.name}", "", _cell(c.message), ""]
                out += [drawn, ""] if drawn else []
                out += _detail(c.detail)
    return out


def cases_summary(title: str, cases: list[Any]) -> str:
    """The summary of a check over files (check-trace, check-log): a line per case, then the failures."""
    bad = sum(c.status == FAILED for c in cases)
    verdict = f"**{bad} of {len(cases)} failed**" if bad else f"all {len(cases)} passed"
    out = [f"## {title}: {verdict}", "", "| case | verdict |", "|---|---|"]
    out += [f"| {_cell(c.name)} | {'❌ failed' if c.status == FAILED else c.status} |" for c in cases]
    return "\n".join(out + [""] + failures_section(cases)) + "\n"


def gate_summary(report: Any) -> str:
    """The gate's summary: a row per stage (skipped ones with the reason), then every failure."""
    head = "passed" if report.ok else "**FAILED**" if report.failed() else "ran no stage"
    out = [f"## kcm gate: {head} ({report.seconds:.1f} s)", "", "| stage | status | seconds | summary |",
           "|---|---|---|---|"]
    for s in report.stages:
        mark = {FAILED: "❌ failed", SKIPPED: "skipped"}.get(s.status, "✅ " + s.status)
        out.append(f"| {s.name} | {mark} | {s.seconds:.1f} | {_cell(s.summary)} |")
    return "\n".join(out + [""] + failures_section(report.cases())) + "\n"


def exploration_summary(summary: dict[str, Any]) -> str:
    """An exploration's summary: its counts, each property's verdict, each counterexample with its diagram."""
    cexs = summary["counterexamples"]
    head = f"**{len(cexs)} violated**" if cexs else "no violation" + ("" if summary["complete"] else " (partial run)")
    out = [f"## kcm explore: config {summary.get('config')}: {head}", "",
           f"{summary['distinct_states']:,} distinct states, depth {summary['depth']}, engine {summary['engine']}, "
           f"{summary['seconds']} s", "", "| property | verdict |", "|---|---|"]
    out += [f"| {name} | {'❌ ' if name in cexs else ''}{_cell(verdict)} |"
            for name, verdict in summary["verdicts"].items()]
    out.append("")
    for name, cex in cexs.items():
        out += evidence_section(cex["evidence"], f"Counterexample to {name} ({cex['length']} steps)")
    return "\n".join(out) + "\n"


def append(path: str, text: str) -> None:
    """Append a summary to path (GitHub's step summary file gathers every step's); OSError when it cannot."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


__all__ = ["append", "cases_summary", "evidence_section", "exploration_summary", "failures_section", "gate_summary",
           "mermaid"]
