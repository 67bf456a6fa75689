"""The replay is what ships: `DIR/scenarios/W.yaml` built from the plan's own manifests.

The search simulates candidates it builds itself; the replay scenario is instead what the
importer (`simulate --manifests`) reads from the manifests the plan writes (the Deployment's
engine arguments, the ScaledObject with its cron triggers and behavior, the NodePool with its
limits and disruption settings, KAI), run on the held-out check traffic with the plan's SLO.
Beside the plan it holds the baseline (KEDA on queue depth from 1 replica, KEDA's defaults)
and the cheapest always-on fleet the search found on that traffic, on the same nodes, each
starting from its own minimum. plan.md's replay table is these runs, so
`gpuscale compare DIR/scenarios/W.yaml` prints the same numbers, and for a check trace given
whole (`check_traffic`) `simulate --manifests DIR/manifests --trace T` is the plan's run.
"""

from __future__ import annotations

import copy
import math
import tempfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gpuscale.catalog import get_instance_type
from gpuscale.manifests.plan import to_yaml
from gpuscale.plan.model import Plan
from gpuscale.plan.trace_search import open_windows_only


def _role_files(files: dict[str, list], role: str) -> list[str]:
    """The files the importer needs for one role: its workload and scaler, the nodes, KAI."""
    wanted = {f"{role}.yaml", f"{role}-scaler.yaml", "ec2nodeclass.yaml", "kai-queues.yaml"}
    return sorted(f for f in files if f in wanted or f.startswith("nodepool-"))


def replay_scenario(plan: Plan, name: str, files: dict[str, list], folder: Path,
                    base_dir: Path) -> dict:
    """The imported manifests of workload `name` as the replay scenario (a mapping); trace
    paths are made absolute (relative ones are read from `base_dir`, the input's folder)."""
    from gpuscale.importer.build import import_manifests

    searched = plan.scenarios[name]
    for file in _role_files(files, name):
        (folder / file).write_text(to_yaml(files[file]))
    workload = dict(searched["workload"])
    trace = Path(workload["path"])
    if not trace.is_absolute():
        trace = (base_dir / trace).resolve()
    workload["path"] = str(trace)
    imported = import_manifests([str(folder / f) for f in _role_files(files, name)], trace,
                                name="plan")
    data = copy.deepcopy(imported.data)
    whole = plan.warm_pools[name].replay_window.startswith("check_traffic")
    if not whole:  # a held-out part of the history: its window and drain
        data.update(workload=workload, duration_s=searched["duration_s"],
                    drain_s=searched["drain_s"])
    data.update(name=searched["name"], seed=searched["seed"], slo=searched["slo"],
                start_time=searched["start_time"],
                description=f"replay of plan workload {name}: its manifests, imported")
    nodes = data["strategies"][0].get("nodes")
    per_node = max(1, get_instance_type(data["cluster"]["instance_type"]).num_gpus
                   // max(1, data["model"].get("tp", 1) * data["model"].get("pp", 1)))
    strategies = [data["strategies"][0]]
    for strategy in searched["strategies"][1:]:
        own = dict(strategy)
        if nodes is not None:
            own["nodes"] = nodes
        own["ready_nodes"] = math.ceil(own.get("initial_replicas", 1) / per_node)
        strategies.append(own)
    # a cron window that never opens while this traffic runs would not act (and a scenario
    # refuses it as a schedule for other hours): left out of the replay, as in the search
    start = datetime.fromisoformat(str(data["start_time"]))
    data["strategies"] = [open_windows_only(st, start, data["duration_s"]) for st in strategies]
    most = max((s.get("initial_replicas") or 0) for s in strategies)
    data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"], math.ceil(most / per_node))
    return data


def run_replays(plan: Plan, files: dict[str, list], base_dir: Path, *, workers: int = 1,
                backend: str = "local") -> tuple[Plan, dict[str, dict]]:
    """Each workload's replay scenario and its runs, into the plan's replay rows. Each
    strategy is its own run (as in `compare`), so they run in parallel like the search's."""
    from gpuscale.plan.parallel import Runner

    runner = Runner(workers, backend)
    scenarios = dict(plan.scenarios)
    pools = dict(plan.warm_pools)
    for name in sorted(plan.scenarios):
        pool = pools.get(name)
        if pool is None or not pool.replay:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            data = replay_scenario(plan, name, files, Path(tmp), base_dir)
        labels = [r.config for r in pool.replay][:len(data["strategies"])]
        singles = [dict(data, strategies=[st]) for st in data["strategies"]]
        rows = runner.run(singles, labels, base_dir, plan.ttft_slo_s[name],
                          plan.goodput_frac.get(name, 0.0))
        pools[name] = replace(pool, replay=tuple(
            replace(r, config=label) for r, label in zip(rows, labels, strict=True)))
        scenarios[name] = data
    return replace(plan, warm_pools=pools, scenarios=scenarios), scenarios
