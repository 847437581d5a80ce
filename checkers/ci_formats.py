"""Reports CI systems ingest: JUnit XML, SARIF 2.1.0 and GitHub Actions annotations, from one list of cases.

`kcm gate`, `kcm check-trace` and `kcm check-log` turn what they judged into `Case`s (one per scenario, invariant,
property, trace or log); each writer here renders the same cases. A failed case with a file (and a line) is an
annotation on that line; SARIF gets one result per failure with its rule id.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kcm import __version__

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@dataclass
class Case:
    """One judged item: a scenario, an invariant, a property, a trace or a log, with where it failed."""

    suite: str  # the gate stage or the command
    name: str
    status: str = PASSED
    message: str = ""
    rule: str = ""  # a rule id (SARIF's ruleId); "" for a case without a named rule
    rule_text: str = ""  # the rule in words
    file: str | None = None
    line: int | None = None
    seconds: float = 0.0
    detail: Any = field(default=None, repr=False)  # JSON-ready data for the failure (JUnit's failure text)


def junit_xml(cases: Iterable[Case]) -> str:
    """JUnit XML: one <testsuite> per suite, one <testcase> per case, <failure> or <skipped> where due."""
    suites: dict[str, list[Case]] = {}
    for c in cases:
        suites.setdefault(c.suite, []).append(c)
    root = ET.Element("testsuites", name="kcm", tests=str(sum(len(v) for v in suites.values())),
                      failures=str(sum(c.status == FAILED for v in suites.values() for c in v)))
    for name, members in suites.items():
        suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(members)),
                              failures=str(sum(c.status == FAILED for c in members)), errors="0",
                              skipped=str(sum(c.status == SKIPPED for c in members)),
                              time=f"{sum(c.seconds for c in members):.3f}")
        for c in members:
            attrs = {"classname": f"kcm.{name}", "name": c.name, "time": f"{c.seconds:.3f}"}
            if c.file:
                attrs["file"] = c.file
            if c.line:
                attrs["line"] = str(c.line)
            case = ET.SubElement(suite, "testcase", attrs)
            if c.status == FAILED:
                failure = ET.SubElement(case, "failure", message=c.message, type=c.rule or "failure")
                failure.text = (c.message + ("\n" + json.dumps(c.detail, indent=1, sort_keys=True)
                                             if c.detail is not None else ""))
            elif c.status == SKIPPED:
                ET.SubElement(case, "skipped", message=c.message or "skipped")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def sarif(cases: Iterable[Case]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run of kcm, a rule per rule id seen, one error result per failed case."""
    failed = [c for c in cases if c.status == FAILED]
    rules: dict[str, str] = {}
    for c in failed:
        rules.setdefault(c.rule or c.suite, c.rule_text or c.suite)
    ids = list(rules)
    results = []
    for c in failed:
        result: dict[str, Any] = {"ruleId": c.rule or c.suite, "ruleIndex": ids.index(c.rule or c.suite),
                                  "level": "error", "message": {"text": f"{c.name}: {c.message}"}}
        if c.file:
            location: dict[str, Any] = {"artifactLocation": {"uri": c.file}}
            if c.line:
                location["region"] = {"startLine": c.line}
            result["locations"] = [{"physicalLocation": location}]
        results.append(result)
    driver = {"name": "kcm", "version": __version__, "semanticVersion": __version__,
              "informationUri": "https://kafka.apache.org/",
              "rules": [{"id": r, "shortDescription": {"text": text}} for r, text in rules.items()]}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}


def _escape(text: str, prop: bool = False) -> str:
    """GitHub's workflow-command escaping (data, or a property value, which also escapes ',' and ':')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github(cases: Iterable[Case]) -> list[str]:
    """GitHub Actions annotations: an ::error line per failed case, on its file and line when known."""
    out = []
    for c in cases:
        if c.status != FAILED:
            continue
        props = []
        if c.file:
            props.append(f"file={_escape(c.file, True)}")
            if c.line:
                props.append(f"line={c.line}")
        props.append(f"title={_escape(f'kcm {c.suite}: {c.name}', True)}")
        out.append(f"::error {','.join(props)}::{_escape(c.message)}")
    return out


def write_outputs(cases: list[Case], junit: str | None, sarif_path: str | None, annotate: bool) -> None:
    """Write the files asked for and print the annotations (OSError when a file cannot be written)."""
    if junit:
        with open(junit, "w", encoding="utf-8") as fh:
            fh.write(junit_xml(cases))
    if sarif_path:
        with open(sarif_path, "w", encoding="utf-8") as fh:
            json.dump(sarif(cases), fh, indent=1)
            fh.write("\n")
    if annotate:
        for line in github(cases):
            print(line)


def add_arguments(p: Any) -> None:
    """Declare --junit-xml, --sarif and --github on a command's parser."""
    p.add_argument("--junit-xml", metavar="FILE", help="also write the outcome as JUnit XML")
    p.add_argument("--sarif", metavar="FILE", help="also write the failures as SARIF 2.1.0")
    p.add_argument("--github", action="store_true", help="also print GitHub Actions ::error annotations")


__all__ = ["Case", "github", "junit_xml", "sarif", "write_outputs"]
