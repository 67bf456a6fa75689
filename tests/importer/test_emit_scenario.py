"""`--emit-scenario` writes a scenario that stays true when a sweep or an edit changes it
(issue 30): a raised min_replica_count starts at the new floor with its nodes ready, as the
bundle with that floor does, and every NodePool shows its consolidation policy."""

from __future__ import annotations

import yaml

from gpuscale.scenario import scenario_from_dict

from .bundle import MANIFESTS, TRACE, load_docs, of_kind, write_bundle
from .test_my_cluster import run_cli

KEYS = ("slo_attainment", "cost_usd", "gpu_hours", "replicas", "requests")


def test_a_raised_floor_in_the_emitted_scenario_runs_as_the_bundle_with_that_floor(tmp_path):
    emitted = tmp_path / "scenario.yaml"
    run_cli("simulate", "--manifests", str(MANIFESTS), "--trace", str(TRACE),
            "--emit-scenario", str(emitted))
    data = yaml.safe_load(emitted.read_text())
    assert data["initial_replicas"] == 1 and data["cluster"]["ready_nodes"] == 1
    data["strategies"][0]["autoscaler"]["min_replica_count"] = 3  # what a sweep point does
    raised = tmp_path / "raised.yaml"
    raised.write_text(yaml.safe_dump(data))
    from_emitted = run_cli("simulate", str(raised))["runs"][0]
    docs = load_docs()
    of_kind(docs, "ScaledObject")["spec"]["minReplicaCount"] = 3
    bundle = run_cli("simulate", "--manifests", str(write_bundle(tmp_path, docs)), "--trace",
                     str(TRACE))["runs"][0]
    assert from_emitted["replicas"]["initial"] == bundle["replicas"]["initial"] == 3
    assert {k: from_emitted[k] for k in KEYS} == {k: bundle[k] for k in KEYS}


def test_every_emitted_nodepool_shows_its_consolidation_policy(tmp_path):
    docs = load_docs()
    of_kind(docs, "NodePool")["spec"].pop("disruption", None)
    emitted = tmp_path / "scenario.yaml"
    run_cli("simulate", "--manifests", str(write_bundle(tmp_path, docs)), "--trace", str(TRACE),
            "--emit-scenario", str(emitted))
    (pool,) = yaml.safe_load(emitted.read_text())["strategies"][0]["nodes"]["node_pools"]
    # Karpenter's defaults when the NodePool says nothing (karpenter.sh NodePool CRD).
    assert pool["disruption"]["consolidation_policy"] == "WhenEmptyOrUnderutilized"
    assert pool["disruption"]["consolidate_after"] == "0s"


def _scenario(**extra) -> object:
    data = {"name": "s", "duration_s": 60, "model": {"name": "Llama-3.1-8B", "tp": 2},
            "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 2},
            "workload": {"kind": "poisson", "rate_per_s": 1, "duration_s": 60},
            "strategies": [{"name": "k", "autoscaler": {
                "kind": "keda", "min_replica_count": 9, "max_replica_count": 20,
                "triggers": [{"query": {"metric": "vllm:num_requests_waiting"},
                              "threshold": 5}]}}]}
    return scenario_from_dict({**data, **extra}, source="t")


def test_the_start_state_follows_the_floor_only_when_asked():
    from gpuscale.scenario.start import autoscaler_floor, initial_state

    off, on = _scenario(), _scenario(initial_replicas_at_floor=True)
    assert initial_state(off, off.strategies[0]) == (1, 1)
    # 9 replicas of 2 GPUs on 8-GPU nodes need 3 nodes; max_nodes 2 caps the warm floor.
    assert initial_state(on, on.strategies[0]) == (9, 2)
    assert autoscaler_floor(on.strategies[0].autoscaler) == 9


def test_a_strategy_s_own_start_is_the_base_the_floor_raises():
    # Merging issue 27's per-strategy start (initial_replicas, ready_nodes on a strategy) with
    # the floor: the strategy's own numbers replace the scenario's, then the floor applies.
    from gpuscale.scenario.start import initial_state

    def with_own(**own) -> tuple[int, int]:
        s = _scenario(initial_replicas_at_floor=True, initial_replicas=1)
        strategy = s.strategies[0].model_copy(update=own)
        return initial_state(s, strategy)

    assert with_own(initial_replicas=12, ready_nodes=2) == (12, 2)
    assert with_own(initial_replicas=4) == (9, 2)  # under the floor of 9: raised
    off = _scenario(initial_replicas=1)
    own = off.strategies[0].model_copy(update={"initial_replicas": 5, "ready_nodes": 2})
    assert initial_state(off, own) == (5, 2)
