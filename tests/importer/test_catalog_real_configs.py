"""Real models' config.json (field sets as published on Hugging Face, extra keys and all) give
parameter counts close to the model cards', dense, MoE (Mixtral, Qwen2-MoE's shared expert,
Llama 4's shared expert and interleaved dense layers), MLA (DeepSeek-V2-Lite), tied
embeddings (Gemma) and multimodal `text_config` wrappers; what the catalog cannot count is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpuscale.audit.loader import parse_text
from gpuscale.catalog import Precision, get_model
from gpuscale.errors import UserInputError
from gpuscale.importer.catalog_files import use_catalogs
from gpuscale.importer.vllm_args import VllmArgs
from gpuscale.importer.workload import ServingWorkload, model_section

from .bundle import load_docs, of_kind

BUNDLES = Path(__file__).resolve().parent / "bundles"

MISTRAL_7B_V01 = {  # mistralai/Mistral-7B-v0.1
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32000}
MIXTRAL = {  # mistralai/Mixtral-8x7B-v0.1
    "architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_local_experts": 8, "output_router_logits": False, "rope_theta": 1e6,
    "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "vocab_size": 32000}
LLAMA4_TEXT = {  # the text_config both Llama 4 models share, without the expert layout
    "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 202048, "max_position_embeddings": 10485760,
    "num_experts_per_tok": 1, "rope_scaling": {"factor": 16.0, "rope_type": "llama3"},
    "attention_chunk_size": 8192, "no_rope_layers": [], "use_qk_norm": True}
SCOUT = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
         "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34},
         "text_config": {**LLAMA4_TEXT, "num_local_experts": 16,
                         "interleave_moe_layer_step": 1, "intermediate_size_mlp": 16384}}
MAVERICK = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
            "text_config": {**LLAMA4_TEXT, "num_local_experts": 128,
                            "interleave_moe_layer_step": 2, "intermediate_size_mlp": 16384}}
GEMMA3_27B = {  # google/gemma-3-27b-it: its text_config leaves vocab_size to the class default
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256,
    "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                    "model_type": "gemma3_text", "num_attention_heads": 32,
                    "num_hidden_layers": 62, "num_key_value_heads": 16,
                    "query_pre_attn_scalar": 168, "rope_scaling": {"factor": 8.0,
                                                                   "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}}


def load(tmp_path: Path, models: dict, files: dict | None = None):
    for name, content in (files or {}).items():
        (tmp_path / name).write_text(json.dumps(content))
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"models": models}))
    use_catalogs([path])


def test_bundle_catalog_models_match_their_published_counts():
    use_catalogs([BUNDLES / "catalog.yaml"])
    # Model cards / Hugging Face parameter counts.
    assert get_model("Qwen2.5-32B").parameter_count == pytest.approx(32.8e9, rel=0.01)
    assert get_model("Mistral-7B-Instruct-v0.3").parameter_count == pytest.approx(
        7.25e9, rel=0.01)
    # Gemma 2 ties its LM head to the embedding (the class default; the file omits the key):
    # 27.2B stored, 1.2B fewer than counting the head apart.
    gemma = get_model("gemma-2-27b")
    assert gemma.tied_embeddings
    assert gemma.parameter_count == pytest.approx(27.2e9, rel=0.01)
    assert gemma.weight_bytes(Precision.BF16) == 2 * gemma.parameter_count
    # Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated, with its 4-expert-wide shared expert.
    qmoe = get_model("Qwen1.5-MoE-A2.7B")
    assert qmoe.shared_experts == 4
    assert qmoe.total_params == pytest.approx(14.3e9, rel=0.02)
    assert qmoe.active_params == pytest.approx(2.7e9, rel=0.03)
    # DeepSeek-V2-Lite: 15.7B total; MLA caches 512 + 64 elements per token per layer.
    ds = get_model("DeepSeek-V2-Lite")
    assert ds.total_params == pytest.approx(15.7e9, rel=0.01)
    assert ds.kv_bytes_per_token(Precision.BF16) == 27 * (512 + 64) * 2


def test_mistral_and_mixtral_config_json(tmp_path):
    load(tmp_path, {"m7": {"config_json": "m7.json"}, "mx": {"config_json": "mx.json"}},
         {"m7.json": MISTRAL_7B_V01, "mx.json": MIXTRAL})
    assert get_model("m7").parameter_count == pytest.approx(7.24e9, rel=0.005)
    mixtral = get_model("mx")
    assert mixtral.total_params == pytest.approx(46.7e9, rel=0.005)
    assert mixtral.active_params == pytest.approx(12.9e9, rel=0.01)


def test_llama4_shared_expert_and_interleaved_dense_layers(tmp_path):
    load(tmp_path, {"scout": {"config_json": "s.json"}, "maverick": {"config_json": "m.json"}},
         {"s.json": SCOUT, "m.json": MAVERICK})
    scout, maverick = get_model("scout"), get_model("maverick")
    assert (scout.shared_experts, scout.dense_layers) == (1, 0)
    # Model cards: 109B / 400B total (with the vision encoder, not counted here), 17B active.
    assert scout.total_params == pytest.approx(109e9, rel=0.02)
    assert maverick.total_params == pytest.approx(400e9, rel=0.01)
    assert (maverick.dense_layers, maverick.dense_ffn) == (24, 16384)
    for model in (scout, maverick):
        assert model.active_params == pytest.approx(17e9, rel=0.02)


def test_text_config_fields_missing_from_the_file_can_be_given_beside_it(tmp_path):
    with pytest.raises(UserInputError, match=r"models\.g3\.text_config\.vocab_size.*beside"):
        load(tmp_path, {"g3": {"config_json": "g3.json"}}, {"g3.json": GEMMA3_27B})
    load(tmp_path, {"g3": {"config_json": "g3.json", "vocab_size": 262208}},
         {"g3.json": GEMMA3_27B})
    g3 = get_model("g3")
    assert (g3.vocab, g3.layers, g3.tied_embeddings) == (262208, 62, True)
    assert g3.parameter_count == pytest.approx(27.0e9, rel=0.01)  # text part of "27B"


def test_qwen2_attention_bias_is_counted_without_the_key(tmp_path):
    load(tmp_path, {"q": {"config_json": "q.json"}},
         {"q.json": json.loads((BUNDLES / "qwen2.5-32b.config.json").read_text())})
    q = get_model("q")
    assert q.attention_bias
    assert q.attention_params == 5120 * (5120 + 2 * 1024) + 5120 * 5120 + 5120 + 2 * 1024


@pytest.mark.parametrize(("fields", "field"), [
    ({"shared_expert_intermediate_size": 1000}, "shared_expert_intermediate_size"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ({"mlp_only_layers": "0,1"}, "mlp_only_layers"),
    ({"decoder_sparse_step": 0}, "decoder_sparse_step"),
])
def test_moe_fields_the_catalog_cannot_count_are_refused(tmp_path, fields, field):
    cfg = {**json.loads((BUNDLES / "qwen1.5-moe.config.json").read_text()), **fields}
    with pytest.raises(UserInputError, match=rf"models\.m\.{field}"):
        load(tmp_path, {"m": {"config_json": "m.json"}}, {"m.json": cfg})


FP8_QUANT = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
             "weight_block_size": [128, 128]}  # DeepSeek-V3's and Qwen3-*-FP8's


def test_fp8_checkpoint_is_served_in_fp8_and_other_quantizations_are_refused(tmp_path):
    load(tmp_path, {"m7": {"config_json": "m7.json"}},
         {"m7.json": {**MISTRAL_7B_V01, "quantization_config": FP8_QUANT}})
    assert get_model("m7").checkpoint_precision == "fp8"
    (obj,) = parse_text(yaml.safe_dump(of_kind(load_docs(), "Deployment")), "d.yaml")
    wl = ServingWorkload(obj, ("spec", "template"), obj.get("spec", "template"), {},
                         VllmArgs(values={"model": "acme/m7"}), 1)
    assert model_section(wl)["precision"] == "fp8"
    assert any("quantization_config is fp8" in n for n in wl.notes)
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128}
    with pytest.raises(UserInputError, match=r"models\.m7\.quantization_config.*awq"):
        load(tmp_path, {"m7": {"config_json": "m7.json"}},
             {"m7.json": {**MISTRAL_7B_V01, "quantization_config": awq}})


def test_config_json_errors_name_config_json_fields(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps(MISTRAL_7B_V01))
    with pytest.raises(UserInputError, match=r"models\.m\.vocab_szie: .*did you mean 'vocab_size'"):
        load(tmp_path, {"m": {"config_json": "m.json", "vocab_szie": 5}})
    with pytest.raises(UserInputError, match=r"models\.m\.num_key_value_heads: .*must divide"):
        load(tmp_path, {"m": {"config_json": "m.json", "num_key_value_heads": 5}})
