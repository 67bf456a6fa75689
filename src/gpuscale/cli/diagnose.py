"""`gpuscale diagnose`: explain why GPU pods are Pending and which layer holds them."""

from __future__ import annotations

import json
import textwrap

import click

from gpuscale.audit import DEFAULT_MAX_BYTES, load_inputs
from gpuscale.audit.diagnose.causes import SNAPSHOT_KINDS, diagnose
from gpuscale.audit.loader import why_no_objects
from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.options import MAX_INPUT_BYTES, json_text_as, output_option
from gpuscale.errors import UserInputError

SNAPSHOT_HELP = ("a cluster snapshot from "
                 "`kubectl get nodes,pods,events,nodepools,nodeclaims,queues,podgroups -A -o json`")


def render_text(diagnoses) -> str:
    if not diagnoses:
        return "gpuscale diagnose: no Pending GPU pods\n"
    lines = []
    for d in diagnoses:
        lines.append(f"{d.pod} ({d.gpus} GPU{'' if d.gpus == 1 else 's'}): {d.cause} [{d.layer}]")
        lines.append(textwrap.fill(d.summary, 100, initial_indent="  ", subsequent_indent="  ",
                                   break_on_hyphens=False))
        # The scheduler's message runs to hundreds of characters: wrapped at 100 columns.
        lines += [textwrap.fill(e, 100, initial_indent="    - ", subsequent_indent="      ",
                                break_on_hyphens=False) for e in d.evidence]
    return "\n".join(lines) + "\n"


@click.command(name="diagnose")
@catalog_option
@click.argument("snapshot", required=False)
@click.option(
    "--cluster",
    is_flag=True,
    help="Read nodes, pods, events, ... from the current kubeconfig context.",
)
@click.option("--context", "kube_context", default=None, help="kubeconfig context for --cluster.")
@click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="kubeconfig file for --cluster (default: $KUBECONFIG, ~/.kube/config, "
                   "else in-cluster config).")
@click.option("-n", "--namespace", default=None,
              help="--cluster: list namespaced objects in this namespace only (default: all).")
@click.option("--pod", "pod_name", default=None, help="Only this pod (NAME or NAMESPACE/NAME).")
@output_option()
@click.option(
    "--max-bytes", type=click.IntRange(min=1, max=MAX_INPUT_BYTES), default=DEFAULT_MAX_BYTES,
    show_default=True
)
def command(snapshot, cluster, kube_context, kubeconfig, namespace, pod_name, fmt, max_bytes):
    """Explain Pending GPU pods from SNAPSHOT, a `kubectl get
    nodes,pods,events,nodepools,nodeclaims,queues,podgroups -A -o json` dump (- for stdin).

    Example: gpuscale diagnose examples/diagnose/snapshot.yaml"""
    if not snapshot and not cluster:
        raise UserInputError("give a snapshot file (or -), or --cluster")
    objects = load_inputs([snapshot], max_bytes=max_bytes) if snapshot else []
    if snapshot and not objects and (why := why_no_objects([snapshot])) is not None:
        source, reason, hint = why
        raise UserInputError(f"{reason}; expected {SNAPSHOT_HELP}" + (f"; {hint}" if hint else ""),
                             source=source)
    if snapshot and not any(o.kind == "Pod" for o in objects):
        # A manifest directory or a single Deployment has no Pods: saying "no Pending GPU pods"
        # would read as a clean bill of health for a file that was never a snapshot.
        found = sorted({o.kind for o in objects}) or ["nothing"]
        raise UserInputError(
            f"no Pod objects (found: {', '.join(found)}); expected {SNAPSHOT_HELP}; "
            "to check manifests use `gpuscale audit`", source=snapshot)
    if cluster:
        from gpuscale.audit.cluster import read_cluster
        objects += read_cluster(SNAPSHOT_KINDS, context=kube_context, kubeconfig=kubeconfig,
                                namespace=namespace)
    results = diagnose(objects, pod_name)
    if pod_name and not results:
        raise UserInputError(f"no Pending GPU pod named {pod_name!r} in the snapshot")
    if fmt in ("json", "yaml"):
        click.echo(json_text_as(fmt, json.dumps([d.as_dict() for d in results], indent=2)))
    else:
        click.echo(render_text(results), nl=False)
