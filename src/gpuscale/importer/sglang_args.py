"""The SGLang engine arguments of a serving container (`python -m sglang.launch_server ...`).

Flags as SGLang's `ServerArgs` defines them (sgl-project/sglang python/sglang/srt/server_args.py
and docs/advanced_features/server_arguments.md), read into the keys the vLLM reader uses so the
scenario's `engine` section is built the same way:
`--model-path` (or `--model`), `--tp-size` / `--tp` / `--tensor-parallel-size`, `--pp-size` /
`--pipeline-parallel-size`, `--dp-size` / `--dp` / `--data-parallel-size`,
`--max-running-requests` (-> max_num_seqs), `--chunked-prefill-size` (-> the token budget per
step; -1 turns chunking off), `--max-prefill-tokens` (SGLang's cap on new prefill tokens per
batch: the budget is the smaller of the two), `--mem-fraction-static` (the share of GPU memory
for weights and KV cache: our gpu_memory_utilization), `--context-length` (-> max_model_len),
`--kv-cache-dtype`, `--quantization`, `--dtype`, `--load-format`; expert parallelism:
`--ep-size` / `--ep` / `--expert-parallel-size`, `--enable-dp-attention` (with `--dp-size`: the
attention's data-parallel ranks inside the server), `--ep-num-redundant-experts`,
`--enable-eplb`, `--enable-two-batch-overlap`, and `--nnodes` (the nodes one server spans).
"""

from __future__ import annotations

from gpuscale.importer.vllm_args import VllmArgs, _env_of, _words, parse_flags

FLAGS: dict[str, tuple[str, type]] = {
    "--model-path": ("model", str), "--model": ("model", str),
    "--served-model-name": ("served_model_name", str),
    "--tp-size": ("tp", int), "--tp": ("tp", int), "--tensor-parallel-size": ("tp", int),
    "--pp-size": ("pp", int), "--pipeline-parallel-size": ("pp", int),
    "--dp-size": ("dp", int), "--dp": ("dp", int), "--data-parallel-size": ("dp", int),
    # Expert parallelism (docs/advanced_features/server_arguments.md, "Expert parallelism").
    "--ep-size": ("ep", int), "--ep": ("ep", int), "--expert-parallel-size": ("ep", int),
    "--ep-num-redundant-experts": ("redundant_experts", int),
    "--nnodes": ("nnodes", int),
    "--max-running-requests": ("max_num_seqs", int),
    "--chunked-prefill-size": ("chunked_prefill_size", int),
    "--max-prefill-tokens": ("max_prefill_tokens", int),
    "--mem-fraction-static": ("gpu_memory_utilization", float),
    "--context-length": ("max_model_len", int),
    "--kv-cache-dtype": ("kv_cache_dtype", str),
    "--quantization": ("quantization", str),
    "--dtype": ("dtype", str),
    "--load-format": ("load_format", str),
}
BOOL_FLAGS: dict[str, tuple[str, bool]] = {
    "--enable-dp-attention": ("dp_attention", True),
    "--enable-eplb": ("eplb", True),
    "--enable-two-batch-overlap": ("two_batch_overlap", True),
}
ENTRY_POINTS = ("sglang.launch_server",)


def is_sglang_command(words: list[str]) -> bool:
    return any(w in ENTRY_POINTS or w.endswith("/sglang.launch_server") for w in words)


def parse_container(container: dict) -> VllmArgs:
    """SGLang's flags of one container in our keys (`ValueError` names a wrong value)."""
    env = _env_of(container)
    out = parse_flags(_words(container, env), FLAGS, BOOL_FLAGS,
                      VllmArgs(env=env, engine="sglang"))
    chunk, prefill = out.values.pop("chunked_prefill_size", None), \
        out.values.pop("max_prefill_tokens", None)
    if chunk is not None and chunk <= 0:
        out.values["chunked_prefill"] = False  # -1: whole prompts
        chunk = None
    budgets = [b for b in (chunk, prefill) if b is not None]
    if budgets:
        out.values["max_num_batched_tokens"] = min(budgets)
    return out
