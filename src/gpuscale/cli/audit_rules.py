"""`gpuscale audit --list-rules` and `--explain RULE`: the rule metadata, at the terminal."""

from __future__ import annotations

import json
import textwrap

from gpuscale.cli.options import json_text_as
from gpuscale.errors import UserInputError


def _rule_dict(rule) -> dict:
    from gpuscale.audit.output import help_uri

    return {"id": rule.id, "name": rule.name, "severity": rule.severity.label,
            "family": rule.family, "kinds": list(rule.kinds), "summary": rule.summary,
            "why": rule.why, "fix": rule.fix, "references": list(rule.references),
            "help_uri": help_uri(rule.id)}


def rules_listing(fmt: str) -> str:
    from gpuscale.audit.rules import RULES

    rules = [RULES[k] for k in sorted(RULES)]
    if fmt in ("json", "yaml"):
        return json_text_as(fmt, json.dumps([_rule_dict(r) for r in rules], indent=2) + "\n")
    width = max(len(r.name) for r in rules)
    lines = [f"{r.id}  {r.severity.label:<7}  {r.name:<{width}}  {r.summary}" for r in rules]
    return "\n".join(lines) + f"\n{len(rules)} rules; `gpuscale audit --explain ID` for one\n"


def explain(key: str, fmt: str) -> str:
    from gpuscale.audit.rules import resolve

    try:
        rule = resolve(key)
    except KeyError as exc:
        raise UserInputError(f"--explain: {exc.args[0]}") from None
    data = _rule_dict(rule)
    if fmt in ("json", "yaml"):
        return json_text_as(fmt, json.dumps(data, indent=2) + "\n")

    def para(title: str, text: str) -> list[str]:
        return [title, textwrap.fill(text, 96, initial_indent="  ", subsequent_indent="  "), ""]

    lines = [f"{rule.id} {rule.name} ({rule.severity.label}; {', '.join(rule.kinds)})", ""]
    lines += para("What it flags", rule.summary) + para("Why it matters", rule.why)
    lines += para("Fix", rule.fix)
    if rule.references:
        lines += ["References"] + [f"  - {r}" for r in rule.references] + [""]
    lines.append(f"Docs: {data['help_uri']}")
    return "\n".join(lines) + "\n"
