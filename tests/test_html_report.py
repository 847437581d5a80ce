"""The HTML report: well-formed, self-contained, and rendered by a real browser (headless Chromium)."""

import os
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs, coverage
from kcm.checkers.reports import html_report

VOID = {"meta", "br", "hr", "img", "input", "link", "path", "line", "rect"}


class Balance(HTMLParser):
    """Fails on a close tag that does not close the innermost open element, or on anything left open."""

    def __init__(self):
        super().__init__()
        self.stack, self.problems, self.tags = [], [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for name, value in attrs:
            if name in ("src", "href") and value and "://" in value and not value.startswith("http://www.w3.org"):
                self.problems.append(f"external resource {value}")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def unclean_page():
    model = BoundedSystem(load_config("unclean"))
    found = bfs.explore(model, coverage=True)
    summary = found.to_json(model)
    summary["config"] = "unclean"
    return html_report.exploration_page(summary, coverage.of_run(model, found.tally).to_dict())


def test_the_report_is_well_formed_and_self_contained():
    html = unclean_page()
    check = Balance()
    check.feed(html)
    check.close()
    assert not check.problems and not check.stack, (check.problems, check.stack)
    assert {"svg", "line", "table", "details"} <= check.tags and "<script" not in html
    assert "Every record acknowledged with acks=all is in the log of every later leader." in html
    assert "LeaderAndIsr t-0 leader=1 LE=2 isr=[1] CE=2" in html  # an arrow, with its epochs
    assert "broker_fail: session gone" in html and "not covered" in html


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_headless_chromium_renders_the_sequence_diagram(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: ci/setup.sh installs it")
        pytest.skip("chromium is not installed (ci/setup.sh installs it)")
    page = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "report", "--config", "unclean", "-o", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert "<svg" in dom.stdout and "broker_fail: session gone" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, "--window-size=1200,900", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert _png_size(data) == (1200, 900) and len(data) > 20_000  # a blank page compresses to a few KB


def test_gate_and_check_trace_write_their_reports(tmp_path):
    traces = Path(__file__).resolve().parent.parent / "specs" / "traces"
    page = tmp_path / "t.html"
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "check-trace", str(traces / "valid_create_online.jsonl"),
                           str(traces / "invalid_hw_above_leo.jsonl"), "--html", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    html = page.read_text()
    assert "invalid_hw_above_leo.jsonl, line 22" in html and "Transition coverage, rules kafka" in html
    gate = tmp_path / "g.html"
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "gate", "--only", "explore", "--config", "unclean",
                           "--html", str(gate)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    html = gate.read_text()
    assert "Counterexample to AckedRecordsSurvive" in html and "<svg" in html
    for text in (page.read_text(), html):
        check = Balance()
        check.feed(text)
        check.close()
        assert not check.problems and not check.stack


def test_bugs_writes_the_rediscovered_counterexample(tmp_path):
    page = tmp_path / "b.html"
    done = subprocess.run([sys.executable, "-m", "kcm.cli", "bugs", "KAFKA-1120", "--html", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "KAFKA-1120: counterexample to LivenessView" in html and "broker_bounce: registers" in html


def test_the_violating_step_is_marked_and_the_clients_acks_are_drawn():
    html = unclean_page()
    svg = html[html.index("<svg"):html.index("</svg>")]
    # The witness's step: its header on the diagram and in the list of steps says what breaks there.
    assert "AckedRecordsSurvive violated here" in svg and "step 3:" in svg
    assert "step 3</b> <code>" in html and "&larr; AckedRecordsSurvive violated here" in html
    # acks=all: the leader acknowledges when its high watermark passes the record (the ISR shrink here).
    assert "ack t-0 offset 0 (acks=all)" in svg
    model = BoundedSystem(load_config("unclean"))
    evidence = bfs.explore(model).to_json(model)["counterexamples"]["AckedRecordsSurvive"]["evidence"]
    steps = [row for row in html_report.sequence(evidence)[1] if isinstance(row, html_report.StepHead)]
    assert [s.mark for s in steps] == ["", "", "AckedRecordsSurvive violated here"]


def test_an_acks_1_produce_is_acknowledged_at_once():
    step = {"step": 1, "action": {"op": "produce", "partition": "t-0", "records": 1, "acks": 1}, "requests": [],
            "diff": {}, "_leader": {"t-0": 2}}
    assert ("broker 2", "client", "ack t-0 (acks=1)") in html_report._arrows(step, None)


def test_each_reached_goal_has_a_path_that_reaches_it():
    model = BoundedSystem(load_config("tiny"))
    summary = bfs.explore(model).to_json(model)
    reached = {name for name, verdict in summary["verdicts"].items() if verdict == "reached"}
    assert reached and set(summary["goals"]) == reached
    for name, goal in summary["goals"].items():
        ev = goal["evidence"]
        assert ev["property"] == name and len(ev["steps"]) == goal["length"]
        assert ev["witness"]["step"] == ev["steps"][-1]["step"] if ev["steps"] else ev["witness"]["step"] is None
        assert goal["scenario"]["steps"][-goal["length"]:] == [s["action"] for s in ev["steps"]] or not ev["steps"]
    summary["config"] = "tiny"
    html = html_report.exploration_page(summary)
    for name in reached:
        assert f"<b>{name}</b> reached after" in html and f"{name} reached here" in html
