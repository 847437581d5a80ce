"""Reports CI systems ingest: JUnit XML, SARIF 2.1.0 and GitHub Actions annotations, from one list of cases.

`kcm gate`, `kcm check-trace` and `kcm check-log` turn what they judged into `Case`s (one per scenario, invariant,
property, trace or log); each writer here renders the same cases. A failed case with a file (and a line) is an
annotation on that line; SARIF gets one result per failure with its rule id.

SARIF is written for GitHub code scanning, which refuses a whole upload when one result has no location: every
result has a physical location (the callers give every case a file: the scenario, trace, log, config or folder;
a case without one is placed on the repository itself), its URI relative to the repository (`%SRCROOT%`, see
`source_root`) or to the specs folder shipped with kcm (`KCMSPECS`), both described in `originalUriBaseIds`. The
driver's rules are the catalogue's property ids with their meaning (`catalogue_rules`), kcm's own rules about its
inputs (`KCM_RULES`), and any other id a case names with its `rule_text` (the trace oracle's trace-only rules).

Functions other commands reuse: `junit_xml`, `sarif`, `github`, `write_outputs`, `add_arguments`, and
`catalogue_rules`, `source_root`, `artifact_location` (one SARIF artifact location for a file).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kcm import PROJECT_URL, __version__

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT, SPECSROOT = "%SRCROOT%", "KCMSPECS"
# kcm's own rules, about its inputs rather than Kafka's: id -> the rule in words.
KCM_RULES: dict[str, str] = {
    "expectation": "A scenario or trace is judged as its file or manifest says it must be (its expect, expect_error "
                   "or expect_violation; the manifest's verdict, line and rule).",
    "invalid-scenario": "A scenario file follows the scenario contract (specs/scenario.schema.json) and names only "
                        "what its config holds.",
    "malformed-trace": "Every line of a trace is one JSON event as specs/trace.schema.json describes, and a trace "
                       "holds at least one event.",
    "unreadable": "Every file a check is given can be read.",
    "empty-input": "A folder a check is given holds something to check.",
}


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
    evidence: Any = field(default=None, repr=False)  # a counterexample's (checkers/core/evidence.py), for its diagram


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


def catalogue_rules() -> dict[str, tuple[str, str]]:
    """Every catalogue property id -> (its meaning in one sentence, the rule in full)."""
    from kcm.properties.catalogue import CATALOGUE

    return {p.name: (p.rule.split("\n")[0].strip(), " ".join(p.rule.split())) for p in CATALOGUE}


def source_root(start: Path | None = None) -> Path:
    """The repository SARIF's URIs are relative to: the nearest folder holding `.git` from `start` (default: the
    working folder) upwards, else `start` itself."""
    here = (start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), here)


def _specs_root() -> Path:
    return Path(str(resources.files("kcm.specs"))).resolve()


def artifact_location(file: str, root: Path) -> dict[str, Any]:
    """A SARIF artifactLocation for file: relative to root (`%SRCROOT%`), else to kcm's shipped specs folder
    (`KCMSPECS`), else (a file outside both) its absolute file URI."""
    path = Path(os.path.abspath(file))
    for base, folder in ((SRCROOT, root), (SPECSROOT, _specs_root())):
        if path.is_relative_to(folder):
            return {"uri": quote(path.relative_to(folder).as_posix()), "uriBaseId": base}
    return {"uri": path.as_uri()}


def _rule(rule_id: str, short: str, full: str, kind: str) -> dict[str, Any]:
    return {"id": rule_id, "name": rule_id, "shortDescription": {"text": short}, "fullDescription": {"text": full},
            "help": {"text": f"{full} ({kind}; {PROJECT_URL})",
                     "markdown": f"**{rule_id}** ({kind}): {full}\n\nSee [kcm]({PROJECT_URL})."},
            "helpUri": PROJECT_URL, "defaultConfiguration": {"level": "error"}}


def sarif(cases: Iterable[Case], root: Path | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log GitHub code scanning accepts: one run of kcm whose rules are the catalogue's properties and
    kcm's input rules (plus any other id a failure names), one error result per failed case, each with a location
    (its file, else root itself) relative to `root` (default: `source_root()`)."""
    root = (root or source_root()).resolve()
    failed = [c for c in cases if c.status == FAILED]
    rules = [_rule(i, short, full, "a property of kcm's catalogue") for i, (short, full) in catalogue_rules().items()]
    rules += [_rule(i, text, text, "a rule of kcm's inputs") for i, text in KCM_RULES.items()]
    index = {r["id"]: n for n, r in enumerate(rules)}
    results = []
    for c in failed:
        rule_id = c.rule or "expectation"
        if rule_id not in index:  # an id outside the catalogue (the trace oracle's trace-only rules)
            index[rule_id] = len(rules)
            text = c.rule_text or rule_id
            rules.append(_rule(rule_id, text, text, "a rule of kcm's oracles"))
        location: dict[str, Any] = {"artifactLocation": artifact_location(c.file or str(root), root)}
        if c.line:
            location["region"] = {"startLine": c.line}
        results.append({"ruleId": rule_id, "ruleIndex": index[rule_id], "level": "error",
                        "message": {"text": f"{c.name}: {c.message}"}, "locations": [{"physicalLocation": location}]})
    bases = {SRCROOT: {"uri": root.as_uri() + "/", "description": {"text": "the repository kcm checked"}}}
    if any(r["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId") == SPECSROOT for r in results):
        bases[SPECSROOT] = {"uri": _specs_root().as_uri() + "/",
                            "description": {"text": "the specs folder installed with kcm (configs, scenarios)"}}
    driver = {"name": "kcm", "fullName": f"kcm {__version__}: a checked model of Kafka's ZooKeeper-mode controller",
              "version": __version__, "semanticVersion": __version__, "informationUri": PROJECT_URL, "rules": rules}
    run = {"tool": {"driver": driver}, "originalUriBaseIds": bases, "results": results}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


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


def write_outputs(cases: list[Case], junit: str | None, sarif_path: str | None, annotate: bool,
                  markdown: str | None = None, title: str = "kcm") -> None:
    """Write the files asked for and print the annotations; OSError when a file cannot be written. A Markdown
    summary of the cases titled `title` is appended to `markdown` (the gate writes its own, by stage)."""
    if markdown:
        from kcm.checkers.reports import markdown_report  # which imports nothing of this module: no cycle

        markdown_report.append(markdown, markdown_report.cases_summary(title, cases))
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
    """Declare --junit-xml, --sarif, --github and --markdown on a command's parser."""
    p.add_argument("--junit-xml", metavar="FILE", help="also write the outcome as JUnit XML")
    p.add_argument("--sarif", metavar="FILE", help="also write the failures as SARIF 2.1.0 (for GitHub code scanning)")
    p.add_argument("--github", action="store_true", help="also print GitHub Actions ::error annotations")
    add_markdown_argument(p)


def add_markdown_argument(p: Any) -> None:
    """Declare --markdown on a command's parser."""
    p.add_argument("--markdown", "--markdown-summary", dest="markdown", metavar="FILE",
                   help="also append a Markdown summary, each counterexample drawn as a Mermaid sequence diagram "
                        "(e.g. --markdown \"$GITHUB_STEP_SUMMARY\")")


__all__ = ["KCM_RULES", "Case", "add_arguments", "add_markdown_argument", "artifact_location", "catalogue_rules",
           "github", "junit_xml", "sarif", "source_root", "write_outputs"]
