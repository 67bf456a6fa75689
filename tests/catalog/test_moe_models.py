"""The MoE models of the catalog against the headline figures their configs give
(../shared/reference/hardware-and-models.md 2, and the model cards for Llama 4)."""

from __future__ import annotations

import pytest

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.catalog.specs import Precision


@pytest.mark.parametrize(("name", "total_b", "active_b"), [
    ("DeepSeek-V3", 671.0, 37.6),
    ("DeepSeek-R1", 671.0, 37.6),
    ("Qwen3-235B-A22B", 235.1, 22.2),
    ("Qwen3-30B-A3B", 30.5, 3.35),
    ("gpt-oss-120b", 116.8, 5.7),
    ("gpt-oss-20b", 20.9, 4.2),
    ("Llama-4-Maverick-17B-128E", 400.0, 17.0),
    ("Llama-4-Scout-17B-16E", 109.0, 17.0),
])
def test_parameter_counts_match_the_headline_figures(name, total_b, active_b):
    model = get_model(name)
    assert model.total_params / 1e9 == pytest.approx(total_b, rel=0.015)
    assert model.active_params / 1e9 == pytest.approx(active_b, rel=0.02)


@pytest.mark.parametrize(("name", "kv_bytes_bf16"), [
    ("Qwen3-235B-A22B", 192_512),  # 188 KiB (reference table)
    ("gpt-oss-120b", 36_864),  # only the 18 full-attention layers grow: ~36 KiB asymptotically
    ("DeepSeek-R1", 70_272),  # the MLA latent, as DeepSeek-V3 (row A4)
])
def test_kv_bytes_per_token(name, kv_bytes_bf16):
    assert get_model(name).kv_bytes_per_token(Precision.BF16) == kv_bytes_bf16


def test_mla_attention_dims():
    """MLA prefills over decompressed heads (QK 192, V 128 wide) and decodes against the
    576-wide latent: prefill FLOPs per token pair are far below the latent's, decode's far
    above a GQA model's per cached byte."""
    ds, llama = get_model("DeepSeek-V3"), get_model("Llama-3.1-70B")
    assert ds.is_mla and not llama.is_mla
    assert ds.attention_flops_dim == 128 * (128 + 64 + 128) // 2
    assert ds.decode_attention_flops_per_context_token == 2 * 128 * (576 + 512)
    # FLOPs per cached KV byte (BF16 KV): MLA ~240 (compute-bound on H100), GQA 70B ~8.
    per_layer_bytes = ds.kv_bytes_per_token(Precision.BF16) / ds.layers
    assert ds.decode_attention_flops_per_context_token / per_layer_bytes > 200
    gqa_bytes = llama.kv_bytes_per_token(Precision.BF16) / llama.layers
    assert llama.decode_attention_flops_per_context_token / gqa_bytes < 20


def test_instance_network_per_gpu():
    assert get_instance_type("p5.48xlarge").network_gb_s_per_gpu == 50.0  # 3,200 Gbps / 8
    assert get_instance_type("p4d.24xlarge").network_gb_s_per_gpu == 6.25  # 400 Gbps / 8
    assert get_instance_type("g6e.2xlarge").network_gb_s_per_gpu == 0.0  # not listed
