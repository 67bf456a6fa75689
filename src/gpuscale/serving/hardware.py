"""The fixed inputs of the step-time model: one replica's GPU, model, precisions, parallelism and
engine host time, with the sustained rates derived from the catalog's efficiency factors.

`ReplicaHardware` is data plus read-only rates; the kernels that use them are in
`serving/kernels.py`, the step they add up to in `serving/step_time.py`, and the engine's
folded hot-path copy in `serving/performance.py` (StepCost).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscale.catalog.specs import GpuSpec, ModelSpec, Precision

# Host coefficients BLIS fitted on H100 vLLM traces [S2] (hardware-and-models.md 1.2), the
# default engine's host time per step and per sequence (BLIS's 32 us per layer was the launch
# gaps between kernels; the kernel floors now carry that term from kernel profiles).
HOST_STEP_S = 126e-6
HOST_SEQ_S = 4e-6
# PyTorch eager mode: the CPU launches each kernel (dispatch + cudaLaunchKernel). ~15 kernels
# per layer (6 elementwise, 4 GEMMs, attention + KV write, 2 all-reduces, 2 reshapes).
EAGER_KERNELS_PER_LAYER = 15
EAGER_LAUNCH_S = 17e-6  # engines.py cites the measurement (8B H100 eager vs graphs)


@dataclass(frozen=True)
class ReplicaHardware:
    """The fixed inputs of the step-time model for one replica (a TP group) and its engine."""

    gpu: GpuSpec
    model: ModelSpec
    weight_precision: Precision
    kv_precision: Precision
    tp: int
    # Multiplier on the whole step, kept for an engine whose host overhead is only known as a
    # ratio (vLLM 0.6's, serving/engines.py); 1.0 otherwise.
    step_time_factor: float = 1.0
    host_step_s: float = HOST_STEP_S  # exposed host time per step (scheduler, launch)
    host_seq_s: float = HOST_SEQ_S  # per sequence in the batch (sampling, bookkeeping)
    cuda_graphs: bool = True  # False: the GPU waits for per-kernel CPU launches
    custom_allreduce: bool = True  # one-shot kernel below 8 MB (vLLM, TRT-LLM); else NCCL
    eager_launch_s: float = EAGER_LAUNCH_S
    # CPU cost of each NCCL call an engine launches from Python outside CUDA graphs, exposed
    # because the collective waits for every rank's launch (serving/engines.py, `sarathi`).
    allreduce_launch_s: float = 0.0
    # Pipeline stages: the replica's `tp` GPUs form `pp` stages of tp / pp GPUs each (`tp` stays
    # the replica's GPU count, which pods, memory and cost read).
    pp: int = 1

    @property
    def tp_degree(self) -> int:
        """GPUs of one tensor-parallel group (one pipeline stage)."""
        return max(1, self.tp // self.pp)

    @property
    def flops_per_s(self) -> float:
        """Sustained GEMM FLOP/s of one TP group at the weight precision."""
        return self.gpu.sustained_flops(self.weight_precision) * self.tp_degree

    @property
    def attention_flops_per_s(self) -> float:
        """Sustained FLOP/s of attention: BF16 whatever the weights (FlashAttention in BF16)."""
        return self.gpu.sustained_flops(Precision.BF16) * self.tp_degree

    @property
    def bytes_per_s(self) -> float:
        """Sustained HBM bytes/s of one TP group."""
        return self.gpu.memory_bandwidth_tbps * 1e12 * self.gpu.hbm_efficiency * self.tp_degree

    def _attention_frac(self, frac: float | None) -> float:
        """A profiled attention kernel's own fraction of peak, else the GEMM efficiency times
        the GPU's attention compute factor (GpuSpec.attention_compute_factor)."""
        if frac is None:
            return self.gpu.compute_efficiency * self.gpu.attention_compute_factor
        return frac

    @property
    def attention_prefix_flops_per_s(self) -> float:
        """Prefill attention of a chunk over its cached prefix (GpuSpec.attention_prefix_frac)."""
        return self.gpu.peak_flops(Precision.BF16) * self.tp_degree \
            * self._attention_frac(self.gpu.attention_prefix_frac)

    @property
    def attention_causal_flops_per_s(self) -> float:
        """Prefill attention of a chunk over itself, causal (GpuSpec.attention_causal_frac)."""
        return self.gpu.peak_flops(Precision.BF16) * self.tp_degree \
            * self._attention_frac(self.gpu.attention_causal_frac)

    @property
    def attention_kv_bytes_per_s(self) -> float:
        """HBM bytes/s at which decode attention reads the KV cache (a GQA model's batches pay
        GpuSpec.attention_gqa_batch_overhead_frac on top of a uniform-batch profile's rate)."""
        frac = self.gpu.attention_decode_bw_frac
        rate = self.gpu.memory_bandwidth_tbps * 1e12 * self.tp_degree \
            * (self.gpu.hbm_efficiency * self.gpu.attention_bw_factor if frac is None else frac)
        if self.model.q_heads > self.model.kv_heads:
            rate /= 1.0 + self.gpu.attention_gqa_batch_overhead_frac
        return rate

    @property
    def attention_decode_floor_s(self) -> float:
        floor = self.gpu.attention_decode_floor_us
        return self.kernel_floor_s if floor is None else floor * 1e-6

    @property
    def attention_prefill_floor_s(self) -> float:
        floor = self.gpu.attention_prefill_floor_us
        return self.kernel_floor_s if floor is None else floor * 1e-6

    @property
    def elementwise_bytes_per_s(self) -> float:
        return self.gpu.memory_bandwidth_tbps * 1e12 * self.gpu.elementwise_bw_frac \
            * self.tp_degree

    @property
    def kv_bytes_per_token(self) -> float:
        return self.model.kv_bytes_per_token(self.kv_precision)

    @property
    def kernel_floor_s(self) -> float:
        return self.gpu.kernel_floor_us * 1e-6
