"""One self-contained HTML report (no network, no script): a counterexample as a sequence diagram with the state
diff of each step and the violated property in words, and the transition tables with the covered edges marked.

It renders what `checkers/core/evidence.py` and `checkers/explore/coverage.py` computed; it decides nothing itself.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, NamedTuple

from kcm.checkers.core.evidence import json_short
from kcm.model.interface import EVENTUALLY, SOMETIMES, SOMETIMES_STEP

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}h3{font-size:15px}
.rule{background:#fff4e5;border-left:4px solid #e08a00;padding:8px 12px}
.witness{background:#fdecec;border-left:4px solid #c62828;padding:8px 12px}
.witness.goal{background:#e8f5e9;border-left-color:#2e7d32}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;
vertical-align:top;font-size:12px}th{background:#f3f3f3}code,td.v{font-family:ui-monospace,monospace}
td.cov{background:#c8e6c9;text-align:center}td.miss{background:#ffe0b2;text-align:center}
td.no{background:#fafafa}td.out{background:#ef9a9a;text-align:center}
.ok{color:#2e7d32}.bad{color:#c62828}svg text{font:12px ui-monospace,monospace}
"""


def _h(text: Any) -> str:
    return escape(str(text))


def page(title: str, body: list[str]) -> str:
    """A whole HTML document around body parts."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + _h(title) +
            "</title><style>" + CSS + "</style></head><body>\n<h1>" + _h(title) + "</h1>\n" + "\n".join(body) +
            "\n</body></html>\n")


def write(path: str, html: str) -> None:
    """Write the report (OSError when it cannot be written)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(html)


# ------------------------------------------------------------------------------------------------ sequence diagram


def _brokers(evidence: dict[str, Any]) -> list[int]:
    found = set()
    for snap in (evidence["initial_state"], evidence["final_state"]):
        for key in snap:
            if key.startswith("broker ") and key[7:].isdigit():
                found.add(int(key[7:]))
    return sorted(found)


def _arrows(step: dict[str, Any], controller: Any) -> list[tuple[str, str, str]]:
    """(from lane, to lane, label) of one step: sessions, elections, znode writes, requests, client calls."""
    act = step["action"] if isinstance(step["action"], dict) else {"op": str(step["action"])}
    op, diff = act.get("op"), step["diff"]
    out: list[tuple[str, str, str]] = []
    if op in ("broker_fail", "session_expiry"):
        out.append((f"broker {act['broker']}", "ZooKeeper", f"{op}: session gone"))
    elif op in ("broker_start", "broker_bounce"):
        out.append((f"broker {act['broker']}", "ZooKeeper", f"{op}: registers"))
    elif op == "controlled_shutdown":
        out.append((f"broker {act['broker']}", "controller", "ControlledShutdown"))
    elif op in ("produce", "consume"):
        leader = _leader(step, act.get("partition"))
        out.append(("client", f"broker {leader}" if leader is not None else "ZooKeeper",
                    f"{op} {act.get('partition')}" + (f" x{act['records']}" if act.get("records") else "")))
    elif op not in ("replicate", "isr_shrink", "deliver"):
        out.append(("client", "controller", op))
    if "ZooKeeper /controller" in diff:
        new = diff["ZooKeeper /controller"]["after"]
        epoch = diff.get("ZooKeeper /controller_epoch", {}).get("after")
        out.append(("ZooKeeper", "controller", f"/controller = broker {new}" + (f", epoch {epoch}" if epoch else "")))
    for key, change in diff.items():
        if key.startswith("ZooKeeper /brokers/topics/") and key.endswith("/state") and change["after"]:
            new = change["after"]
            writer = "controller"
            if op in ("isr_shrink", "replicate"):
                leader = _leader(step, key.split("/")[3] + "-" + key.split("/")[5])
                writer = f"broker {leader}" if leader is not None else writer
            short = {"leader": "leader", "leader_epoch": "LE", "isr": "isr", "controller_epoch": "CE",
                     "zk_version": "zkVersion"}
            what = " ".join(f"{short.get(k, k)}={json_short(v, 20)}" for k, v in new.items())
            out.append((writer, "ZooKeeper", f"write {key.split('/')[3]}-{key.split('/')[5]}: {what}"))
    for r in step["requests"]:
        label = f"{r['type']} {r.get('partition', ','.join(r.get('partitions', [])))}"
        if r["type"] == "LeaderAndIsr":
            label += f" leader={r['leader']} LE={r['leader_epoch']} isr={r['isr']}"
        label += f" CE={r['controller_epoch']}"
        out.append(("controller", f"broker {r['broker']}", label))
    if op == "replicate":
        leader = _leader(step, act.get("partition"))
        out.append((f"broker {act.get('broker', 'followers')}" if act.get("broker") is not None else "client",
                    f"broker {leader}", f"Fetch {act.get('partition')}"))
    if op == "deliver":
        out.append(("controller", f"broker {act['broker']}", f"deliver CE={act.get('controller_epoch')}"))
    out += _acks(step, act)
    return out


