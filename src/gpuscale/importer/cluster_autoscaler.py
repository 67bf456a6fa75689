"""A Cluster Autoscaler Deployment's container flags -> the `cluster_autoscaler` node provider.

Read when the bundle has no Karpenter NodePool. Each flag the simulator models maps onto a
field of `ClusterAutoscalerParams`; a flag left out keeps CA's own default (reference
layer1-node-provisioning.md section 2: `--scan-interval` 10s, `--expander` least-waste,
`--max-node-provision-time` 15m, `--scale-down-unneeded-time` 10m,
`--scale-down-delay-after-add` 10m, `--scale-down-delay-after-delete` 0s,
`--scale-down-delay-after-failure` 3m, `--scale-down-utilization-threshold` 0.5,
`--scale-down-gpu-utilization-threshold` 0.5, backoff 5m doubling to 30m). Every other flag is
named in the notes, never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, get_args

from gpuscale.audit.loader import Manifest
from gpuscale.catalog import InstanceType, get_instance_type
from gpuscale.errors import UserInputError
from gpuscale.importer import priority_expander
from gpuscale.importer.nodes import nodes_for
from gpuscale.importer.vllm_args import container_words
from gpuscale.provisioning.cluster_autoscaler.params import Expander
from gpuscale.units import gpus_text

IMAGE_MARK = "cluster-autoscaler"
DEFAULT_GROUP = "gpu"
_GO_DURATION = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


class BadFlag(ValueError):
    """A flag value that is not what CA itself would accept (message says what was expected)."""


def go_duration_s(text: str) -> float:
    """Go's time.ParseDuration, as CA parses its duration flags: "10m", "1h30m", "600s", "0"
    (a bare number other than 0 has no unit and is refused, as Go refuses it)."""
    if text == "0":
        return 0.0
    rest = text
    while rest:
        match = _GO_DURATION.match(rest)
        if match is None:
            raise BadFlag(f"expected a Go duration such as 10m, 1h30m or 600s, got {text!r}")
        rest = rest[match.end():]
    if not text:
        raise BadFlag("expected a Go duration such as 10m, 1h30m or 600s, got ''")
    return sum(float(n) * _UNIT_S[u] for n, u in _NUMBER_UNIT.findall(text))


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise BadFlag(f"expected a number from 0 to 1, got {text!r}")
    return value


def _int(text: str, low: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadFlag(f"expected an integer, got {text!r}") from None
    if low is not None and value < low:
        raise BadFlag(f"expected an integer >= {low}, got {text!r}")
    return value


def _bool(text: str) -> bool:
    # Go's strconv.ParseBool, which pflag uses for boolean flags.
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise BadFlag(f"expected true or false, got {text!r}")


def _expanders(text: str) -> list[str]:
    known = get_args(Expander)
    chain = [x.strip() for x in text.split(",")]
    unknown = [x for x in chain if x not in known]
    if unknown or not chain:
        raise BadFlag(f"expected a comma list of {', '.join(known)}, got {text!r}")
    return chain


# flag -> (params field, parser). Durations are seconds in the params.
_FLAGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "scan-interval": ("scan_interval_s", go_duration_s),
    "expander": ("expanders", _expanders),
    "new-pod-scale-up-delay": ("new_pod_scale_up_delay_s", go_duration_s),
    "expendable-pods-priority-cutoff": ("expendable_pods_priority_cutoff", _int),
    "max-nodes-per-scaleup": ("max_nodes_per_scaleup", lambda t: _int(t, 1)),
    "max-node-provision-time": ("max_node_provision_time_s", go_duration_s),
    "initial-node-group-backoff-duration": ("initial_backoff_s", go_duration_s),
    "max-node-group-backoff-duration": ("max_backoff_s", go_duration_s),
    "scale-down-enabled": ("scale_down_enabled", _bool),
    "scale-down-utilization-threshold": ("scale_down_utilization_threshold", _fraction),
    "scale-down-gpu-utilization-threshold": ("scale_down_gpu_utilization_threshold", _fraction),
    "scale-down-unneeded-time": ("scale_down_unneeded_time_s", go_duration_s),
    "scale-down-delay-after-add": ("scale_down_delay_after_add_s", go_duration_s),
    "scale-down-delay-after-delete": ("scale_down_delay_after_delete_s", go_duration_s),
    "scale-down-delay-after-failure": ("scale_down_delay_after_failure_s", go_duration_s),
    "max-scale-down-parallelism": ("max_scale_down_parallelism", lambda t: _int(t, 1)),
    "max-drain-parallelism": ("max_drain_parallelism", lambda t: _int(t, 1)),
}
_FLAG_WORD = re.compile(r"^--?[A-Za-z]")
_BOOLEAN_FLAGS = {"scale-down-enabled"}  # `--scale-down-enabled` alone means true


def find(objects: list[Manifest]) -> tuple[Manifest, dict] | None:
    """The first Deployment with a container whose image is Cluster Autoscaler."""
    for obj in objects:
        if obj.kind != "Deployment":
            continue
        for c in obj.get("spec", "template", "spec", "containers") or []:
            if isinstance(c, dict) and IMAGE_MARK in str(c.get("image", "")):
                return obj, c
    return None


def parse_flags(words: list[str]) -> list[tuple[str, str | None]]:
    """`--flag=value`, `--flag value` and a bare `--flag` (boolean) -> (flag, value) in order.
    A word that is not a flag after a bare flag is its value (`--expander least-waste`,
    `--expendable-pods-priority-cutoff -10`)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word.strip("-") == "":
            continue  # the binary (./cluster-autoscaler) or a stray word
        name = word.lstrip("-")
        if "=" in name:
            flag, value = name.split("=", 1)
            out.append((flag, value))
        elif i < len(words) and not _FLAG_WORD.match(words[i]) and name not in _BOOLEAN_FLAGS:
            out.append((name, words[i]))
            i += 1
        else:
            out.append((name, None))
    return out


