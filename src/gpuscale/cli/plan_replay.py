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
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gpuscale.catalog import get_instance_type
from gpuscale.manifests.plan import to_yaml
from gpuscale.plan.model import Plan
from gpuscale.plan.trace_search import open_windows_only


def replay_command(scenario: Path | str, goodput_frac: float) -> str:
    """The `gpuscale compare` line that replays `scenario` as the plan judged it: with the
    catalog files the plan read (`--catalog`, GPUSCALE_CATALOG; the scenario names entries
    from them) and the plan's goodput as the verdict's target when it is not compare's
    default (so the verdict and plan.md agree on who meets the SLO)."""
    import shlex

    import click

    from gpuscale.cli.catalog_option import CATALOG_FILES
    from gpuscale.importer.catalog_files import catalog_paths
    from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET

    ctx = click.get_current_context(silent=True)
    flags = ctx.meta.get(CATALOG_FILES, ()) if ctx is not None else ()
    words = ["gpuscale", "compare", str(scenario)]
    for path in catalog_paths(flags):
        words += ["--catalog", str(Path(path).resolve())]
    if abs(goodput_frac - SLO_ATTAINMENT_TARGET) > 1e-9:
        words += ["--fail-under-slo", f"{goodput_frac:g}"]
    return " ".join(shlex.quote(w) for w in words)


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
    if not _trace_as_given(plan.warm_pools[name].replay_window, searched["workload"]):
        # a part of the trace (its own start_s, end_s, rate_scale...): the searched window
        data.update(workload=workload, duration_s=searched["duration_s"],
                    drain_s=searched["drain_s"])
    data.update(name=searched["name"], seed=searched["seed"], slo=searched["slo"],
                start_time=searched["start_time"],
                description=f"replay of plan workload {name}: its manifests, imported")
    nodes = data["strategies"][0].get("nodes")
    nodes_for = _nodes_for(imported.scenario)
    strategies = [data["strategies"][0]]
    for strategy in searched["strategies"][1:]:
        own = dict(strategy)
        if nodes is not None:
            own["nodes"] = nodes
        own["ready_nodes"] = nodes_for(own.get("initial_replicas", 1))
        strategies.append(own)
    # a cron window that never opens while this traffic runs would not act (and a scenario
    # refuses it as a schedule for other hours): left out of the replay, as in the search
    start = datetime.fromisoformat(str(data["start_time"]))
    data["strategies"] = [open_windows_only(st, start, data["duration_s"]) for st in strategies]
    most = max((s.get("initial_replicas") or 0) for s in strategies)
    data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"], nodes_for(most))
    return data


def _nodes_for(scenario) -> Callable[[int], int]:
    """Nodes that hold n replicas of the imported scenario's model: whole nodes per replica
    for one spanning nodes (a LeaderWorkerSet group, one pod a node), else replicas packed
    by GPUs (as the search's `CandidateSetup.nodes_for`)."""
    from gpuscale.sim.replica_setup import replica_hardware

    hw = replica_hardware(scenario)
    if hw.layout.nodes > 1:
        return lambda n: n * hw.layout.nodes
    per_node = max(1, get_instance_type(scenario.cluster.instance_type).num_gpus // hw.tp)
    return lambda n: math.ceil(n / per_node)


def _trace_as_given(replay_window: str, workload: dict) -> bool:
    """Whether the replay is a trace file whole, as `simulate --manifests DIR/manifests
    --trace T` reads it: check_traffic, or the whole history of a trace the input does not
    cut or scale (then the importer's own window and drain make the two the same run)."""
    if replay_window.startswith("check_traffic"):
        return True
    # the search leaves end_s out only for the whole history (trace_search.window_workload)
    return (workload.get("end_s") is None and not workload.get("start_s")
            and workload.get("rate_scale", 1.0) == 1.0 and workload.get("load_scale", 1.0) == 1.0
            and workload.get("repeat", 1) == 1 and workload.get("max_requests") is None)


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
