"""Every generated manifest validates against its real CRD schema (../shared/schemas) or, for
Kubernetes core kinds without a CRD (Deployment, Service, PDB, HPA, ConfigMap) and the
LeaderWorkerSet, against minimal JSON schemas written here from the Kubernetes API and LWS
field definitions (required fields and types of the parts we emit). The LeaderWorkerSets also
validate against the real LWS CRD where ../shared/schemas holds it
(leaderworkerset.x-k8s.io_leaderworkersets.yaml, kubernetes-sigs/lws config/crd/bases; the
tests skip, saying so, where it does not), and their group structure (leader and worker
templates, size, restart policy, the Service on the leader) is checked here either way. CEL
rules (x-kubernetes-validations) are not evaluated by jsonschema; the EC2NodeClass ones the
renderer could break are checked by hand below."""

from functools import cache

import jsonschema
import pytest
import yaml

from .helpers import SHARED, all_objects, example_manifests

CRD_FILES = {
    ("karpenter.sh/v1", "NodePool"): "karpenter.sh_nodepools.yaml",
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): "karpenter.k8s.aws_ec2nodeclasses.yaml",
    ("scheduling.run.ai/v2", "Queue"): "scheduling.run.ai_queues.yaml",
    ("scheduling.run.ai/v2alpha2", "PodGroup"): "scheduling.run.ai_podgroups.yaml",
    ("kai.scheduler/v1alpha1", "Topology"): "kai.scheduler_topologies.yaml",
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_scaledobjects.yaml",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_prometheusrules.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_servicemonitors.yaml",
}

_STR = {"type": "string"}
_LABELS = {"type": "object", "additionalProperties": _STR}
_META = {"type": "object", "required": ["name"], "properties": {
    "name": _STR, "namespace": _STR, "labels": _LABELS, "annotations": _LABELS}}
_SELECTOR = {"type": "object", "required": ["matchLabels"], "properties": {"matchLabels": _LABELS}}
_PROBE = {"type": "object", "required": ["httpGet"], "properties": {
    "httpGet": {"type": "object", "required": ["port"], "properties": {"path": _STR}},
    "periodSeconds": {"type": "integer", "minimum": 1},
    "failureThreshold": {"type": "integer", "minimum": 1}}}
