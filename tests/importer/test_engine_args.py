"""SGLang and TensorRT-LLM serving containers in `--manifests`: their flags read onto the
scenario's engine section and profile, and the refusals (unknown engine command, dp > 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.importer import sglang_args, trtllm_args
from gpuscale.sim.run import engine_config, replica_hardware

from .bundle import container, load_docs
from .test_manifests import imported, refused


def _sglang(docs, args):
    c = container(docs)
    c["image"] = "lmsysorg/sglang:v0.5.3-cu129"
    c["command"] = ["python3", "-m", "sglang.launch_server"]
    c["args"] = args
    return docs


def _trtllm(docs, args, command=("trtllm-serve",)):
    c = container(docs)
    c["image"] = "nvcr.io/nvidia/tensorrt-llm/release:1.0.0"
    c["command"] = list(command)
    c["args"] = args
    return docs


def test_sglang_flags_map_onto_the_engine_section(tmp_path):
    docs = _sglang(load_docs(), [
        "--model-path", "Qwen/Qwen3-32B", "--tp-size", "4", "--max-running-requests=96",
        "--chunked-prefill-size", "4096", "--max-prefill-tokens", "16384",
        "--mem-fraction-static", "0.85", "--context-length", "32768", "--host", "0.0.0.0"])
    imp = imported(tmp_path, docs)
    s = imp.scenario
    assert s.engine.kind == "sglang" and s.model.tp == 4 and s.model.name == "Qwen3-32B"
    assert (s.engine.max_num_seqs, s.engine.max_num_batched_tokens) == (96, 4096)
    assert (s.engine.gpu_memory_utilization, s.engine.max_model_len) == (0.85, 32768)
    assert imp.data["engine"]["kind"] == "sglang"


def test_sglang_short_spellings_and_a_shell_one_liner(tmp_path):
    docs = load_docs()
    c = container(docs)
    c["image"] = "lmsysorg/sglang:latest"
    c["command"] = ["/bin/sh", "-c"]
    c["args"] = ["python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 4 "
                 "--chunked-prefill-size -1 --max-prefill-tokens 2048"]
    s = imported(tmp_path, docs).scenario
    assert s.model.tp == 4 and s.engine.max_num_batched_tokens == 2048


def test_sglang_data_parallel_in_one_pod_is_refused(tmp_path):
    docs = _sglang(load_docs(), ["--model-path", "Qwen/Qwen3-32B", "--tp", "2", "--dp", "2"])
    refused(tmp_path, docs, "--dp-size 2: data-parallel engines inside one pod")


def test_trtllm_serve_flags_and_defaults(tmp_path):
    docs = _trtllm(load_docs(), ["Qwen/Qwen3-32B", "--host", "0.0.0.0", "--tp_size", "4",
                                 "--max_num_tokens", "4096", "--max_seq_len", "16384",
                                 "--kv_cache_free_gpu_memory_fraction", "0.8"])
    imp = imported(tmp_path, docs)
    s = imp.scenario
    assert s.engine.kind == "trtllm" and s.model.name == "Qwen3-32B" and s.model.tp == 4
    assert (s.engine.max_num_batched_tokens, s.engine.max_model_len) == (4096, 16384)
    assert s.engine.max_num_seqs == trtllm_args.DEFAULTS["max_num_seqs"]
    assert any("engine.max_num_seqs: 2048 (trtllm-serve's default)" in d for d in imp.defaults)
    # 0.8 of what the weights leave: more than 0.8 of the whole memory.
    assert 0.8 < s.engine.gpu_memory_utilization < 1.0
    assert any("--kv_cache_free_gpu_memory_fraction 0.8" in n for n in imp.notes)
    # The TensorRT-LLM profile's scheduler: whole prompts, guaranteed-no-evict admission.
    cfg = engine_config(s, replica_hardware(s))
    assert (cfg.batching, cfg.admission) == ("whole_prompt", "guaranteed_no_evict")


def test_a_smaller_kv_fraction_leaves_less_memory_for_the_cache(tmp_path):
    utils = []
    for frac in ("0.5", "0.9"):
        docs = _trtllm(load_docs(), ["Qwen/Qwen3-32B", "--tp_size", "4",
                                     "--kv_cache_free_gpu_memory_fraction", frac])
        utils.append(imported(tmp_path / frac, docs).scenario.engine.gpu_memory_utilization)
    assert utils[0] < utils[1]


def test_trtllm_serve_subcommand_spelling(tmp_path):
    docs = _trtllm(load_docs(), ["serve", "--tp_size=4", "Qwen/Qwen3-32B"])
    assert imported(tmp_path, docs).scenario.model.tp == 4


@pytest.mark.parametrize("command, args", [
    (["python3", "-m", "sglang_router.launch_server"], ["--model-path", "Qwen/Qwen3-32B"]),
    (["tritonserver"], ["--model-repository=/models"]),
    (["mpirun", "-n", "4", "python3", "run.py"], []),
])
def test_an_unknown_engine_command_is_refused_in_one_line(tmp_path, command, args):
    docs = load_docs()
    c = container(docs)
    c["image"] = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3" \
        if command[0] != "python3" else "lmsysorg/sglang:latest"
    c["command"], c["args"] = command, args
    refused(tmp_path, docs, "not an engine command gpuscale reads", "spec.template.spec.containers")


def test_flag_values_are_checked():
    with pytest.raises(ValueError, match="--tp-size expects an integer"):
        sglang_args.parse_container({"command": ["python3", "-m", "sglang.launch_server"],
                                     "args": ["--tp-size", "four"]})
    with pytest.raises(ValueError, match="--max_batch_size has no value"):
        trtllm_args.parse_container({"command": ["trtllm-serve", "m", "--max_batch_size"]})


def test_trtllm_model_after_unknown_flags_is_not_a_flag_value():
    args = trtllm_args.parse_container({"command": [
        "trtllm-serve", "--backend", "pytorch", "--gpus_per_node", "8", "--trust_remote_code",
        "Qwen/Qwen3-32B", "--tp_size", "2"]})
    assert args.get("model") == "Qwen/Qwen3-32B" and args.get("tp") == 2


LWS = Path(__file__).resolve().parent / "lws"


@pytest.mark.parametrize(("bundle", "expected"), [
    ("vllm_deepseek.yaml", {"tp": 16, "ep": 16, "dp_attention": True, "dp": 16,
                            "redundant_experts": 32, "eplb": True}),
    ("sglang_deepseek.yaml", {"tp": 16, "ep": 16, "dp_attention": True, "dp": 16,
                              "two_batch_overlap": True}),
])
def test_a_leaderworkerset_group_is_one_replica_across_nodes(bundle, expected, tmp_path):
    """vLLM's DP x TP ranks with --enable-expert-parallel, SGLang's --tp/--dp/--ep with DP
    attention: one replica of 16 GPUs over a group of two 8-GPU pods (it was refused)."""
    from gpuscale.importer.build import import_manifests
    from gpuscale.sim.replica_setup import replica_hardware

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,500,50\n1.0,500,50\n")
    imported = import_manifests([str(LWS / bundle)], trace)
    model = imported.scenario.model
    assert {k: getattr(model, k) for k in expected} == expected
    assert model.name == "DeepSeek-V3" and imported.scenario.cluster.instance_type == "p5.48xlarge"
    assert replica_hardware(imported.scenario).layout.nodes == 2
    assert any("LeaderWorkerSet group of 2 pods" in note for note in imported.notes)
