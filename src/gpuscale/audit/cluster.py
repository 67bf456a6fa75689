"""Read audit and diagnose inputs from a live cluster, read-only, with the official client.

Only `list` calls are made. The `kubernetes` package is an optional extra
(`pip install 'gpuscale[cluster]'`); without it `--cluster` fails with that instruction.
Objects from a cluster have no file: findings point at `cluster://<kind>/<ns>/<name>`, line 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gpuscale.audit.loader import Manifest
from gpuscale.errors import UserInputError

# kind -> apiVersions tried in order (the first the server serves wins).
API_VERSIONS = {
    "Deployment": ("apps/v1",), "StatefulSet": ("apps/v1",), "Job": ("batch/v1",),
    "Pod": ("v1",), "Node": ("v1",), "Event": ("v1",),
    "PodDisruptionBudget": ("policy/v1",), "PriorityClass": ("scheduling.k8s.io/v1",),
    "HorizontalPodAutoscaler": ("autoscaling/v2",),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",), "RayCluster": ("ray.io/v1",),
    "ScaledObject": ("keda.sh/v1alpha1",), "NodePool": ("karpenter.sh/v1",),
    "NodeClaim": ("karpenter.sh/v1",), "EC2NodeClass": ("karpenter.k8s.aws/v1",),
    "Queue": ("scheduling.run.ai/v2",), "PodGroup": ("scheduling.run.ai/v2alpha2",),
    "PrometheusRule": ("monitoring.coreos.com/v1",),
    "PodAutoscaler": ("autoscaling.aibrix.ai/v1alpha1",),
    "LLMInferenceService": ("serving.kserve.io/v1alpha2", "serving.kserve.io/v1alpha1"),
}


def manifests_from_items(items: Iterable[dict], kind: str, api_version: str) -> list[Manifest]:
    """Plain dicts (as `ApiClient.sanitize_for_serialization` or `.to_dict()` give) -> Manifests."""
    out = []
    for item in items:
        data = dict(item)
        data.setdefault("kind", kind)
        data.setdefault("apiVersion", api_version)
        meta = data.get("metadata") or {}
        name, ns = str(meta.get("name", "")), str(meta.get("namespace", "") or "")
        source = f"cluster://{kind}/{ns + '/' if ns else ''}{name}"
        out.append(Manifest(kind=kind, api_version=data["apiVersion"], name=name, namespace=ns,
                            data=data, source=source, line=1))
    return out


def _api_client(client, config, *, context: str | None, kubeconfig: str | None):
    """kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config; inside a pod with none of
    them (a CronJob running the audit), the pod's service account (in-cluster config)."""
    have_file = (
        kubeconfig or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().is_file()
    )
    if not have_file and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
        return client.ApiClient()
    return config.new_client_from_config(config_file=kubeconfig, context=context)


def read_cluster(kinds: Iterable[str], *, context: str | None = None,
                 kubeconfig: str | None = None, namespace: str | None = None) -> list[Manifest]:
    """List every object of `kinds` (in `namespace`, else across namespaces; cluster-scoped
    kinds such as Node and NodePool always whole); kinds the server lacks are skipped."""
    try:
        from kubernetes import client, config, dynamic  # optional extra
        from kubernetes.dynamic.exceptions import ResourceNotFoundError
    except ImportError:
        raise UserInputError(
            "--cluster needs the Kubernetes client: pip install 'gpuscale[cluster]'"
        ) from None
    try:
        api = _api_client(client, config, context=context, kubeconfig=kubeconfig)
    except Exception as exc:  # config errors come in several types; one line is what matters
        raise UserInputError(f"cannot load kubeconfig: {exc}") from None
    dyn = dynamic.DynamicClient(api)
    out: list[Manifest] = []
    for kind in kinds:
        for api_version in API_VERSIONS.get(kind, ()):
            try:
                resource = dyn.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                continue
            scoped = namespace is not None and getattr(resource, "namespaced", False)
            listed = (
                resource.get(namespace=namespace) if scoped else resource.get()
            )  # read-only list
            items = [
                client.ApiClient().sanitize_for_serialization(i.to_dict()) for i in listed.items
            ]
            out.extend(manifests_from_items(items, kind, api_version))
            break
    return out
