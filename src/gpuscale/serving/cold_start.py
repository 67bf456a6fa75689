"""Cold start as data: how long a replica takes from pod bound to ready, component by component.

pod bound -> image pull -> layer extract -> weight load -> engine init (P2P check, Dynamo
bytecode transform, torch.compile, CUDA-graph capture) -> ready. A fresh node adds node boot
(VM up + kubelet join), an optional driver install, and the device plugin advertising GPUs.

Every median below is a measured number from ../shared/reference/hardware-and-models.md
section 4 (rows A15-A18 of calibration.md check them); draws are lognormal around the median
with a named spread. Components that have no measurement for a model size are scaled between
the two measured sizes (a ~1.8B model, vLLM #20264, and a 70B model, vLLM #19824) by log of the
parameter count: compile and graph-capture work grow with the graph, not linearly with bytes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuscale.serving.performance import ReplicaHardware

# -- weight load: effective GB/s (bytes / wall time), row A16 [S13] and row A15 [S11] -----------
_A16_BYTES_GB = 15.0  # Llama-3-8B safetensors in the Run:ai streamer benchmark
WEIGHT_LOAD_GBPS: dict[tuple[str, str], float] = {
    ("gp3", "safetensors"): _A16_BYTES_GB / 47.99,  # default vLLM loader from EBS gp3
    ("gp3", "streamer"): _A16_BYTES_GB / 14.34,  # Run:ai Model Streamer, 16 threads
    ("io2", "streamer"): _A16_BYTES_GB / 7.53,  # io2, 8 threads
    # 70B FP8 (70.6 GB) in ~10 s from a hot page cache (vLLM #19824, row A15).
    ("page-cache", "safetensors"): 70.6 / 10.0,
    ("page-cache", "streamer"): 70.6 / 10.0,
    # Assumed, no public measurement in the reference: one local NVMe Gen4 drive ~3 GB/s read.
    ("local-nvme", "streamer"): 3.0,
}
# The default loader reads serially; on gp3 it reached 14.34/47.99 = 0.30 of the streamer's
# bandwidth. Assumed to hold on the storages where only the streamer was measured.
DEFAULT_LOADER_FRAC = 14.34 / 47.99
STORAGES = ("gp3", "io2", "local-nvme", "page-cache")
LOADERS = ("safetensors", "streamer")

# -- image pull + extract: 20.2 GB image, pull 5-6 min, extract 3-4 min (BentoML, row A17) ------
IMAGE_PULL_GBPS = 20.2 / 330.0  # 61 MB/s from the registry
IMAGE_EXTRACT_GBPS = 20.2 / 210.0  # 96 MB/s overlayfs layer extraction

# -- image pre-pulled on a node data volume restored from an EBS snapshot ----------------------
# Bottlerocket keeps containerd's images on its data volume; restored from a snapshot that
# holds the serving image, a fresh node starts the container without a pull (node launch +
# register ~30 s, then containers start at once: row "Bottlerocket + EBS snapshot with
# pre-pulled images", hardware-and-models.md section 4 [S17]). A volume created from a
# snapshot is filled from S3 as it is read, at a provisioned rate of 100-300 MiB/s when one
# is given (Amazon EBS "Provisioned Rate for Volume Initialization",
# docs.aws.amazon.com/ebs/latest/userguide/initalize-volume.html; Karpenter's EC2NodeClass
# `volumeInitializationRate`, 100-300). Bounded here by reading the whole image at that rate.
MAX_VOLUME_INIT_MIBPS = 300


def snapshot_image_read_s(image_size_gb: float, rate_mibps: float) -> float:
    """Seconds to read a pre-pulled image of `image_size_gb` from a volume initializing at
    `rate_mibps` (the whole image: an upper bound, a container opens only part of it)."""
    return image_size_gb * 1e9 / (rate_mibps * 2**20)


# -- engine init (vLLM mid-2025), seconds: (small model ~1.8B, 70B) ----------------------------
_SMALL_PARAMS, _LARGE_PARAMS = 1.83e9, 70.6e9  # #20264 (3.4 GiB BF16) and #19824 (70B FP8)
CUDA_GRAPH_S = (17.0, 60.0)  # graph capture: #20264 and #19824
COMPILE_COLD_S = (70.0 * 17.0 / 60.0, 70.0)  # 70 s cold at 70B; small assumed to scale as capture
COMPILE_WARM_S = (7.5, 7.5 * 60.0 / 17.0)  # 7.5 s from cache at small (#20264), scaled as capture
DYNAMO_S = (15.0 * 17.0 / 60.0, 15.0)  # 15 s at 70B (#19824); small scaled as capture
P2P_CHECK_TP8_S = 60.0  # all GPU pairs of TP8 (#19824); scales with the number of pairs

# -- node ready (row A18 [S15]) ------------------------------------------------------------------
NODE_PRESETS: dict[str, dict[str, float]] = {
    # EKS GPU AMI (drivers baked in): GPU nodes joined and ran pods in 4-6 min (autoscaler
    # #3464); of that, the device plugin advertised GPUs ~90 s after launch (device-plugin #291).
    "eks": {"vm_boot_join_s": 180.0, "driver_install_s": 0.0, "device_plugin_s": 90.0},
    # GKE 2022: VM up ~4.5 min, then the NVIDIA driver DaemonSet ~4.5 min (codalab #4042).
    "gke-driver-daemonset": {"vm_boot_join_s": 270.0, "driver_install_s": 270.0,
                             "device_plugin_s": 0.0},
    # Bottlerocket + EBS snapshot with pre-pulled images: launch + register + init ~30 s [S17].
    "prebaked": {"vm_boot_join_s": 30.0, "driver_install_s": 0.0, "device_plugin_s": 0.0},
}
DEFAULT_SIGMA = 0.25  # lognormal spread of each drawn component (~ +-28%)


def size_frac(total_params: float) -> float:
    """0 at the small measured model, 1 at 70B, log-linear between; not clamped above."""
    frac = math.log(total_params / _SMALL_PARAMS) / math.log(_LARGE_PARAMS / _SMALL_PARAMS)
    return max(0.0, frac)


def _scaled(pair: tuple[float, float], frac: float) -> float:
    small, large = pair
    return max(small, small + (large - small) * frac)


def weight_load_gbps(storage: str, loader: str) -> float:
    """Effective bandwidth of loading weights from `storage` with `loader`, GB/s."""
    if (storage, loader) in WEIGHT_LOAD_GBPS:
        return WEIGHT_LOAD_GBPS[(storage, loader)]
    return WEIGHT_LOAD_GBPS[(storage, "streamer")] * DEFAULT_LOADER_FRAC


def engine_init_medians(total_params: float, tp: int, *, warm_compile_cache: bool,
                        skip_p2p_check: bool) -> dict[str, float]:
    frac = size_frac(total_params)
    pairs = tp * (tp - 1) / (8 * 7)
    return {
        "p2p_check_s": 0.0 if skip_p2p_check or tp <= 1 else P2P_CHECK_TP8_S * pairs,
        "dynamo_s": _scaled(DYNAMO_S, frac),
        "compile_s": _scaled(COMPILE_WARM_S if warm_compile_cache else COMPILE_COLD_S, frac),
        "cuda_graph_s": _scaled(CUDA_GRAPH_S, frac),
    }


def cold_start_medians(hw: ReplicaHardware, *, image_size_gb: float, pull_image: bool,
                       storage: str, loader: str, warm_compile_cache: bool,
                       skip_p2p_check: bool, storage_gbps: float | None = None
                       ) -> dict[str, float]:
    """Median seconds of each replica cold-start component (no randomness)."""
    weight_gb = hw.model.weight_bytes(hw.weight_precision) / 1e9
    bandwidth = storage_gbps if storage_gbps is not None else weight_load_gbps(storage, loader)
    parts = {
        "image_pull_s": image_size_gb / IMAGE_PULL_GBPS if pull_image else 0.0,
        "image_extract_s": image_size_gb / IMAGE_EXTRACT_GBPS if pull_image else 0.0,
        "weight_load_s": weight_gb / bandwidth,
    }
    parts.update(engine_init_medians(hw.model.total_params, hw.tp,
                                     warm_compile_cache=warm_compile_cache,
                                     skip_p2p_check=skip_p2p_check))
    return parts


def draw_seconds(spec: Any, rng: np.random.Generator) -> float:
    """Draw a scenario `Duration` (kind fixed | lognormal with optional max_s)."""
    if spec.kind == "fixed":
        return spec.value_s
    value = float(spec.median_s * math.exp(spec.sigma * rng.standard_normal()))
    return min(value, spec.max_s) if spec.max_s else value


def cold_start_components(hw: ReplicaHardware, cold: Any, rng: np.random.Generator | None, *,
                          pull_image: bool) -> dict[str, float]:
    """Seconds per component for one replica start; `cold` is a scenario `ColdStart`.

    Explicit `image_pull` / `engine_init` durations in the scenario replace the derived
    components (backward compatible with scenarios written before components existed); with
    `rng=None` the medians are returned. Weight load is deterministic: bytes / bandwidth.
    """
    parts = cold_start_medians(hw, image_size_gb=cold.image_size_gb, pull_image=pull_image,
                               storage=cold.weight_storage, loader=cold.loader,
                               warm_compile_cache=cold.warm_compile_cache,
                               skip_p2p_check=cold.skip_p2p_check, storage_gbps=cold.storage_gbps)
    if rng is not None:
        for key in ("image_pull_s", "image_extract_s", "p2p_check_s", "dynamo_s", "compile_s",
                    "cuda_graph_s"):
            if parts[key] > 0:
                parts[key] *= math.exp(cold.sigma * rng.standard_normal())
    if cold.image_pull is not None:
        parts["image_pull_s"] = draw_seconds(cold.image_pull, rng) if pull_image and rng \
            else (_median(cold.image_pull) if pull_image else 0.0)
        parts["image_extract_s"] = 0.0  # the explicit duration covers pull + extract
    if cold.engine_init is not None:
        for key in ("p2p_check_s", "dynamo_s", "compile_s"):
            parts[key] = 0.0
        parts["cuda_graph_s"] = 0.0
        parts["engine_init_s"] = draw_seconds(cold.engine_init, rng) if rng \
            else _median(cold.engine_init)
    return parts


def _median(spec: Any) -> float:
    return spec.value_s if spec.kind == "fixed" else spec.median_s


def node_ready_components(preset: str = "eks") -> dict[str, float]:
    """Median seconds from node launch request to allocatable GPUs, by component."""
    return dict(NODE_PRESETS[preset])
