"""A whole `Plan` -> manifest files: {file name: [objects]} and YAML with stable key order.

Files: one per NodePool, the EC2NodeClass, KAI queues (and Topology when a gang needs one),
per role the workload + Service + PDB + ServiceMonitor and its scaler, and the monitoring
PrometheusRule (and prometheus-adapter rules when a role uses an HPA), the Grafana dashboard
ConfigMap; the CLI adds a kustomization.yaml over them.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpuscale.manifests.ec2nodeclass import render_ec2nodeclass
from gpuscale.manifests.grafana import render_dashboard_configmap
from gpuscale.manifests.hpa import adapter_rules, render_hpa
from gpuscale.manifests.kai import render_queue, render_topology
from gpuscale.manifests.karpenter import render_nodepool
from gpuscale.manifests.keda import render_scaled_object
from gpuscale.manifests.prometheus import render_prometheus_rule, render_service_monitor
from gpuscale.manifests.workloads import render_pdb, render_service, render_workload
from gpuscale.plan.layers import BATCH_POOL, SERVING_POOL
from gpuscale.plan.model import NodePoolPlan, Plan
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams
from gpuscale.serving.cold_start import MAX_VOLUME_INIT_MIBPS
from gpuscale.units import format_duration

NODE_CLASS = "gpu"
TERMINATION_GRACE_PERIOD = "1h"  # bounds a drain that a PDB holds up; expiry still completes


def nodepool_params(pool: NodePoolPlan) -> NodePoolParams:
    requirements = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": list(pool.instance_types),
        },
        {
            "key": "karpenter.sh/capacity-type",
            "operator": "In",
            "values": list(pool.capacity_types),
        },
    ]
    if pool.zones:
        requirements.append({"key": "topology.kubernetes.io/zone", "operator": "In",
                             "values": list(pool.zones)})
    return NodePoolParams.model_validate(
        {
            "name": pool.name,
            "weight": pool.weight,
            "requirements": requirements,
            "labels": {"gpuscale.io/pool": pool.name},
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            "limits": {"nvidia.com/gpu": pool.gpu_limit},
            "expire_after": "720h",
            "termination_grace_period": TERMINATION_GRACE_PERIOD,
            "disruption": {
                "consolidation_policy": "WhenEmpty",
                "consolidate_after": format_duration(pool.consolidate_after_s),
                "budgets": [{"nodes": pool.budget_nodes}],
            },
            "node_class_ref": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": NODE_CLASS,
            },
        }
    )


def render_plan_manifests(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """File name -> objects; empty for a refusal plan."""
    if not plan.has_manifests:
        return {}
    files: dict[str, list[dict[str, Any]]] = {}
    for pool in plan.nodepools:
        files[f"nodepool-{pool.name}.yaml"] = [render_nodepool(nodepool_params(pool))]
    reserved = any("reserved" in p.capacity_types for p in plan.nodepools)
    models = tuple(sorted({r.model for r in plan.roles}))
    prepulled = MAX_VOLUME_INIT_MIBPS if any(r.prepulled_image for r in plan.roles) else None
    files["ec2nodeclass.yaml"] = [render_ec2nodeclass(NODE_CLASS, plan.cluster_name, plan.node_role,
                                                      plan.reserved_ids, reserved, models,
                                                      prepulled)]
    files["kai-queues.yaml"] = [render_queue(q) for q in plan.queues]
    topology = f"{plan.name}-topology" if plan.topology_levels else None
    if topology:
        files["kai-topology.yaml"] = [render_topology(topology, plan.topology_levels)]
    for role in plan.roles:
        pool_name = SERVING_POOL if role.critical else BATCH_POOL
        files[f"{role.name}.yaml"] = [render_workload(role, pool_name, topology),
                                      render_service(role), render_pdb(role),
                                      render_service_monitor(role)]
        scaler = render_scaled_object(role) if role.autoscaler == "keda" else render_hpa(role)
        files[f"{role.name}-scaler.yaml"] = [scaler]
    hpa_roles = [r for r in plan.roles if r.autoscaler == "hpa"]
    if hpa_roles:
        files["prometheus-adapter-rules.yaml"] = [adapter_rules(hpa_roles)]
    files["monitoring.yaml"] = [render_prometheus_rule(plan)]
    files["grafana-dashboard.yaml"] = [render_dashboard_configmap(plan)]
    return files


def render_kustomization(files: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """`manifests/kustomization.yaml` listing every file, so `kubectl apply -k manifests/` and
    overlays (`namespace:`, patches) work on the plan as written."""
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": sorted(files)}


def all_manifests_yaml(files: dict[str, list[dict[str, Any]]]) -> str:
    """Every object of every file as one stream, for `gpuscale plan -o yaml | kubectl apply -f
    -`."""
    return "---\n".join(to_yaml(files[name]) for name in sorted(files))


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML in the objects' own key order (apiVersion, kind, metadata, spec)."""
    return "---\n".join(yaml.safe_dump(obj, sort_keys=False, width=120) for obj in objects)
