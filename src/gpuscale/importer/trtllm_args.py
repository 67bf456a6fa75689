"""The TensorRT-LLM engine arguments of a serving container (`trtllm-serve MODEL ...`).

Flags as `trtllm-serve` defines them (NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py, the
trtllm-serve command reference), each under every name it declares: the positional MODEL
(after an optional `serve`), `--tp_size` / `--tensor_parallel_size`, `--pp_size` /
`--pipeline_parallel_size`, `--max_batch_size` (-> max_num_seqs), `--max_num_tokens` (-> the
token budget per step), `--max_seq_len` (-> max_model_len) and
`--kv_cache_free_gpu_memory_fraction` / `--free_gpu_memory_fraction` (the share of the memory
left after weights and buffers that the KV cache takes; converted to our
gpu_memory_utilization once the GPU and model are known, `kv_cache_utilization`),
`--ep_size` (the MoE expert-parallel size). `--backend`, `--extra_llm_api_options` /
`--config` (a YAML file the manifests do not carry; attention DP, `enable_attention_dp`, is set
there) are listed as not simulated. Click declares them with underscores only: a dashed
spelling is refused (vllm_args.STRICT_PARSERS).
"""

from __future__ import annotations

from gpuscale.importer.vllm_args import VllmArgs, _env_of, _words, parse_flags

# Each option under every name trtllm-serve declares for it (`--tensor_parallel_size` /
# `--tp_size`, `--free_gpu_memory_fraction` / `--kv_cache_free_gpu_memory_fraction`, ...).
FLAGS: dict[str, tuple[str, type]] = {
    "--tp_size": ("tp", int), "--tensor_parallel_size": ("tp", int),
    "--pp_size": ("pp", int), "--pipeline_parallel_size": ("pp", int),
    "--ep_size": ("ep", int),
    "--max_batch_size": ("max_num_seqs", int),
    "--max_num_tokens": ("max_num_batched_tokens", int),
    "--max_seq_len": ("max_model_len", int),
    "--kv_cache_free_gpu_memory_fraction": ("kv_cache_free_fraction", float),
    "--free_gpu_memory_fraction": ("kv_cache_free_fraction", float),
    "--served_model_name": ("served_model_name", str),
}
BOOL_FLAGS: dict[str, tuple[str, bool]] = {}
ENTRY_POINT = "trtllm-serve"
# trtllm-serve's defaults when a flag is absent: BuildConfig.max_batch_size 2048 and
# max_num_tokens 8192 (the click options' defaults), KvCacheConfig free_gpu_memory_fraction 0.9.
DEFAULTS = {"max_num_seqs": 2048, "max_num_batched_tokens": 8192, "kv_cache_free_fraction": 0.9}
# trtllm-serve's switches (no value): after one of these the next word may be MODEL. Any
# other unknown `--flag` is taken to carry a value, so its value is never read as MODEL.
_SWITCHES = ("--trust_remote_code", "--grpc", "--enable_chunked_prefill",
             "--disable_gc", "--fail_fast_on_attention_window_too_large")


def _is_entry(word: str) -> bool:
    return word == ENTRY_POINT or word.endswith("/" + ENTRY_POINT)


def is_trtllm_command(words: list[str]) -> bool:
    return any(_is_entry(w) for w in words)


def parse_container(container: dict) -> VllmArgs:
    """TensorRT-LLM's flags of one container in our keys (`ValueError` names a wrong value)."""
    env = _env_of(container)
    words = _words(container, env)
    out = parse_flags(words, FLAGS, BOOL_FLAGS, VllmArgs(env=env, engine="trtllm"))
    start = next(i for i, w in enumerate(words) if _is_entry(w))
    rest = words[start + 1:]
    if rest[:1] == ["serve"]:  # `trtllm-serve serve MODEL` (the subcommand spelling)
        rest = rest[1:]
    i = 0
    while i < len(rest):  # the first positional word is MODEL
        word = rest[i]
        if word.startswith("-"):
            flag = word.partition("=")[0]
            takes_value = "=" not in word and flag not in _SWITCHES
            i += 2 if takes_value else 1
            continue
        out.values["model"] = word
        break
    return out
