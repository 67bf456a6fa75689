"""Run the registered rules over loaded objects; apply suppressions; sort the findings."""

from __future__ import annotations

from collections.abc import Iterable

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Finding, Rule, Severity
from gpuscale.audit.rules import RULES, resolve
from gpuscale.audit.structure import check_shape
from gpuscale.audit.values import BadValue
from gpuscale.errors import UserInputError

IGNORE_ANNOTATION = "gpuscale.io/ignore"  # comma-separated ids or names, or "all"


def suppressed_ids(obj: Manifest) -> set[str]:
    """Rule ids the object's `gpuscale.io/ignore` annotation switches off (renamed ids follow)."""
    raw = obj.annotations.get(IGNORE_ANNOTATION)
    if not raw:
        return set()
    out = set()
    for key in str(raw).split(","):
        key = key.strip()
        if key.lower() == "all":
            return {"*"}
        try:
            out.add(resolve(key).id)
        except KeyError:
            continue  # an unknown id in an annotation must not break the audit
    return out


def select_rules(enable: Iterable[str] = (), disable: Iterable[str] = ()) -> list[Rule]:
    """Rules to run: all, or only `enable`, minus `disable` (ids, old ids or names)."""
    chosen = [resolve(k) for k in enable] or list(RULES.values())
    dropped = {resolve(k).id for k in disable}
    return [r for r in chosen if r.id not in dropped]


def audit_objects(objects: list[Manifest], rules: list[Rule] | None = None,
                  min_severity: Severity = Severity.INFO) -> list[Finding]:
    """Every finding of `rules` (default: all) on `objects`, sorted by file, line, rule."""
    rules = list(RULES.values()) if rules is None else rules
    findings: set[Finding] = set()
    read_kinds = {kind for rule in rules for kind in rule.kinds}
    for obj in objects:
        if obj.kind in read_kinds:
            check_shape(obj)  # a misshapen field is bad input, not a rule's traceback
    ctx = AuditContext(objects)
    for obj in objects:
        off = suppressed_ids(obj)
        if "*" in off:
            continue
        for rule in rules:
            if obj.kind in rule.kinds and rule.id not in off and rule.severity >= min_severity:
                findings.update(_run_rule(rule, obj, ctx))
    return sorted(findings)


def _run_rule(rule: Rule, obj: Manifest, ctx: AuditContext) -> list[Finding]:
    """One rule on one object. A value the rule cannot read (a field of the right shape holding
    a wrong value, e.g. a budget of "many" or a quantity of "10%") is bad input, said in one
    line: the readers in audit/values.py raise `BadValue`. Anything else a rule raises is a bug
    in the rule and propagates with its traceback."""
    try:
        return list(rule.run(obj, ctx))
    except BadValue as exc:
        raise UserInputError(f"line {obj.line}: {obj.ref}: {rule.id} ({rule.name}) cannot read "
                             f"this object: {exc}", source=obj.source) from None


def exit_code(findings: list[Finding], fail_on: Severity) -> int:
    return 1 if any(f.severity >= fail_on for f in findings) else 0
