"""Frozen GPU, model and instance-type specs loaded from the YAML files beside this module."""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import cache

import yaml

from gpuscale.errors import UserInputError
from gpuscale.units import GIB


class Precision(str, Enum):
    """Weight and KV-cache precision (`bytes_per_elem` gives its storage cost).

    The FP4 formats store a 4-bit E2M1 value per element plus a shared scale: NVFP4 one FP8
    (E4M3) scale per 16 elements (4.5 bits), MXFP4 one E8M0 scale per 32 (4.25 bits); the
    per-tensor FP32 scale of NVFP4 is negligible. Sources: the OCP Microscaling Formats (MX)
    v1.0 spec (MXFP4: block 32, E8M0 scale); NVIDIA's "Introducing NVFP4" technical blog
    (2025-06: block 16, E4M3 scale, plus a per-tensor FP32 scale).
    """

    BF16 = "bf16"
    FP8 = "fp8"
    NVFP4 = "nvfp4"
    MXFP4 = "mxfp4"

    @property
    def bytes_per_elem(self) -> float:
        return _BYTES_PER_ELEM[self.value]

    @property
    def is_fp4(self) -> bool:
        return self.value in _FP4


# Integers for the 16- and 8-bit formats, so their byte counts stay exact integers.
_BYTES_PER_ELEM: dict[str, float] = {"bf16": 2, "fp8": 1, "nvfp4": (4 + 8 / 16) / 8,
                                     "mxfp4": (4 + 8 / 32) / 8}
_FP4 = frozenset({"nvfp4", "mxfp4"})