def _acks(step: dict[str, Any], act: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The produce acknowledgements the client gets in a step: acks=1 at once from the leader, acks=all once the
    leader's high watermark passes the records (the step that adds them to the history's `acked`)."""
    out = []
    if act.get("op") == "produce" and str(act.get("acks")) == "1":
        leader = _leader(step, act.get("partition"))
        if leader is not None:
            out.append((f"broker {leader}", "client", f"ack {act.get('partition')} (acks=1)"))
    for key, change in step["diff"].items():
        if not key.startswith("history acked "):
            continue
        tp = key[len("history acked "):]
        before, after = change["before"] or {}, change["after"] or {}
        if isinstance(after, dict):  # offset -> leader epoch
            new = [k for k, v in after.items() if v is not None and (not isinstance(before, dict) or k not in before
                                                                    or before[k] is None)]
        else:
            new = [str(r[0]) if isinstance(r, list) and r else str(r) for r in after if r not in (before or [])]
        leader = _leader(step, tp)
        if new and leader is not None:
            out.append((f"broker {leader}", "client",
                        f"ack {tp} offset{'s' * (len(new) > 1)} {','.join(new)} (acks=all)"))
    return out


def _leader(step: dict[str, Any], partition: Any) -> Any:
    if not isinstance(partition, str):
        return None
    topic, _, part = partition.rpartition("-")
    key = f"ZooKeeper /brokers/topics/{topic}/partitions/{part}/state"
    change = step["diff"].get(key)
    if change and isinstance(change.get("after"), dict) and "leader" in change["after"]:
        return change["after"]["leader"]
    return step.get("_leader", {}).get(partition)


class StepHead(NamedTuple):
    """A step's header on a sequence diagram: its number, its action, whether a lasso's loop starts there."""

    step: int
    action: str
    loop_start: bool
    mark: str = ""  # what this step does to the property: "AckedRecordsSurvive violated here", a goal reached


GOAL_KINDS = (SOMETIMES, SOMETIMES_STEP)  # evidence of a path that reaches a goal rather than a violation


class Message(NamedTuple):
    """An arrow on a sequence diagram: from one lane to another, with what was sent or written."""

    frm: str
    to: str
    label: str


def sequence(evidence: dict[str, Any]) -> tuple[list[str], list[StepHead | Message]]:
    """The counterexample's sequence diagram as data, which every drawing of it renders: the lanes (the client,
    ZooKeeper, the controller and every broker), then each step's header followed by its messages."""
    lanes = ["client", "ZooKeeper", "controller"] + [f"broker {b}" for b in _brokers(evidence)]
    leaders = _initial_leaders(evidence["initial_state"])
    rows: list[StepHead | Message] = []
    for step in evidence["steps"]:
        act = step["action"]
        text = json.dumps(act, separators=(",", ":")) if isinstance(act, dict) else str(act)
        rows.append(StepHead(step["step"], text, evidence.get("loop_start") == step["step"], _mark(evidence, step)))
        rows += [Message(frm, to, label) for frm, to, label in _arrows(dict(step, _leader=leaders), None)
                 if frm in lanes and to in lanes]
        for key, change in step["diff"].items():
            if key.startswith("ZooKeeper /brokers/topics/") and key.endswith("/state") and change["after"]:
                part = key.split("/")
                if "leader" in change["after"]:
                    leaders[f"{part[3]}-{part[5]}"] = change["after"]["leader"]
    return lanes, rows


def _mark(evidence: dict[str, Any], step: dict[str, Any]) -> str:
    """What the step does to the evidence's property, when it is the witness's step: violates it, reaches it."""
    if evidence.get("witness", {}).get("step") != step["step"]:
        return ""
    if evidence.get("kind") in GOAL_KINDS:
        return f"{evidence['property']} reached here"
    return f"{evidence['property']} {'still unsettled' if evidence.get('kind') == EVENTUALLY else 'violated'} here"


