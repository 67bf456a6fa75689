"""`gpuscale audit`: report GPU-autoscaling traps in Kubernetes manifests or a live cluster."""

from __future__ import annotations

import click

from gpuscale.audit import (
    DEFAULT_MAX_BYTES,
    Severity,
    audit_objects,
    exit_code,
    load_inputs,
    select_rules,
)
from gpuscale.audit.engine import kinds_not_read
from gpuscale.audit.loader import why_no_objects
from gpuscale.audit.output import render_json, render_sarif, render_text
from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.options import MAX_INPUT_BYTES, json_text_as, output_option
from gpuscale.errors import UserInputError

# What `--cluster` lists (read-only); the same kinds the file loader understands.
AUDIT_KINDS = ("Deployment", "StatefulSet", "Job", "LeaderWorkerSet", "RayCluster",
               "HorizontalPodAutoscaler", "ScaledObject", "NodePool", "EC2NodeClass", "Queue",
               "PodGroup", "PodDisruptionBudget", "PrometheusRule", "PriorityClass",
               "PodAutoscaler", "LLMInferenceService")


class SeverityType(click.ParamType):
    name = "severity"

    def convert(self, value, param, ctx):
        try:
            return value if isinstance(value, Severity) else Severity.parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@click.command(name="audit")
@catalog_option
@click.argument("inputs", nargs=-1)
@click.option(
    "--cluster", is_flag=True, help="Read objects from the current kubeconfig context (read-only)."
)
@click.option("--context", "kube_context", default=None, help="kubeconfig context for --cluster.")
@click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="kubeconfig file for --cluster (default: $KUBECONFIG, ~/.kube/config, "
                   "else in-cluster config).")
@click.option("-n", "--namespace", default=None,
              help="--cluster: list namespaced objects in this namespace only (default: all).")
@output_option("sarif", help_text="table (text) for people; json, yaml or sarif for machines.")
@click.option("--fail-on", type=SeverityType(), default="warning", show_default=True,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--enable", multiple=True, help="Only these rules (ids or names, comma-separated).")
@click.option("--disable", multiple=True, help="Skip these rules (ids or names, comma-separated).")
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1, max=MAX_INPUT_BYTES),
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="Refuse any input larger than this.",
)
@click.option("--list-rules", is_flag=True, help="List every rule (id, severity, name) and exit.")
@click.option("--explain", "explain_rule", default=None, metavar="RULE",
              help="Print what RULE (id or name) flags, why and the fix, and exit.")
def command(inputs, cluster, kube_context, kubeconfig, namespace, fmt, fail_on, enable, disable,
            max_bytes, list_rules, explain_rule):
    """Audit Kubernetes manifests (files, directories, - for stdin) for GPU autoscaling traps.

    Exit codes: 0 no findings at or above --fail-on, 1 findings, 2 bad input.
    """
    if list_rules or explain_rule:
        from gpuscale.cli.audit_rules import explain, rules_listing

        text = explain(explain_rule, fmt) if explain_rule else rules_listing(fmt)
        click.echo(text, nl=False)
        return
    if not inputs and not cluster:
        raise UserInputError("give manifest files, directories or -, or --cluster")
    try:
        rules = select_rules(_split(enable), _split(disable))
    except KeyError as exc:
        raise UserInputError(str(exc.args[0])) from None
    skipped: list[tuple[str, str]] = []  # (file, why): Helm templates in a directory
    errors: list[UserInputError] = []  # files (or objects) that could not be read
    objects = (load_inputs(inputs, max_bytes=max_bytes, skipped=skipped, errors=errors)
               if inputs else [])
    if inputs and not objects and errors:
        raise errors[0]  # nothing could be read: the one error is the answer
    if inputs and not objects and skipped:
        raise UserInputError(skipped[0][1], source=skipped[0][0])
    for source, why in skipped:  # the rest is audited; say what was not, and how to audit it
        click.echo(f"gpuscale audit: skipped {source}: {why}", err=True)
    if inputs and not objects and (no_objects := why_no_objects(inputs)) is not None:
        # "0 objects, no findings" would read as a clean audit of a file that held no manifest.
        source, reason, hint = no_objects
        raise UserInputError(f"{reason}; {hint}" if hint else reason, source=source)
    if cluster:
        from gpuscale.audit.cluster import read_cluster
        objects += read_cluster(AUDIT_KINDS, context=kube_context, kubeconfig=kubeconfig,
                                namespace=namespace)
    before = len(errors)
    findings = audit_objects(objects, rules, errors=errors)
    nothing_audited = bool(objects) and len(errors) - before == len(objects)  # all misshapen
    if errors and nothing_audited and len(errors) == 1:
        raise errors[0]
    if not nothing_audited:
        _print_report(fmt, findings, objects, rules, errors)
    if errors:
        # The report above names each; the one line says why the exit status is 2.
        noun = "input" if len(errors) == 1 else "inputs"
        rest = "" if nothing_audited else "; the rest was audited"
        raise UserInputError(f"{len(errors)} {noun} could not be read (first: {errors[0]})"
                             f"{rest}")
    click.get_current_context().exit(exit_code(findings, fail_on))


def _print_report(fmt: str, findings, objects, rules, errors) -> None:
    not_read = kinds_not_read(objects, rules)
    if fmt in ("json", "yaml"):
        text = json_text_as(fmt, render_json(findings, len(objects), not_read, errors))
    elif fmt == "sarif":
        text = render_sarif(findings, rules, not_read, errors)
    else:
        text = render_text(findings, len(objects), not_read, errors)
    click.echo(text, nl=False)