@dataclass(frozen=True)
class GpuSpec:
    name: str
    bf16_tflops: float
    fp8_tflops: float | None
    memory_gib: float
    memory_bandwidth_tbps: float
    link_gbps_per_direction: float
    tdp_w: float
    hbm_efficiency: float
    compute_efficiency: float
    efficiency_source: str
    source: str
    # Measured all-reduce per TP degree, as (tp, value) pairs sorted by tp (gpus.yaml gives maps):
    # the effective bus bandwidth as a fraction of `link_gbps_per_direction` and the per-collective
    # latency of an affine fit (time = latency + ring bus bytes / (frac x link)). Empty = the
    # datasheet link at 100% and aiconfigurator's 10 us p2p latency (the model before the fit).
    allreduce_bus_frac: tuple[tuple[int, float], ...] = ()
    allreduce_latency_us: tuple[tuple[int, float], ...] = ()
    allreduce_source: str = "datasheet link bandwidth, aiconfigurator p2p latency"
    # FP8 GEMMs reach this fraction of the BF16 `compute_efficiency` (per-tensor scaling and
    # smaller tiles keep them further from their dense peak; gpus.yaml gives the source and the
    # row that fixes it). 1.0 = no FP8 penalty.
    fp8_efficiency_factor: float = 1.0
    # Fixed GPU time of one small kernel (launch-to-end at one token), in us: the floor every
    # GEMM, norm, activation and attention kernel of a layer pays (gpus.yaml gives the profile).
    kernel_floor_us: float = 4.0
    # Elementwise kernels (norms, activation, RoPE, residual adds) stream their bytes at this
    # fraction of the datasheet HBM bandwidth (measured slope of Vidur's mlp.csv, gpus.yaml).
    elementwise_bw_frac: float = 0.55
    # Small-message all-reduce (< 8 MiB), per TP degree: (payload bytes, us) points of the
    # measured NCCL curve, interpolated linearly; above the last point the affine fit applies.
    allreduce_small_us: tuple[tuple[int, tuple[tuple[int, float], ...]], ...] = ()
    # The same for the engines' own IPC all-reduce kernel (vLLM's custom all-reduce), where
    # one was measured on this GPU (MI300X); empty = the affine fit at every size, as the
    # engines' one-shot kernels are taken on NVIDIA GPUs (`allreduce_s`).
    allreduce_custom_small_us: tuple[tuple[int, tuple[tuple[int, float], ...]], ...] = ()
    # Attention kernels measured on their own (gpus.yaml gives the profile); None = the GEMM
    # factors (compute_efficiency of the BF16 peak, hbm_efficiency) and kernel_floor_us.
    # Prefill: the chunk's attention over its cached prefix and over itself (causal) reach
    # different fractions of the BF16 dense peak; decode streams the KV cache at its own
    # fraction of HBM; each decode / prefill attention kernel of a layer has its own floor.
    attention_prefix_frac: float | None = None
    attention_causal_frac: float | None = None
    attention_decode_bw_frac: float | None = None
    attention_decode_floor_us: float | None = None
    attention_prefill_floor_us: float | None = None
    # Decode attention of a GQA model over a real batch (mixed context lengths) is this much
    # slower than the uniform-length batches a profile times (Vidur's correction, gpus.yaml);
    # 0 where the decode rate is not read off such a profile.
    attention_gqa_batch_overhead_frac: float = 0.0
    # Dense FP4 tensor-core peak and the FP4 formats the tensor cores take natively ("nvfp4",
    # "mxfp4"; Blackwell both, CDNA4 MXFP4 only); gpus.yaml gives the datasheets. Without one
    # of them an FP4 checkpoint runs weight-only at the BF16 rate (`peak_flops`).
    fp4_tflops: float | None = None
    fp4_formats: tuple[str, ...] = ()
    # FP4 GEMMs reach this fraction of `compute_efficiency` x the FP4 peak (1.0: assumed, no
    # FP4 GEMM profile read; gpus.yaml says so per GPU).
    fp4_efficiency_factor: float = 1.0
    # Decode attention (the paged KV read) reaches this fraction of `hbm_efficiency` x HBM, and
    # prefill attention this fraction of the GEMM compute rate, where no attention profile gives
    # the rates (attention_*_frac): ROCm's paged-attention and FlashAttention kernels are not
    # NVIDIA's (gpus.yaml gives the source per GPU). 1.0 = the GEMM factors.
    attention_bw_factor: float = 1.0
    attention_compute_factor: float = 1.0
    vendor: str = "nvidia"  # "amd": ROCm engines only (TensorRT-LLM is CUDA-only)

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    def allreduce_bus_bytes_per_s_and_latency_s(self, tp: int) -> tuple[float, float]:
        """(effective bus bandwidth in bytes/s, latency in s) of one all-reduce over `tp` GPUs.

        Takes the entry of the largest measured TP degree <= tp (the smallest one below it), so
        a TP degree between two profiled ones gets the nearer-below, slower-fabric value.
        """
        link = self.link_gbps_per_direction * 1e9
        if not self.allreduce_bus_frac:
            return link, 10e-6
        frac = _at_tp(self.allreduce_bus_frac, tp)
        latency_us = _at_tp(self.allreduce_latency_us, tp)
        return frac * link, latency_us * 1e-6

    def allreduce_s(self, tp: int, payload_bytes: float, custom: bool = False) -> float:
        """One all-reduce of `payload_bytes` over `tp` GPUs: the measured small-message curve
        below its last point (NCCL's LL/LL128 protocols are flat there, not affine), else
        latency + ring bus bytes / effective bus bandwidth. `custom`: the engine's own kernel's
        curve (`allreduce_custom_small_us`) instead of NCCL's."""
        bus, latency_s = self.allreduce_bus_bytes_per_s_and_latency_s(tp)
        affine = latency_s + 2.0 * (tp - 1) / tp * payload_bytes / bus
        curves = self.allreduce_custom_small_us if custom else self.allreduce_small_us
        if not curves:
            return affine
        points = _at_tp(curves, tp)
        last_bytes, _last_us = points[-1]
        if payload_bytes >= last_bytes:
            return affine
        if payload_bytes <= points[0][0]:
            return points[0][1] * 1e-6
        for (b0, t0), (b1, t1) in itertools.pairwise(points):
            if payload_bytes <= b1:
                return (t0 + (t1 - t0) * (payload_bytes - b0) / (b1 - b0)) * 1e-6
        return affine

    def sustained_flops(self, precision: Precision) -> float:
        """Peak x compute efficiency, with the FP8 (FP4) factor on GPUs that run FP8 (that FP4
        format) natively."""
        flops = self.peak_flops(precision) * self.compute_efficiency
        if precision is Precision.FP8 and self.fp8_tflops:
            flops *= self.fp8_efficiency_factor
        elif self.runs_fp4(precision):
            flops *= self.fp4_efficiency_factor
        return flops

    def peak_flops(self, precision: Precision) -> float:
        """Dense peak FLOP/s; FP8 falls back to BF16 on GPUs without FP8 tensor cores, and an
        FP4 format the tensor cores lack runs weight-only (W4A16: FP4 weights dequantized to
        BF16 in the GEMM, as vLLM's Marlin FP4 and gpt-oss's MXFP4 kernels on Hopper do), so
        at the BF16 rate; its weights still stream at 4 bits."""
        if precision is Precision.FP8 and self.fp8_tflops:
            return self.fp8_tflops * 1e12
        if self.runs_fp4(precision):
            assert self.fp4_tflops is not None
            return self.fp4_tflops * 1e12
        return self.bf16_tflops * 1e12

    def runs_fp4(self, precision: Precision) -> bool:
        """Whether this GPU's tensor cores multiply `precision` (an FP4 format) natively."""
        return precision.value in self.fp4_formats and bool(self.fp4_tflops)


