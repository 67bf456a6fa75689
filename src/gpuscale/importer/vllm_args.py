"""The vLLM engine arguments of a serving container: command, args and env, as vLLM reads them.

`vllm serve MODEL --tensor-parallel-size 4 ...`, the older `python -m
vllm.entrypoints.openai.api_server --model MODEL ...`, a `sh -c "..."` one-liner, `--flag=value`
and `--flag value` spellings, `$(VAR)` references to the container's env (Kubernetes expands
them), and the `VLLM_*` env variables vLLM itself reads. Flags the simulator does not use are
kept in `ignored` so the output can list them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# flag -> (our key, type); aliases as vLLM's argparse defines them (`-tp`, `-pp`).
FLAGS: dict[str, tuple[str, type]] = {
    "--model": ("model", str),
    "--served-model-name": ("served_model_name", str),
    "--tensor-parallel-size": ("tp", int), "-tp": ("tp", int),
    "--pipeline-parallel-size": ("pp", int), "-pp": ("pp", int),
    "--max-num-seqs": ("max_num_seqs", int),
    "--max-num-batched-tokens": ("max_num_batched_tokens", int),
    "--gpu-memory-utilization": ("gpu_memory_utilization", float),
    "--max-model-len": ("max_model_len", int),
    "--block-size": ("block_size", int),
    "--quantization": ("quantization", str), "-q": ("quantization", str),
    "--kv-cache-dtype": ("kv_cache_dtype", str),
    "--dtype": ("dtype", str),
    "--load-format": ("load_format", str),
}
BOOL_FLAGS = {"--enable-chunked-prefill": ("chunked_prefill", True),
              "--no-enable-chunked-prefill": ("chunked_prefill", False),
              "--enable-prefix-caching": ("enable_prefix_caching", True),
              "--no-enable-prefix-caching": ("enable_prefix_caching", False)}
_ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# A word with a space holding one of these is a shell one-liner running an engine.
SHELL_MARKERS = ("vllm", "sglang", "trtllm", "--")


@dataclass
class VllmArgs:
    """Engine flags read from a container (also SGLang's and TensorRT-LLM's, in our keys)."""

    values: dict = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    engine: str = "vllm"  # scenario engine.kind: vllm | sglang | trtllm

    def get(self, key: str, default=None):
        return self.values.get(key, default)


def _env_of(container: dict) -> dict[str, str]:
    out = {}
    env = container.get("env") or []
    for item in env if isinstance(env, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and "value" in item:
            out[item["name"]] = str(item["value"])
    return out


def container_words(container: dict) -> list[str]:
    """A container's `command` then `args`, as words (`TypeError` when one is not a list)."""
    words: list[str] = []
    for key in ("command", "args"):
        value = container.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise TypeError(f"`{key}` must be a list of strings, got {value!r}")
        words.extend(str(v) for v in value)
    return words


def _words(container: dict, env: dict[str, str]) -> list[str]:
    words = [_ENV_REF.sub(lambda m: env.get(m.group(1), m.group(0)), w)
             for w in container_words(container)]
    # `sh -c "vllm serve ..."`: the engine's argv is the shell string, split as the shell would.
    out: list[str] = []
    for word in words:
        out.extend(
            shlex.split(word) if " " in word and any(m in word for m in SHELL_MARKERS) else [word]
        )
    return out


def is_vllm(container: dict) -> bool:
    image = str(container.get("image", ""))
    text = " ".join(_words(container, _env_of(container)))
    return "vllm" in image.lower() or "vllm" in text


def parse_container(container: dict) -> VllmArgs:
    """The engine flags of one container (`ValueError` names a flag whose value is wrong,
    `TypeError` a command or args that is not a list)."""
    env = _env_of(container)
    words = _words(container, env)
    out = VllmArgs(env=env)
    if "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in env:
        out.ignored.append("env VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    # Positional model of `vllm serve MODEL`.
    for i, word in enumerate(words[:-1]):
        if word == "serve" and not words[i + 1].startswith("-"):
            out.values["model"] = words[i + 1]
            break
    return parse_flags(words, FLAGS, BOOL_FLAGS, out)


def parse_flags(words: list[str], flags: dict[str, tuple[str, type]],
                bool_flags: dict[str, tuple[str, bool]], out: VllmArgs) -> VllmArgs:
    """`--flag value`, `--flag=value` and boolean flags into `out.values` (our keys); other
    `--flags` into `out.ignored`. Shared by the vLLM, SGLang and TensorRT-LLM readers."""
    i = 0
    while i < len(words):
        word = words[i]
        flag, _, inline = word.partition("=")
        if flag in bool_flags:
            key, value = bool_flags[flag]
            out.values[key] = value
        elif flag in flags:
            key, kind = flags[flag]
            if not inline:
                if i + 1 >= len(words):
                    raise ValueError(f"{flag} has no value")
                inline = words[i + 1]
                i += 1
            try:
                out.values[key] = kind(inline)
            except ValueError:
                raise ValueError(f"{flag} expects {'an integer' if kind is int else 'a number'}, "
                                 f"got {inline!r}") from None
        elif word.startswith("--"):
            out.ignored.append(flag)
        i += 1
    return out
