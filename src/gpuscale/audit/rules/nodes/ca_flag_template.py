"""Template: a Cluster Autoscaler duration flag set below what GPU nodes need (per-instance
flag)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.workloads import containers, pod_templates
from gpuscale.units import format_duration, parse_duration_s


def ca_flags(obj: Manifest) -> Iterator[tuple[tuple, str, str]]:
    """(path, flag, value) of each `--flag=value` word of a cluster-autoscaler container."""
    for tmpl in pod_templates(obj):
        for i, container in enumerate(containers(tmpl.template)):
            fields = {f: [str(w) for w in container.get(f) or []] for f in ("command", "args")}
            words = (
                " ".join(fields["command"] + fields["args"]) + " " + str(container.get("image", ""))
            )
            if "cluster-autoscaler" not in words:
                continue
            for field, items in fields.items():
                for j, word in enumerate(items):
                    if word.startswith("--") and "=" in word:
                        flag, value = word[2:].split("=", 1)
                        yield tmpl.spec_at("containers", i, field, j), flag, value


def ca_flag_rule(*, id: str, name: str, flag: str, minimum_s: float, summary: str, why: str,
                 fix: str, references: tuple[str, ...]) -> Rule:
    def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
        for path, found, value in ca_flags(obj):
            if found != flag:
                continue
            try:
                seconds = parse_duration_s(value)
            except ValueError:
                continue
            if seconds < minimum_s:
                yield Hit(path, {"flag": flag, "value": value, "min": format_duration(minimum_s)})

    return Rule(
        id=id,
        name=name,
        severity=Severity.WARNING,
        kinds=("Deployment",),
        family="nodes",
        summary=summary,
        message="cluster-autoscaler --{flag}={value} is below the {min} GPU nodes need",
        why=why,
        fix=fix,
        references=references,
        check=check,
    )