def sequence_svg(evidence: dict[str, Any]) -> str:
    """The counterexample as a sequence diagram: a lane each for the client, ZooKeeper, the controller and every
    broker; each step's messages as arrows, epochs on them."""
    lanes, seq = sequence(evidence)
    x = {lane: 90 + i * 190 for i, lane in enumerate(lanes)}
    rows: list[str] = []
    y = 50
    for row in seq:
        if isinstance(row, StepHead):
            y += 26
            loop = " (the loop starts here)" if row.loop_start else ""
            goal = row.mark.endswith("reached here")
            fill = "#eef3fb" if not row.mark else "#e8f5e9" if goal else "#fdecec"
            mark = (f'<text x="{x[lanes[-1]] + 100}" y="{y}" text-anchor="end" font-weight="bold" class="mark" '
                    f'fill="{"#2e7d32" if goal else "#c62828"}">{"&#10003;" if goal else "&#10007;"} '
                    f'{_h(row.mark)}</text>' if row.mark else "")
            room = max(30, int((x[lanes[-1]] + 80 - (len(row.mark) + 4) * 7.3 * bool(row.mark)) / 7.3) - 12)
            text = row.action if len(row.action) <= room else row.action[:room - 3] + "..."
            rows.append(f'<rect x="4" y="{y - 15}" width="{x[lanes[-1]] + 100}" height="20" fill="{fill}"'
                        f'{" stroke=" + chr(34) + ("#2e7d32" if goal else "#c62828") + chr(34) if row.mark else ""}/>'
                        f'<text x="8" y="{y}" font-weight="bold">step {row.step}: {_h(text)}{_h(loop)}'
                        '</text>' + mark)
            continue
        y += 24
        x1, x2 = x[row.frm], x[row.to]
        mid = (x1 + x2) / 2
        rows.append(f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#1565c0" stroke-width="1.5" '
                    f'marker-end="url(#arrow)"/>'
                    f'<text x="{mid}" y="{y - 4}" text-anchor="middle" fill="#0d47a1" stroke="#fff" '
                    f'stroke-width="3" paint-order="stroke">{_h(row.label[:90])}</text>')
    y += 30
    width = x[lanes[-1]] + 110
    heads = "".join(f'<rect x="{x[lane] - 60}" y="8" width="120" height="24" rx="4" fill="#263238"/>'
                    f'<text x="{x[lane]}" y="25" text-anchor="middle" fill="#fff">{_h(lane)}</text>'
                    f'<line x1="{x[lane]}" y1="32" x2="{x[lane]}" y2="{y}" stroke="#90a4ae" stroke-dasharray="4 3"/>'
                    for lane in lanes)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10}" '
            f'viewBox="0 0 {width} {y + 10}" role="img" aria-label="sequence diagram">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1565c0"/></marker></defs>'
            + heads + "".join(rows) + "</svg>")


