"""Render findings: human text grouped by object, JSON, and SARIF 2.1.0 for code scanning.

Every format also says what was not audited: the kinds no rule reads (`not_read`, kind ->
objects) and the inputs that could not be read (`errors`, one line each naming the file), so
that "no findings" never stands for objects or files gpuscale did not understand.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from pathlib import PurePath

from gpuscale import __version__
from gpuscale.audit.model import Finding, Rule, Severity

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {Severity.INFO: "note", Severity.WARNING: "warning", Severity.ERROR: "error"}
DOCS_BASE = "docs/rules"
# SARIF `helpUri` must be an absolute URI (GitHub code scanning rejects a relative one). The
# rule pages live in the repository's docs/rules/; GPUSCALE_DOCS_URL points a fork elsewhere.
DOCS_URL = "https://github.com/gpuscale/gpuscale/blob/main/docs/rules"


def help_uri(rule_id: str) -> str:
    base = os.environ.get("GPUSCALE_DOCS_URL", DOCS_URL).rstrip("/")
    return f"{base}/{rule_id}.md"


def _fix_of(rule_id: str) -> str | None:
    from gpuscale.audit.rules import RULES

    rule = RULES.get(rule_id)
    return rule.fix if rule is not None else None


def _not_read_text(not_read: dict[str, int]) -> str:
    kinds = ", ".join(f"{kind} ({n})" for kind, n in not_read.items())
    return f"not audited (no rule reads these kinds): {kinds}"


def _unaudited_lines(not_read: dict[str, int] | None, errors: Sequence[Exception]) -> list[str]:
    lines = [f"error: {e}" for e in errors]
    if not_read:
        lines.append(_not_read_text(not_read))
    return [textwrap.fill(line, 100, subsequent_indent="  ", break_on_hyphens=False)
            for line in lines]


def render_text(findings: list[Finding], num_objects: int,
                not_read: dict[str, int] | None = None,
                errors: Sequence[Exception] = ()) -> str:
    tail = _unaudited_lines(not_read, errors)
    unread = f"; {len(errors)} input error{'s' if len(errors) != 1 else ''}" if errors else ""
    if not findings:
        return "\n".join(
            [*tail, f"gpuscale audit: {num_objects} objects, no findings{unread}"]) + "\n"
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        groups[(f.source, f.object_ref)].append(f)
    lines = []
    for (source, ref), items in groups.items():
        lines.append(f"{ref}  ({source})")
        for f in items:
            lines.append(f"  {f.source}:{f.line}:{f.column} {f.severity.label} {f.rule_id} "
                         f"{f.rule_name}")
            lines.append(f"      at {f.yaml_path or '(object)'}: {f.message}")
            if (fix := _fix_of(f.rule_id)) is not None:
                lines.append(f"      fix: {fix}")
        lines.append("")
    counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    summary = ", ".join(f"{n} {s.label}{'s' if n != 1 else ''}"
                        for s, n in sorted(counts.items(), reverse=True) if n)
    noun = "finding" if len(findings) == 1 else "findings"
    lines += tail
    lines.append(f"gpuscale audit: {num_objects} objects, {len(findings)} {noun} ({summary})"
                 f"{unread}")
    return "\n".join(lines) + "\n"


def _error_dict(exc: Exception) -> dict:
    return {"source": getattr(exc, "source", None), "message": str(exc)}


def render_json(findings: list[Finding], num_objects: int,
                not_read: dict[str, int] | None = None,
                errors: Sequence[Exception] = ()) -> str:
    body = {"objects": num_objects,
            "findings": [dict(f.as_dict(), fix=_fix_of(f.rule_id), help_uri=help_uri(f.rule_id))
                         for f in findings],
            "not_read": dict(not_read or {}),
            "errors": [_error_dict(e) for e in errors]}
    return json.dumps(body, indent=2) + "\n"


def _uri(source: str) -> str:
    return "stdin" if source == "<stdin>" else PurePath(source).as_posix()


def _notifications(not_read: dict[str, int] | None, errors: Sequence[Exception]) -> list[dict]:
    """SARIF toolExecutionNotifications: each unreadable input (error), the kinds not read
    (note)."""
    out: list[dict] = []
    for exc in errors:
        note: dict = {"level": "error", "message": {"text": str(exc)}}
        source = getattr(exc, "source", None)
        if source:
            note["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": _uri(source)}}}]
        out.append(note)
    if not_read:
        out.append({"level": "note", "message": {"text": _not_read_text(not_read)}})
    return out


def render_sarif(findings: list[Finding], rules: list[Rule],
                 not_read: dict[str, int] | None = None,
                 errors: Sequence[Exception] = ()) -> str:
    """One run; rules carry their metadata; results point at file, line and column; the
    invocation says what could not be read."""
    index = {rule.id: i for i, rule in enumerate(rules)}
    descriptors = [{
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": rule.fix, "markdown": f"**Fix.** {rule.fix}"},
        "helpUri": help_uri(rule.id),
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
        "properties": {"family": rule.family},
    } for rule in rules]
    results = []
    for f in findings:
        result: dict[str, object] = {
            "ruleId": f.rule_id,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.source)},
                    "region": {"startLine": f.line, "startColumn": f.column},
                },
                "logicalLocations": [{"fullyQualifiedName": f"{f.object_ref}:{f.yaml_path}",
                                      "kind": "object"}],
            }],
            "partialFingerprints": {"gpuscale/v1": f"{f.rule_id}:{f.object_ref}:{f.yaml_path}"},
        }
        if f.rule_id in index:
            result["ruleIndex"] = index[f.rule_id]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gpuscale", "version": __version__,
                                "informationUri": "https://github.com/gpuscale/gpuscale",
                                "rules": descriptors}},
            "results": results,
            "invocations": [{"executionSuccessful": not errors,
                             "toolExecutionNotifications": _notifications(not_read, errors)}],
        }],
    }
    return json.dumps(log, indent=2) + "\n"