def _at_tp(pairs, tp: int):
    below = [v for k, v in pairs if k <= tp]
    return below[-1] if below else pairs[0][1]


@dataclass(frozen=True)
class ModelSpec:
    """Transformer shapes; derived counts are properties (tested against headline figures)."""

    name: str
    layers: int
    hidden: int
    q_heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    max_context_tokens: int
    source: str
    num_experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    dense_ffn: int = 0
    attention_bias: bool = False
    attention_params_per_layer: int | None = None
    kv_elems_per_token_per_layer: int | None = None
    # config.json `tie_word_embeddings`: the LM head is the input embedding, stored once.
    # Only the stored weights (`parameter_count`, `weight_bytes`) change; the step-time model
    # keeps its untied convention (one lookup table + one LM-head GEMM).
    tied_embeddings: bool = False
    # Weights as the checkpoint stores them (config.json `quantization_config`): "fp8" for an
    # FP8 checkpoint, which vLLM serves in fp8 without --quantization; None = bf16.
    checkpoint_precision: str | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def tp_error(self, tp: int) -> str:
        """Why vLLM cannot shard this model over `tp` GPUs ("" if it can): the attention heads
        are split across the TP group, so tp must divide them."""
        if self.q_heads % tp == 0:
            return ""
        fits = [t for t in (1, 2, 4, 8, 16, 32, 64) if self.q_heads % t == 0]
        return (f"tp={tp} does not divide the {self.q_heads} attention heads of {self.name}; "
                f"use one of {', '.join(map(str, fits))}")

    @property
    def attention_params(self) -> int:
        """Q, K, V and O projection parameters of one layer (plus biases where present)."""
        if self.attention_params_per_layer is not None:
            return self.attention_params_per_layer
        q_dim = self.q_heads * self.head_dim
        kv_dim = self.kv_heads * self.head_dim
        params = self.hidden * (q_dim + 2 * kv_dim) + q_dim * self.hidden
        if self.attention_bias:
            params += q_dim + 2 * kv_dim
        return params

    @property
    def expert_params(self) -> int:
        """One gated MLP (up, gate, down) of width `ffn`."""
        return 3 * self.hidden * self.ffn

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def total_params(self) -> int:
        embeddings = 2 * self.vocab * self.hidden  # input embedding + untied LM head
        attention = self.layers * self.attention_params
        if not self.is_moe:
            mlp = self.layers * self.expert_params
        else:
            dense = self.dense_layers * 3 * self.hidden * self.dense_ffn
            per_moe_layer = (self.num_experts + self.shared_experts) * self.expert_params
            router = self.hidden * self.num_experts
            mlp = dense + self.moe_layers * (per_moe_layer + router)
        return embeddings + attention + mlp

    @property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: shared + top-k experts only)."""
        if not self.is_moe:
            return self.total_params
        embeddings = 2 * self.vocab * self.hidden
        attention = self.layers * self.attention_params
        dense = self.dense_layers * 3 * self.hidden * self.dense_ffn
        active_experts = self.experts_per_token + self.shared_experts
        moe = self.moe_layers * (
            active_experts * self.expert_params + self.hidden * self.num_experts
        )
        return embeddings + attention + dense + moe

    def kv_bytes_per_token(self, kv_precision: Precision) -> float:
        """K and V bytes per token over all layers: 2 x layers x kv_heads x head_dim x bytes.

        MLA models (DeepSeek-V3) cache one latent of `kv_elems_per_token_per_layer` elements.
        Row A4 of calibration.md checks this exactly.
        """
        elems = self.kv_elems_per_token_per_layer or 2 * self.kv_heads * self.head_dim
        return self.layers * elems * kv_precision.bytes_per_elem

    @property
    def parameter_count(self) -> int:
        """Parameters as stored (what a model card counts): a tied LM head once."""
        return self.total_params - (self.vocab * self.hidden if self.tied_embeddings else 0)

    def weight_bytes(self, precision: Precision) -> float:
        """Stored weight bytes. FP4 checkpoints quantize the layers' linear weights only: the
        embedding and LM head stay BF16 (NVIDIA ModelOpt NVFP4 and AMD Quark MXFP4 exclude
        lm_head; the embedding is a lookup table). FP8 keeps the one-precision count it had
        (its KV pools are what rows A5-A13 checked)."""
        if not precision.is_fp4:
            return self.parameter_count * precision.bytes_per_elem
        layer_params = self.total_params - 2 * self.vocab * self.hidden
        embedding_params = self.parameter_count - layer_params
        return layer_params * precision.bytes_per_elem \
            + embedding_params * Precision.BF16.bytes_per_elem


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: str
    num_gpus: int
    vcpus: int
    memory_gib: float
    on_demand_usd_per_hour: float
    nvlink_domain_gpus: int
    zones: tuple[str, ...]
    source: str
    verified: bool = True
    spot_discount_frac: float = 0.3
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def spot_usd_per_hour(self) -> float:
        """Assumed spot price: on-demand x (1 - discount); kwok's 0.7 convention by default."""
        return self.on_demand_usd_per_hour * (1.0 - self.spot_discount_frac)

    def price_usd_per_hour(self, capacity_type: str) -> float:
        return self.spot_usd_per_hour if capacity_type == "spot" else self.on_demand_usd_per_hour

    @property
    def gpu_spec(self) -> GpuSpec:
        return get_gpu(self.gpu)