def _initial_leaders(snap: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in snap.items():
        if key.startswith("ZooKeeper /brokers/topics/") and key.endswith("/state") and isinstance(value, dict):
            part = key.split("/")
            out[f"{part[3]}-{part[5]}"] = value.get("leader")
    return out


# ------------------------------------------------------------------------------------------------ sections


def _value(v: Any) -> str:
    return _h(json.dumps(v, sort_keys=True, separators=(", ", ": "))) if v is not None else "&mdash;"


def evidence_section(evidence: dict[str, Any], title: str | None = None) -> list[str]:
    """The counterexample: the property in words, the witness, the sequence diagram, the diff of each step."""
    w = evidence["witness"]
    out = [f"<h2>{_h(title or 'Counterexample to ' + evidence['property'])}</h2>",
           f"<p class=\"rule\"><b>{_h(evidence['property'])}</b> ({_h(evidence['kind'])}): {_h(evidence['rule'])}</p>"]
    witness = [f"<b>Witness</b>{' at step ' + str(w['step']) if w.get('step') is not None else ''}: {_h(w['why'])}"]
    for d in w.get("detail", []):
        witness.append(f"<br><code>{_value(d)}</code>")
    if w["entries"]:
        witness.append("<table><tr><th>entry</th><th>before</th><th>after</th></tr>" + "".join(
            f"<tr><td>{_h(e['what'])}</td><td class=\"v\">{_value(e['before'])}</td>"
            f"<td class=\"v\">{_value(e['after'])}</td></tr>" for e in w["entries"]) + "</table>")
    if "error" in evidence:  # a user's predicate that raised (or returned no bool): its traceback
        witness.append(f"<pre class=\"error\">{_h(evidence['error'])}</pre>")
    goal = evidence.get("kind") in GOAL_KINDS
    out.append(f"<div class=\"witness{' goal' if goal else ''}\">" + "".join(witness) + "</div>")
    out += ["<h3>Sequence diagram</h3>", sequence_svg(evidence), "<h3>What each step changed</h3>"]
    for step in evidence["steps"]:
        act = step["action"]
        mark = _mark(evidence, step)
        out.append(f"<p><b>step {step['step']}</b> <code>{_h(json.dumps(act))}</code>"
                   + (f" <b class=\"{'ok' if goal else 'bad'}\">&larr; {_h(mark)}</b>" if mark else "") + "</p>")
        if step["diff"]:
            out.append("<table><tr><th>entry</th><th>before</th><th>after</th></tr>" + "".join(
                f"<tr><td>{_h(k)}</td><td class=\"v\">{_value(c['before'])}</td><td class=\"v\">"
                f"{_value(c['after'])}</td></tr>" for k, c in step["diff"].items()) + "</table>")
        else:
            out.append("<p>(no change)</p>")
    out.append("<details><summary>Initial state</summary><table>" + "".join(
        f"<tr><td>{_h(k)}</td><td class=\"v\">{_value(v)}</td></tr>" for k, v in evidence["initial_state"].items())
        + "</table></details>")
    return out


def coverage_section(cov: dict[str, Any]) -> list[str]:
    """One rule set's coverage: each table as a from x to grid, covered edges green, missed orange."""
    from kcm.model.tables import rule_set

    table = rule_set(cov["rules"])
    out = [f"<h2>Transition coverage, rules {_h(cov['rules'])}</h2>",
           f"<p>{len(cov['sources'])} source(s): {_h(', '.join(cov['sources'][:8]))}"
           f"{' ...' if len(cov['sources']) > 8 else ''}</p>"]
    for machine, states in (("partition", table.partition_states()), ("replica", table.replica_states())):
        m = cov[f"{machine}_edges"]
        counts = {(e["from"], e["to"]): e["count"] for e in m["edges"]}
        outside = {(e["from"], e["to"]): e["count"] for e in m["outside_table"]}
        out.append(f"<h3>{machine} table: {m['covered']} of {m['total']} edges covered</h3>")
        head = "".join(f"<th>{_h(s)}</th>" for s in states)
        rows = []
        for f in states:
            cells = []
            for t in states:
                if (f, t) in counts:
                    n = counts[(f, t)]
                    cells.append(f"<td class=\"{'cov' if n else 'miss'}\">{n if n else 'not covered'}</td>")
                elif (f, t) in outside:
                    cells.append(f"<td class=\"out\">outside the table x{outside[(f, t)]}</td>")
                else:
                    cells.append("<td class=\"no\"></td>")
            rows.append(f"<tr><th>{_h(f)}</th>{''.join(cells)}</tr>")
        out.append(f"<table><tr><th>from \\ to</th>{head}</tr>{''.join(rows)}</table>")
    out.append("<h3>Operations and selectors</h3><table><tr><th>operation</th><th>times</th></tr>" + "".join(
        f"<tr><td>{_h(k)}</td><td>{v}</td></tr>" for k, v in cov["operations"].items()) + "</table>")
    out.append("<table><tr><th>selector</th><th>times</th></tr>" + "".join(
        f"<tr><td>{_h(k)}</td><td class=\"{'cov' if v else 'miss'}\">{v}</td></tr>"
        for k, v in cov["selectors"].items()) + "</table>")
    return out


def exploration_page(summary: dict[str, Any], coverage: dict[str, Any] | None = None) -> str:
    """The report of one exploration: its verdicts, each counterexample as evidence, the coverage."""
    body = [f"<p>config <b>{_h(summary.get('config'))}</b>, engine {_h(summary['engine'])}: "
            f"{summary['distinct_states']:,} distinct states, depth {summary['depth']}"
            f"{'' if summary['complete'] else ' (partial run)'}</p>",
            "<table><tr><th>property</th><th>verdict</th></tr>" + "".join(
                f"<tr><td>{_h(k)}</td><td class=\"{'bad' if v in ('violated', 'error') else 'ok'}\">{_h(v)}"
                "</td></tr>"
                for k, v in summary["verdicts"].items()) + "</table>"]
    for cex in summary["counterexamples"].values():
        body += evidence_section(cex["evidence"])
    goals = summary.get("goals") or {}
    if goals:
        body.append("<h2>Goals reached: a shortest path to each</h2>")
    for name, goal in goals.items():
        body.append(f"<details><summary><b>{_h(name)}</b> reached after {goal['length']} step"
                    f"{'s' * (goal['length'] != 1)}</summary>")
        body += evidence_section(goal["evidence"], f"A path to {name}")
        body.append("</details>")
    if coverage is not None:
        body += coverage_section(coverage)
    return page(f"kcm explore: {summary.get('config')}", body)


def gate_page(report: Any) -> str:
    """The gate's report: one row per stage, every failure, the first explore counterexample as evidence."""
    body = ["<table><tr><th>stage</th><th>status</th><th>summary</th></tr>" + "".join(
        f"<tr><td>{_h(s.name)}</td><td class=\"{'bad' if s.status == 'failed' else 'ok'}\">{_h(s.status)}</td>"
        f"<td>{_h(s.summary)}</td></tr>" for s in report.stages) + "</table>"]
    failures = [c for c in report.cases() if c.status == "failed"]
    if failures:
        body.append("<h2>Failures</h2><table><tr><th>stage</th><th>case</th><th>where</th><th>what</th></tr>" + "".join(
            f"<tr><td>{_h(c.suite)}</td><td>{_h(c.name)}</td><td>{_h(c.file or '')}"
            f"{':' + str(c.line) if c.line else ''}</td><td>{_h(c.message)}</td></tr>" for c in failures) + "</table>")
    for s in report.stages:
        if isinstance(s.counterexample, dict) and "evidence" in s.counterexample:
            body += evidence_section(s.counterexample["evidence"])
    return page("kcm gate", body)


def traces_page(verdicts: list[tuple[str, Any]], coverage: Any = None) -> str:
    """check-trace's report: each trace's verdict with the failing event and state before it, and the coverage."""
    body = ["<table><tr><th>trace</th><th>verdict</th><th>line</th><th>rule broken</th></tr>" + "".join(
        f"<tr><td>{_h(p)}</td><td class=\"{'ok' if v.ok else 'bad'}\">"
        f"{'valid' if v.ok else 'malformed' if v.malformed else 'violation'}</td><td>{v.line or ''}</td>"
        f"<td>{_h(v.rule)}</td></tr>" for p, v in verdicts) + "</table>"]
    for p, v in verdicts:
        if not v.ok and not v.malformed:
            body += [f"<h2>{_h(p)}, line {v.line}</h2>", f"<p class=\"witness\">{_h(v.rule)}</p>",
                     f"<p>event: <code>{_value(v.event)}</code></p>",
                     f"<details open><summary>state before</summary><code>{_value(v.state_before)}</code></details>"]
    if coverage is not None:
        body += coverage_section(coverage.to_dict())
    return page("kcm check-trace", body)


def bugs_page(rows: list[dict[str, Any]], evidences: dict[str, dict[str, Any]]) -> str:
    """`kcm bugs`' report: the table of variants, each rediscovered bug's counterexample as evidence."""
    body = ["<table><tr><th>variant</th><th>property broken</th><th>steps</th><th>fixed</th></tr>" + "".join(
        f"<tr><td>{_h(r['name'])}</td><td>{_h(r['property'] or 'NOT FOUND')}</td><td>{r['trace_length'] or ''}</td>"
        f"<td class=\"{'ok' if r['fixed_clean'] else 'bad'}\">{'clean' if r['fixed_clean'] else 'not clean'}</td></tr>"
        for r in rows) + "</table>"]
    for name, ev in evidences.items():
        body += evidence_section(ev, f"{name}: counterexample to {ev['property']}")
    return page("kcm bugs", body)


__all__ = ["Message", "StepHead", "bugs_page", "coverage_section", "evidence_section", "exploration_page",
           "gate_page", "page", "sequence", "sequence_svg", "traces_page", "write"]
