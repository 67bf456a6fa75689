"""Expert parallelism and DP attention as a deployment states them: the fields a scenario's
`model:`, a P/D role and a calibration row share, and their checks.

The engines' own flags map onto them (importer/*_args.py): SGLang `--tp-size N --ep-size N
--enable-dp-attention --dp-size N`; vLLM `--tensor-parallel-size T --data-parallel-size D
--enable-expert-parallel` (tp = T x D GPUs, dp = D); TensorRT-LLM `--tp_size N --ep_size N`
with `enable_attention_dp: true`. The physics is serving/expert_parallel.py.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.catalog.specs import ModelSpec


class ExpertParallelism(BaseModel):
    """EP and DP-attention settings of one replica (`tp` GPUs per pipeline stage)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ep: int = Field(1, ge=1, le=1024, description=(
        "Expert-parallel GPUs: the routed experts sit whole on `ep` GPUs, (experts + "
        "redundant_experts) / ep on each (SGLang --ep-size, vLLM --enable-expert-parallel: "
        "ep = the replica's GPUs, TensorRT-LLM --ep_size). 1 = every expert split over the TP "
        "group. MoE models only; divides tp."))
    dp_attention: bool = Field(False, description=(
        "Attention as data-parallel ranks (SGLang --enable-dp-attention, vLLM "
        "--data-parallel-size, TensorRT-LLM enable_attention_dp): each rank of tp / dp GPUs "
        "keeps the KV of its own sequences, so an MLA latent is not copied on every GPU; "
        "engine limits (max_num_seqs, max_num_batched_tokens) are per rank. MoE models only."))
    dp: int | None = Field(None, ge=1, description=(
        "Attention DP ranks with dp_attention (SGLang --dp-size, vLLM --data-parallel-size); "
        "None = tp (one GPU per rank, as the wide-EP deployments run)."))
    redundant_experts: int = Field(0, ge=0, description=(
        "Extra physical expert slots for EPLB's replicas of hot experts (SGLang "
        "--ep-num-redundant-experts, vLLM --num-redundant-experts; DeepSeek's 256 + 32 = 288 "
        "make EP 72 possible). Lowers the expert load imbalance (docs/serving.md)."))
    eplb: bool = Field(False, description=(
        "The expert-parallel load balancer places experts by measured load (SGLang "
        "--enable-eplb, vLLM --enable-eplb); the imbalance then is EPLB's residual."))
    two_batch_overlap: bool = Field(False, description=(
        "Split each step into two micro-batches so one's all-to-all runs under the other's "
        "compute (SGLang --enable-two-batch-overlap, vLLM --enable-dbo): a layer costs the "
        "longer of compute and communication instead of their sum."))

    def attention_ranks(self, tp: int) -> int:
        """DP attention ranks of a replica of `tp` GPUs per stage (1 without DP attention)."""
        if not self.dp_attention:
            return 1
        return self.dp or tp

    def parallelism_error(self, model: ModelSpec, tp: int) -> str:
        """Why this layout cannot run `model` on `tp` GPUs per stage ("" if it can)."""
        uses_experts = self.ep > 1 or self.dp_attention or self.redundant_experts or self.eplb
        if uses_experts and not model.is_moe:
            return (f"ep / dp_attention / redundant_experts / eplb apply to MoE models; "
                    f"{model.name} is dense (run data parallelism as replicas)")
        if tp % self.ep:
            return f"ep={self.ep} must divide tp={tp} (the experts sit on the replica's GPUs)"
        slots = model.num_experts + self.redundant_experts
        if self.ep > 1 and slots % self.ep:
            return (f"{model.num_experts} experts + {self.redundant_experts} redundant do not "
                    f"split over ep={self.ep} GPUs; set redundant_experts so that ep divides "
                    f"their sum")
        if self.dp is not None and not self.dp_attention:
            return "dp (attention DP ranks) needs dp_attention: true"
        ranks = self.attention_ranks(tp)
        if tp % ranks:
            return f"dp={ranks} must divide tp={tp} (each attention rank is tp / dp GPUs)"
        return model.tp_error(tp // ranks)