_CONTAINER = {
    "type": "object",
    "required": ["name", "image"],
    "properties": {
        "name": _STR,
        "image": _STR,
        "args": {"type": "array", "items": _STR},
        "ports": {"type": "array", "items": {"type": "object", "required": ["containerPort"]}},
        "resources": {
            "type": "object",
            "properties": {
                "requests": _LABELS | {"additionalProperties": {}},
                "limits": {"type": "object"},
            },
        },
        "readinessProbe": _PROBE,
        "startupProbe": _PROBE,
    },
}
_POD_TEMPLATE = {"type": "object", "required": ["metadata", "spec"], "properties": {
    "metadata": {"type": "object", "properties": {"labels": _LABELS, "annotations": _LABELS}},
    "spec": {"type": "object", "required": ["containers"], "properties": {
        "containers": {"type": "array", "minItems": 1, "items": _CONTAINER},
        "schedulerName": _STR, "priorityClassName": _STR, "nodeSelector": _LABELS,
        "tolerations": {"type": "array", "items": {"type": "object", "properties": {
            "operator": {"enum": ["Exists", "Equal"]},
            "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]}}}}}}}}


def _obj(spec_schema, required_spec=True):
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"] + (["spec"] if required_spec else []),
        "properties": {"metadata": _META, "spec": spec_schema},
    }


CORE_SCHEMAS = {
    ("apps/v1", "Deployment"): _obj(
        {
            "type": "object",
            "required": ["selector", "template"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "selector": _SELECTOR,
                "template": _POD_TEMPLATE,
            },
        }
    ),
    # kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go: size defaults to 1
    # (we always state it), restartPolicy and startupPolicy are these enums, the leader template
    # is optional (the worker template then serves as the leader's too).
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): _obj(
        {
            "type": "object",
            "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                "leaderWorkerTemplate": {
                    "type": "object",
                    "required": ["size", "workerTemplate"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "restartPolicy": {"enum": ["RecreateGroupOnPodRestart", "None"]},
                        "leaderTemplate": _POD_TEMPLATE,
                        "workerTemplate": _POD_TEMPLATE,
                    },
                },
            },
        }
    ),
    ("v1", "Service"): _obj(
        {
            "type": "object",
            "required": ["ports"],
            "properties": {
                "selector": _LABELS,
                "ports": {"type": "array", "items": {"type": "object", "required": ["port"]}},
            },
        }
    ),
    ("policy/v1", "PodDisruptionBudget"): _obj(
        {
            "type": "object",
            "required": ["selector"],
            "properties": {
                "selector": _SELECTOR,
                "maxUnavailable": {"type": ["integer", "string"]},
            },
        }
    ),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _obj(
        {
            "type": "object",
            "required": ["scaleTargetRef", "maxReplicas"],
            "properties": {
                "scaleTargetRef": {"type": "object", "required": ["kind", "name"]},
                "minReplicas": {"type": "integer", "minimum": 1},
                "maxReplicas": {"type": "integer", "minimum": 1},
                "metrics": {"type": "array", "items": {"type": "object", "required": ["type"]}},
            },
        }
    ),
    ("v1", "ConfigMap"): _obj({}, required_spec=False),
}


@cache
def crd_schema(filename: str) -> dict:
    path = SHARED / "schemas" / filename
    if not path.exists():
        pytest.skip(f"{path} not present")
    crd = yaml.safe_load(path.read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return version["schema"]["openAPIV3Schema"]


LWS_CRD = "leaderworkerset.x-k8s.io_leaderworkersets.yaml"  # under ../shared/schemas


OBJECTS = list(all_objects())
LWS_OBJECTS = [(e, f, o) for e, f, o in OBJECTS if o["kind"] == "LeaderWorkerSet"]


def test_the_examples_render_every_kind_the_plan_promises():
    kinds = {obj["kind"] for _, _, obj in OBJECTS}
    assert {"NodePool", "EC2NodeClass", "Queue", "Topology", "ScaledObject", "PrometheusRule",
            "Deployment", "LeaderWorkerSet", "PodDisruptionBudget"} <= kinds


@pytest.mark.parametrize(
    "example,file,obj",
    OBJECTS,
    ids=[f"{e}/{f}/{o['kind']}/{o['metadata']['name']}" for e, f, o in OBJECTS],
)
def test_manifest_validates(example, file, obj):
    key = (obj["apiVersion"], obj["kind"])
    if key in CRD_FILES:
        schema = crd_schema(CRD_FILES[key])
    else:
        assert key in CORE_SCHEMAS, f"no schema for {key}"
        schema = CORE_SCHEMAS[key]
    # Validator(...).validate, not jsonschema.validate: the latter first checks the CRD against
    # the metaschema, and one upstream pattern, "^(?i)(abort|warn)?$", is not a Python regex.
    jsonschema.Draft7Validator(schema).validate(obj)


@pytest.mark.parametrize("example,file,obj", LWS_OBJECTS,
                         ids=[f"{e}/{o['metadata']['name']}" for e, _, o in LWS_OBJECTS])
def test_leaderworkerset_validates_against_the_real_crd(example, file, obj):
    jsonschema.Draft7Validator(crd_schema(LWS_CRD)).validate(obj)


def _broken_groups(lws: dict):
    """Copies of `lws` with a size that is no integer, or an unknown restart policy."""
    for field, value in (("size", "two"), ("restartPolicy", "RestartAlways")):
        bad = yaml.safe_load(yaml.safe_dump(lws))
        bad["spec"]["leaderWorkerTemplate"][field] = value
        yield bad


def test_the_structural_lws_schema_rejects_a_broken_group():
    """Not vacuous: the schema the LeaderWorkerSets always meet refuses a broken group."""
    _, _, lws = LWS_OBJECTS[0]
    schema = CORE_SCHEMAS[("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")]
    for bad in _broken_groups(lws):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(bad)


def test_the_real_lws_crd_rejects_a_broken_group():
    """Likewise the real CRD, where present (it leaves the pod templates to the API server and
    the size's range to LWS's webhook)."""
    _, _, lws = LWS_OBJECTS[0]
    for bad in _broken_groups(lws):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(crd_schema(LWS_CRD)).validate(bad)


@pytest.mark.parametrize("example,file,obj", LWS_OBJECTS,
                         ids=[f"{e}/{o['metadata']['name']}" for e, _, o in LWS_OBJECTS])
def test_leaderworkerset_is_one_replica_across_nodes(example, file, obj):
    """A group of `size` pods that fail and restart together: a leader that serves (the
    Service selects it, LWS labels it worker-index 0) and workers of the same GPUs."""
    template = obj["spec"]["leaderWorkerTemplate"]
    assert template["size"] >= 2  # one pod would be a Deployment
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    leader = template["leaderTemplate"]["spec"]["containers"][0]
    worker = template["workerTemplate"]["spec"]["containers"][0]
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == \
        worker["resources"]["limits"]["nvidia.com/gpu"]
    assert "readinessProbe" in leader
    (service,) = [o for f, o in ((f, o) for _, f, o in OBJECTS if o["kind"] == "Service")
                  if f == file and o["metadata"]["name"] == obj["metadata"]["name"]]
    assert service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"


def test_a_broken_nodepool_fails_validation():
    """The schema check has teeth: a wrong consolidation policy is rejected."""
    pool = next(o for _, _, o in OBJECTS if o["kind"] == "NodePool")
    bad = yaml.safe_load(yaml.safe_dump(pool))
    bad["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(crd_schema(CRD_FILES[("karpenter.sh/v1", "NodePool")])).validate(
            bad
        )


def test_ec2nodeclass_cel_rules_we_could_break():
    for _, _, obj in OBJECTS:
        if obj["kind"] != "EC2NodeClass":
            continue
        spec = obj["spec"]
        assert ("role" in spec) != ("instanceProfile" in spec)  # exactly one of them
        assert "amiFamily" in spec or any("alias" in t for t in spec["amiSelectorTerms"])
        assert all(
            ("id" in t) != ("tags" in t) for t in spec.get("capacityReservationSelectorTerms", [])
        )


def test_refusal_plan_renders_nothing():
    assert example_manifests("single-node-refusal") == {}


def test_hpa_variant_validates_and_keeps_the_same_floor_and_window():
    from pathlib import Path

    from gpuscale.manifests.plan import render_plan_manifests
    from gpuscale.plan import make_plan, plan_input_from_dict

    from .helpers import example_dict

    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0].update(autoscaler="hpa", scale_on="composite")
    plan = make_plan(plan_input_from_dict(data), Path("."), simulate=False)
    files = render_plan_manifests(plan)
    hpa = files["chat-scaler.yaml"][0]
    assert hpa["kind"] == "HorizontalPodAutoscaler"
    jsonschema.Draft7Validator(
        CORE_SCHEMAS[("autoscaling/v2", "HorizontalPodAutoscaler")]
    ).validate(hpa)
    role = plan.roles[0]
    assert hpa["spec"]["minReplicas"] == role.min_replicas
    assert (
        hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
        == role.scale_down_window_s
    )
    assert [m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]] == [
        "vllm_num_requests_waiting", "vllm_kv_cache_usage_perc"]
    adapter = files["prometheus-adapter-rules.yaml"][0]
    rules = yaml.safe_load(adapter["data"]["config.yaml"])["externalRules"]
    assert all(r["metricsQuery"].startswith("sum by (namespace, service)") for r in rules)