def _packaged_text(filename: str) -> str:
    """A data file beside this module, as `importlib.resources.files(...).read_text()` gives it.

    Read through this module's own loader (a folder or a zip archive, wherever the package
    was imported from): `resources.files` imports its readers, and they zipfile and
    importlib.util, which nothing else in a run needs (~10 ms of `simulate`). Text as
    `read_text` returns it: UTF-8, universal newlines."""
    get_data = getattr(getattr(__spec__, "loader", None), "get_data", None)
    if __file__ and get_data is not None:
        data = get_data(os.path.join(os.path.dirname(__file__), filename))
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    from importlib import resources

    return resources.files("gpuscale.catalog").joinpath(filename).read_text()


def _load(filename: str) -> dict:
    text = _packaged_text(filename)
    # libyaml's parser when PyYAML has it (same SafeConstructor, same values; ~6x faster on
    # the catalog, which every run loads); the pure-Python one otherwise.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# Entries of the user's catalog files (`--catalog`, GPUSCALE_CATALOG), already validated by
# catalog/user.py: section -> name -> spec. They add to or replace the built-in entries.
_USER: dict[str, dict] = {"models": {}, "gpus": {}, "instance_types": {}}


def set_user_entries(user_models: dict[str, ModelSpec], user_gpus: dict[str, GpuSpec],
                     user_instance_types: dict[str, InstanceType],
                     user_engines: dict[str, dict] | None = None) -> None:
    """Install the user's catalog entries (replacing any installed before) for this process;
    `user_engines`: the engine host-time overrides (none when not given)."""
    _USER.update(models=dict(user_models), gpus=dict(user_gpus),
                 instance_types=dict(user_instance_types))
    set_user_engine_overrides(user_engines or {})
    for table in (gpus, models, instance_types):
        table.cache_clear()


