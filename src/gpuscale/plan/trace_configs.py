"""The deployable settings a trace plan searches beside its schedule, each with what it renders
and what it costs (issue 27):

- how a new replica starts (`ColdStartOption`): the serving image pulled on each new node (the
  default), or pre-pulled on the node's data volume, restored from an EBS snapshot that holds
  it (Bottlerocket; the image is read at the volume's provisioned initialization rate);
- how capacity is let go after a window (`Release`): the cold-start rule (scale-down window
  1.5 restarts, consolidateAfter 2 restarts, for a fleet that scales reactively), or fast (the
  HPA's default 300 s window and the 10-minute consolidateAfter floor): with a schedule the
  known ramps are the cron windows' job, so a long hold only bills capacity after each window;
- how the schedule's steps act (`steps`): the per-direction scale-up tolerance set so every
  step acts (Kubernetes >= 1.34), or each step rounded up until it acts under the cluster's
  default tolerance.

`proxy_replica_hours` ranks them before any is simulated: the schedule's minute wants, raised
the option's reaction time ahead of each slot and held `hold_s` after each drop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.inputs import PlanInput, WorkloadInput
from gpuscale.plan.layers import MIN_CONSOLIDATE_AFTER_S, consolidate_after_for
from gpuscale.plan.scaler import MIN_SCALE_DOWN_WINDOW_S, window_s
from gpuscale.plan.schedule import (
    Sizing,
    held_replicas,
    minute_wants,
    rounded_to_act,
    slot_replicas,
    step_tolerance,
)
from gpuscale.plan.warm_pool import SIGNAL_LAG_S
from gpuscale.serving.cold_start import (
    MAX_VOLUME_INIT_MIBPS,
    cold_start_medians,
    snapshot_image_read_s,
)
from gpuscale.serving.engine_defaults import (
    DEFAULT_IMAGE_SIZE_GB,
    DEFAULT_WEIGHT_LOADER,
    DEFAULT_WEIGHT_STORAGE,
)

# EBS snapshot storage, standard tier: $0.05 per GB-month (aws.amazon.com/ebs/pricing,
# us-east-1; snapshots are billed per GB-month of data stored, AWS "How AWS Pricing Works",
# Amazon EBS). A month is 30 days there.
SNAPSHOT_USD_PER_GB_MONTH = 0.05


@dataclass(frozen=True)
class ColdStartOption:
    name: Literal["pulled", "prepulled", "given"]
    cold_start_s: float  # median, pod bound -> serving
    image_s: float  # of which the image: pull + extract, or the snapshot read
    usd_per_day: float  # what the option itself costs (the snapshot's storage)
    how: str

    @property
    def image_pull_s(self) -> float | None:
        """The scenario's explicit `cold_start.image_pull` (None: the pull model)."""
        return self.image_s if self.name == "prepulled" else None


@dataclass(frozen=True)
class Release:
    name: Literal["rule", "fast"]
    scale_down_window_s: int
    consolidate_after_s: int

    @property
    def hold_s(self) -> float:
        """How long capacity stays billed after the want drops: the stabilization window,
        then the emptied node's consolidateAfter."""
        return float(self.scale_down_window_s + self.consolidate_after_s)


StepMode = Literal["tolerance", "rounded"]
STEP_MODES: tuple[StepMode, ...] = ("tolerance", "rounded")


@dataclass(frozen=True)
class TraceConfig:
    cold: ColdStartOption
    release: Release
    steps: StepMode
    node_ready_s: float

    @property
    def lead_s(self) -> float:
        """Signal lag + node start-up + cold start: how far ahead capacity is asked for."""
        return SIGNAL_LAG_S + self.node_ready_s + self.cold.cold_start_s

    @property
    def label(self) -> str:
        image = {"pulled": "image pulled", "prepulled": "image pre-pulled",
                 "given": "cold start as given"}[self.cold.name]
        return (f"{image}, release {self.release.name} ({self.release.scale_down_window_s} s + "
                f"consolidateAfter {self.release.consolidate_after_s // 60} min), steps "
                f"{'by tolerance' if self.steps == 'tolerance' else 'rounded'}")