def _node_group(value: str, itype_name: str | None, where: str) -> dict:
    """`--nodes=MIN:MAX:NAME`. The instance type is the serving pod's nodeSelector one, else
    NAME itself when it is a catalog instance type (CA reads the type from the ASG, which the
    manifests do not show)."""
    parts = value.split(":", 2)
    if len(parts) != 3 or not parts[2]:
        raise BadFlag(f"expected MIN:MAX:NAME, got {value!r}")
    low, high = _int(parts[0], 0), _int(parts[1], 0)
    if low > high:
        raise BadFlag(f"expected MIN <= MAX, got {value!r}")
    name = parts[2]
    if itype_name is None:
        try:
            itype_name = get_instance_type(name).name
        except UserInputError:
            raise UserInputError(
                f"node group {name!r}: its instance type is unknown (set the serving pod's "
                "node.kubernetes.io/instance-type nodeSelector, or name the group after a "
                "catalog instance type)", source=where, field="--nodes") from None
    return {"name": name, "instance_type": itype_name, "min_size": low, "max_size": high}


def provider_section(obj: Manifest, container: dict, itype_name: str | None, tp: int,
                     initial: int, max_replicas: int, defaults: list[str],
                     notes: list[str], objects: list[Manifest] | None = None,
                     ) -> tuple[dict, InstanceType]:
    """The `nodes: {kind: cluster_autoscaler}` mapping and the serving pods' instance type
    (`objects`: the bundle, where `--expander=priority` finds its ConfigMap).

    A group the flags leave open (auto-discovery, no `--nodes`) is sized by what the initial
    and the most replicas need (`tp` GPUs each)."""
    where = f"{obj.source}: {obj.ref}"
    spec: dict[str, Any] = {"kind": "cluster_autoscaler"}
    groups: list[dict] = []
    unmodelled: list[str] = []
    for flag, value in parse_flags(container_words(container)):
        try:
            if flag == "nodes":
                if value is None:
                    raise BadFlag("expected MIN:MAX:NAME")
                groups.append(_node_group(value, itype_name, where))
            elif flag in _FLAGS:
                field, parse = _FLAGS[flag]
                if value is None and flag not in _BOOLEAN_FLAGS:
                    raise BadFlag("expected a value")
                spec[field] = parse("true" if value is None else value)
            else:
                unmodelled.append(f"--{flag}" + ("" if value is None else f"={value}"))
        except BadFlag as exc:
            raise UserInputError(str(exc), source=where, field=f"--{flag}") from None
    if not groups:
        if itype_name is None:
            raise UserInputError("no --nodes=MIN:MAX:NAME flag and no "
                                 "node.kubernetes.io/instance-type nodeSelector on the serving "
                                 "pod: the node group's instance type is unknown", source=where,
                                 field="--nodes")
        itype = get_instance_type(itype_name)
        most = max(nodes_for(initial, tp, itype), nodes_for(max(max_replicas, 1), tp, itype))
        groups.append({"name": DEFAULT_GROUP, "instance_type": itype_name, "min_size": 0,
                       "max_size": most})
        defaults.append(f"nodes: {obj.ref} names no --nodes group (auto-discovery); one group "
                        f"{DEFAULT_GROUP} of {itype_name}, at most {most} nodes (the most "
                        "replicas)")
    itype = get_instance_type(groups[0]["instance_type"])
    for group in groups:
        gpus = get_instance_type(group["instance_type"]).num_gpus
        if gpus < tp:
            raise UserInputError(f"node group {group['name']!r}: {group['instance_type']} has "
                                 f"{gpus_text(gpus)}, fewer than the serving pod's {tp}; name an "
                                 "instance type with enough GPUs", source=where, field="--nodes")
    _raise_floors(groups, nodes_for(initial, tp, itype), notes)
    spec["node_groups"] = groups
    if "priority" in spec.get("expanders", []):
        spec["priorities"] = priority_expander.priorities(
            objects or [], obj, [g["name"] for g in groups], notes)
    if unmodelled:
        notes.append(f"{obj.ref} (Cluster Autoscaler): flags not simulated: "
                     f"{', '.join(unmodelled)}")
    defaults.append("nodes: Cluster Autoscaler node latencies as the simulator's defaults "
                    "(docs/provisioning.md); flags not given take CA's defaults")
    return spec, itype


def _raise_floors(groups: list[dict], ready_nodes: int, notes: list[str]) -> None:
    """The simulated CA creates a group's min_size nodes at t=0 and no others, so the nodes
    the initial replicas run on are the first group's floor; say so when that is above MIN."""
    first = groups[0]
    if ready_nodes > first["min_size"]:
        notes.append(f"node group {first['name']}: min size {first['min_size']} raised to "
                     f"{ready_nodes} so the initial replicas' nodes exist at t=0 (the simulated "
                     "Cluster Autoscaler starts a group at exactly its min size)")
        first["min_size"] = ready_nodes
        first["max_size"] = max(first["max_size"], ready_nodes)