# Engine host-time overrides from a catalog's `engines:` section (catalog/user.py validates):
# profile name -> {"host_step_s", "host_seq_s", "source"}; serving/engines.py applies them.
_USER_ENGINES: dict[str, dict] = {}


def set_user_engine_overrides(overrides: dict[str, dict]) -> None:
    _USER_ENGINES.clear()
    _USER_ENGINES.update({k: dict(v) for k, v in overrides.items()})


def user_engine_overrides() -> dict[str, dict]:
    return {k: dict(v) for k, v in _USER_ENGINES.items()}


def user_entries() -> tuple[dict, dict, dict, dict]:
    """(models, gpus, instance types, engine overrides) installed from user catalogs, for
    `set_user_entries` in another process (sweep workers start without them)."""
    return (dict(_USER["models"]), dict(_USER["gpus"]), dict(_USER["instance_types"]),
            user_engine_overrides())


def user_entry_names(section: str) -> frozenset[str]:
    """Names in `section` ("models", "gpus", "instance_types") that come from a user catalog."""
    return frozenset(_USER[section])


@cache
def gpus() -> dict[str, GpuSpec]:
    return {**_builtin_gpus(), **_USER["gpus"]}


@cache
def models() -> dict[str, ModelSpec]:
    return {**_builtin_models(), **_USER["models"]}


@cache
def instance_types() -> dict[str, InstanceType]:
    return {**_builtin_instance_types(), **_USER["instance_types"]}


@cache
def _builtin_gpus() -> dict[str, GpuSpec]:
    out = {}
    for name, spec in _load("gpus.yaml").items():
        for key in ("allreduce_bus_frac", "allreduce_latency_us"):
            if key in spec:
                spec[key] = tuple(sorted((int(k), float(v)) for k, v in spec[key].items()))
        for key in ("allreduce_small_us", "allreduce_custom_small_us"):
            if key in spec:
                spec[key] = tuple(sorted((int(k), tuple((int(b), float(t)) for b, t in v))
                                         for k, v in spec[key].items()))
        if "fp4_formats" in spec:
            spec["fp4_formats"] = tuple(spec["fp4_formats"])
        out[name] = GpuSpec(name=name, **spec)
    return out


@cache
def _builtin_models() -> dict[str, ModelSpec]:
    return {name: ModelSpec(name=name, **spec) for name, spec in _load("models.yaml").items()}


@cache
def _builtin_instance_types() -> dict[str, InstanceType]:
    out = {}
    for name, spec in _load("instance_types.yaml").items():
        spec = dict(spec, zones=tuple(spec["zones"]))
        out[name] = InstanceType(name=name, **spec)
    return out


def _lookup(kind: str, table: dict, name: str):
    if name in table:
        return table[name]
    close = difflib.get_close_matches(name, list(table), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(table)}"
    raise UserInputError(f"unknown {kind} {name!r}{hint}")


def known_name(lookup: Callable[[str], object], name: str) -> str:
    """For pydantic validators: check a catalog name at load time, so a typo is reported with
    its file and field (the lookup's "did you mean" hint kept) rather than later without them."""
    try:
        lookup(name)
    except UserInputError as exc:
        raise ValueError(str(exc)) from None
    return name


def get_gpu(name: str) -> GpuSpec:
    return _lookup("GPU", gpus(), name)


def get_model(name: str) -> ModelSpec:
    return _lookup("model", models(), name)


def get_instance_type(name: str) -> InstanceType:
    return _lookup("instance type", instance_types(), name)