def cold_start_options(plan: PlanInput, w: WorkloadInput, opt: HardwareOption
                       ) -> list[ColdStartOption]:
    """The cold starts the search may choose between (the input's own, when it gives one)."""
    if w.cold_start_s is not None:
        return [ColdStartOption("given", w.cold_start_s, 0.0, 0.0, "cold_start_s of the input")]
    # the replica as simulated (opt.hw: all its GPUs, its layout): a replica spanning nodes
    # starts on every node of its group at once, each pulling (or reading) the image and
    # streaming the whole checkpoint from its own volume (vLLM's streamer without
    # `distributed` reads every safetensors file on each worker), so the group's cold start
    # is one node's (serving/startup.py)
    parts = cold_start_medians(opt.hw, image_size_gb=DEFAULT_IMAGE_SIZE_GB, pull_image=True,
                               storage=DEFAULT_WEIGHT_STORAGE, loader=DEFAULT_WEIGHT_LOADER,
                               warm_compile_cache=False, skip_p2p_check=False)
    pulled_image = parts["image_pull_s"] + parts["image_extract_s"]
    rest = sum(parts.values()) - pulled_image
    pulled = ColdStartOption("pulled", rest + pulled_image, pulled_image, 0.0,
                             f"the {DEFAULT_IMAGE_SIZE_GB:g} GB image pulled and extracted on "
                             "each new node (61 and 96 MB/s, calibration row A17)")
    read_s = snapshot_image_read_s(DEFAULT_IMAGE_SIZE_GB, MAX_VOLUME_INIT_MIBPS)
    prepulled = ColdStartOption(
        "prepulled", rest + read_s, read_s,
        DEFAULT_IMAGE_SIZE_GB * SNAPSHOT_USD_PER_GB_MONTH / 30.0,
        f"the image pre-pulled on the node's data volume, restored from an EBS snapshot "
        f"initialized at {MAX_VOLUME_INIT_MIBPS} MiB/s ({read_s:.0f} s to read it, instead of "
        f"{pulled_image:.0f} s to pull and extract)")
    return {"choose": [pulled, prepulled], "always": [prepulled],
            "never": [pulled]}[w.prepulled_image]


def releases(plan: PlanInput, cold: ColdStartOption) -> list[Release]:
    """The cold-start rule, and fast (when it differs)."""
    rule = Release("rule", window_s(cold.cold_start_s, plan.cluster.node_ready_s),
                   consolidate_after_for(plan, cold.cold_start_s)[0])
    fast = Release("fast", MIN_SCALE_DOWN_WINDOW_S, MIN_CONSOLIDATE_AFTER_S)
    return [rule] if fast == Release("fast", rule.scale_down_window_s,
                                     rule.consolidate_after_s) else [rule, fast]


def all_configs(plan: PlanInput, w: WorkloadInput, opt: HardwareOption) -> list[TraceConfig]:
    return [TraceConfig(cold, release, steps, plan.cluster.node_ready_s)
            for cold in cold_start_options(plan, w, opt) for release in releases(plan, cold)
            for steps in STEP_MODES if steps == "rounded" or plan.cluster.scale_up_tolerance]


def schedule_wants(profile_rps: np.ndarray, sizing: Sizing, margin: float, config: TraceConfig,
                   ceiling: int) -> tuple[np.ndarray, float | None]:
    """(replicas wanted per minute of the day, the scale-up tolerance the steps need)."""
    wants = minute_wants(slot_replicas(profile_rps, sizing, margin, ceiling), config.lead_s)
    if config.steps == "rounded":
        return rounded_to_act(wants, ceiling), None
    return wants, step_tolerance(wants)


def proxy_replica_hours(wants: np.ndarray, config: TraceConfig) -> float:
    """Replica-hours a day the schedule bills, held `hold_s` after each drop (the ranking
    proxy; the simulations confirm or refute it)."""
    return float(held_replicas(wants, config.release.hold_s).mean()) * 24.0
