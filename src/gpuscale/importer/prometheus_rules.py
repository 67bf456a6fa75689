"""PrometheusRule objects (monitoring.coreos.com/v1) -> the scenario's `metrics.rule_groups`.

Recording rules (`record:` + `expr:`) that a scaler's query reads, directly or through other
rules, are simulated: evaluated at their group's `interval` (Prometheus' `evaluation_interval`
when unset) and stored as series the queries can read. Rules no scaler reads (a dashboard's
recordings) and alerting rules (`alert:`) change no replica count: they are checked for syntax
and skipped with a note, so a rule over a series the simulated cluster does not expose (say
kube-state-metrics' resource requests) does not stop the import.
"""

from __future__ import annotations

import math

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.errors import UserInputError
from gpuscale.importer.promql import QueryContext, import_query
from gpuscale.metrics.prometheus_config import checked_promql
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.parse import metric_names, parse
from gpuscale.units import parse_duration_s


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def recorded_names(objects: list[Manifest]) -> frozenset[str]:
    """Every `record:` name in the bundle's PrometheusRules."""
    out = set()
    for obj in objects:
        if obj.kind != "PrometheusRule":
            continue
        for group in obj.get("spec", "groups", default=[]) or []:
            for rule in (group.get("rules") or []) if isinstance(group, dict) else []:
                if isinstance(rule, dict) and isinstance(rule.get("record"), str):
                    out.add(rule["record"])
    return frozenset(out)


def names_read(queries: list[str]) -> set[str] | None:
    """The metric names `queries` read; None when one selects names by a regex (it may read
    any rule)."""
    out: set[str] = set()
    for query in queries:
        try:
            names = metric_names(parse(query))
        except PromQLError:  # a bad query is refused where it is imported
            continue
        if names is None:
            return None
        out |= names
    return out


def rules_read(objects: list[Manifest], read: set[str] | None) -> set[str] | None:
    """The `record:` names a scaler reads: those `read` names, and what their rules read in
    turn (a rule over another rule). None: every rule (a query matched names by regex)."""
    if read is None:
        return None
    exprs: dict[str, list[str]] = {}
    for obj in objects:
        if obj.kind != "PrometheusRule":
            continue
        for group in obj.get("spec", "groups", default=[]) or []:
            for rule in (group.get("rules") or []) if isinstance(group, dict) else []:
                if isinstance(rule, dict) and isinstance(rule.get("record"), str):
                    exprs.setdefault(rule["record"], []).append(str(rule.get("expr", "")))
    needed, frontier = set(), set(read)
    while frontier:
        name = frontier.pop()
        if name in needed or name not in exprs:
            continue
        needed.add(name)
        more = names_read(exprs[name])
        if more is None:
            return None
        frontier |= more
    return needed


def rule_groups(objects: list[Manifest], ctx: QueryContext, notes: list[str],
                read: set[str] | None = None) -> list[dict]:
    """The recording-rule groups of every PrometheusRule, in bundle order: the rules in `read`
    (`rules_read`; None: all of them)."""
    out: list[dict] = []
    for obj in objects:
        if obj.kind != "PrometheusRule":
            continue
        groups = obj.get("spec", "groups")
        if not isinstance(groups, list):
            raise _fail(obj, ("spec", "groups"), "expected a list of rule groups")
        for g, group in enumerate(groups):
            path = ("spec", "groups", g)
            if not isinstance(group, dict) or not isinstance(group.get("name"), str):
                raise _fail(obj, path, "expected a rule group with a name")
            rules = _rules(obj, path, group, ctx, notes, read)
            if not rules:
                continue
            entry: dict = {"name": group["name"], "rules": rules}
            if group.get("interval") is not None:
                try:
                    interval_s = parse_duration_s(str(group["interval"]))
                except ValueError:
                    interval_s = math.nan
                if not 0 < interval_s < math.inf:
                    raise _fail(obj, path + ("interval",), "expected a duration such as 30s, "
                                f"got {group['interval']!r}")
                entry["interval_s"] = interval_s
            out.append(entry)
    return out


def _rules(obj: Manifest, path: tuple, group: dict, ctx: QueryContext,
           notes: list[str], read: set[str] | None) -> list[dict]:
    rules = group.get("rules")
    if not isinstance(rules, list):
        raise _fail(obj, path + ("rules",), "expected a list of rules")
    out = []
    for r, rule in enumerate(rules):
        here = path + ("rules", r)
        if not isinstance(rule, dict):
            raise _fail(obj, here, "expected a rule mapping")
        if "alert" in rule:
            notes.append(f"{obj.ref}: alerting rule {rule['alert']!r} not simulated (it scales "
                         "nothing)")
            continue
        if not isinstance(rule.get("record"), str):
            raise _fail(obj, here, "expected `record:` (a recording rule) or `alert:`")
        if read is not None and rule["record"] not in read:
            try:
                checked_promql(rule.get("expr", ""))
            except ValueError as exc:
                raise _fail(obj, here + ("expr",), f"cannot be evaluated: {exc}") from None
            notes.append(f"{obj.ref}: recording rule {rule['record']!r} is read by no scaler: "
                         "not simulated")
            continue
        expr = import_query(rule.get("expr"), ctx, source=obj.source,
                            field_path=format_path(here + ("expr",)), notes=notes)
        labels = rule.get("labels") or {}
        if not isinstance(labels, dict):
            raise _fail(obj, here + ("labels",), "expected a mapping of labels")
        out.append({"record": rule["record"], "expr": expr,
                    "labels": {str(k): str(v) for k, v in labels.items()}})
    return out
