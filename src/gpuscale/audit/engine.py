"""Run the registered rules over loaded objects; apply suppressions; sort the findings."""

from __future__ import annotations

from collections.abc import Iterable

from gpuscale.audit.context import SCALER_KINDS, WORKLOAD_KINDS, AuditContext
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
                  min_severity: Severity = Severity.INFO,
                  errors: list[UserInputError] | None = None) -> list[Finding]:
    """Every finding of `rules` (default: all) on `objects`, sorted by file, line, rule.

    A misshapen object, or a value a rule cannot read, is bad input: the first is raised, or,
    with `errors` given, each is recorded there and that object is left out of the audit (the
    other objects, also of the same file, are audited)."""
    rules = list(RULES.values()) if rules is None else rules
    findings: set[Finding] = set()
    read_kinds = {kind for rule in rules for kind in rule.kinds}
    well_shaped = []
    for obj in objects:
        try:
            if obj.kind in read_kinds:
                check_shape(obj)  # a misshapen field is bad input, not a rule's traceback
            well_shaped.append(obj)
        except UserInputError as exc:
            if errors is None:
                raise
            errors.append(exc)
    ctx = AuditContext(well_shaped)
    for obj in well_shaped:
        off = suppressed_ids(obj)
        if "*" in off:
            continue
        try:
            found = [f for rule in rules
                     if obj.kind in rule.kinds and rule.id not in off
                     and rule.severity >= min_severity for f in _run_rule(rule, obj, ctx)]
        except UserInputError as exc:
            if errors is None:
                raise
            errors.append(exc)
            continue
        findings.update(found)
    return sorted(findings)


# Kinds no rule runs on but that rules look up (a Deployment's PDB, a scaler's target, the
# NodePool a pod can land on, a PriorityClass's value): they are read, not "not audited".
CONTEXT_KINDS = frozenset({"PodDisruptionBudget", "PriorityClass", "Queue", "NodePool",
                           "EC2NodeClass", *SCALER_KINDS, *WORKLOAD_KINDS})


def kinds_not_read(objects: list[Manifest], rules: list[Rule]) -> dict[str, int]:
    """Kind -> count of the objects no rule reads (said in every output, so that "no findings"
    is never read as a clean audit of objects gpuscale does not understand)."""
    read = CONTEXT_KINDS | {kind for rule in rules for kind in rule.kinds}
    counts: dict[str, int] = {}
    for obj in objects:
        if obj.kind not in read:
            counts[obj.kind] = counts.get(obj.kind, 0) + 1
    return dict(sorted(counts.items()))


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
