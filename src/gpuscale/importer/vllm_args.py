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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# flag -> (our key, type); aliases as vLLM's argparse defines them (`-tp`, `-pp`).
FLAGS: dict[str, tuple[str, Callable]] = {
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
    # Data-parallel engines: with an MoE model and --enable-expert-parallel the DP ranks are
    # one replica's attention ranks (workload.model_section); a dense model's are refused.
    "--data-parallel-size": ("dp", int), "-dp": ("dp", int),
    # EPLB's spare expert slots (vLLM < 0.11; later inside --eplb-config's JSON).
    "--num-redundant-experts": ("redundant_experts", int),
    "--eplb-config": ("eplb_config", str),
}


def human_int(text: str) -> int:
    """vLLM's human-readable integers (`--max-model-len 32k`): k/m/g are powers of 1000,
    K/M/G powers of 1024 (vllm/engine/arg_utils.py human_readable_int)."""
    scale = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    if text[-1:] in scale:
        number = float(text[:-1])
        if number != int(number):
            raise ValueError(text)
        return int(number) * scale[text[-1]]
    return int(text)


FLAGS["--max-model-len"] = ("max_model_len", human_int)
FLAGS["--max-num-batched-tokens"] = ("max_num_batched_tokens", human_int)
# Our keys of the parallel sizes (every engine's reader): each is a count of GPUs or engines.
PARALLEL_KEYS = frozenset({"tp", "pp", "dp", "ep", "nnodes"})
BOOL_FLAGS = {"--enable-chunked-prefill": ("chunked_prefill", True),
              "--no-enable-chunked-prefill": ("chunked_prefill", False),
              "--enable-prefix-caching": ("enable_prefix_caching", True),
              "--no-enable-prefix-caching": ("enable_prefix_caching", False),
              # Expert parallelism over the TP x DP GPUs (docs.vllm.ai serving/
              # expert_parallel_deployment), its load balancer and dual-batch overlap.
              "--enable-expert-parallel": ("expert_parallel", True),
              "-ep": ("expert_parallel", True),
              "--enable-eplb": ("eplb", True),
              "--enable-dbo": ("two_batch_overlap", True)}
_ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# `$NAME` and `${NAME}` inside a `sh -c` string: the shell expands them from the env.
_SHELL_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# vLLM's switches (no value; `--no-*` too): after one of these the next word may be the model
# of `vllm serve [flags] MODEL`. Any other unknown `--flag` is taken to carry a value, so its
# value is never read as the model (vllm/engine/arg_utils.py, entrypoints/openai/cli_args.py).
_SWITCHES = frozenset({
    "--trust-remote-code", "--enforce-eager", "--disable-log-requests", "--disable-log-stats",
    "--enable-log-requests", "--disable-custom-all-reduce", "--enable-lora",
    "--enable-auto-tool-choice", "--enable-expert-parallel", "--disable-sliding-window",
    "--skip-tokenizer-init", "--enable-sleep-mode", "--disable-frontend-multiprocessing",
    "--enable-reasoning", "--headless", "--disable-fastapi-docs",
    "--enable-request-id-headers", "--enable-prompt-tokens-details", "--async-scheduling",
    "--enable-server-load-tracking", "--enable-force-include-usage", "--enable-eplb",
    "--disable-uvicorn-access-log", "--return-tokens-as-token-ids", "--calculate-kv-scales",
    "--allow-credentials", "--enable-log-outputs", "--use-v2-block-manager"})
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
        if " " in word and any(m in word for m in SHELL_MARKERS):
            word = _SHELL_REF.sub(
                lambda m: env.get(m.group(1) or m.group(2), m.group(0)), word)
            out.extend(shlex.split(word))
        else:
            out.append(word)
    return out


def runs_vllm(words: list[str]) -> bool:
    """The argv runs vLLM's server: `vllm serve` or `python -m vllm.entrypoints....`."""
    for i, word in enumerate(words):
        if (word == "vllm" or word.endswith("/vllm")) and words[i + 1:i + 2] == ["serve"]:
            return True
        if word.startswith("vllm.entrypoints") and i > 0 and words[i - 1] == "-m":
            return True
    return False


def is_vllm(container: dict) -> bool:
    """A container running vLLM: its command says so, or a vLLM image runs its own entry
    point (no command). A word such as `release=vllm` in a router's args is not enough: the
    production-stack router names the engines' Helm release in its label selector."""
    words = _words(container, _env_of(container))
    if runs_vllm(words):
        return True
    image = str(container.get("image", "")).rpartition("/")[2].lower()
    return "vllm" in image and not container.get("command") and "router" not in image


def parse_container(container: dict) -> VllmArgs:
    """The engine flags of one container (`ValueError` names a flag whose value is wrong,
    `TypeError` a command or args that is not a list)."""
    env = _env_of(container)
    words = _words(container, env)
    out = VllmArgs(env=env)
    if "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in env:
        out.ignored.append("env VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    _positional_model(words, out, container.get("command"))
    return parse_flags(words, FLAGS, BOOL_FLAGS, out)


def _positional_model(words: list[str], out: VllmArgs, command: object = None) -> None:
    """MODEL of `vllm serve [flags] MODEL [flags]`: the first word after `serve` that is no
    flag's value (vLLM's argparse takes the positional anywhere)."""
    start = next((i for i, w in enumerate(words[:-1]) if w == "serve"
                  and i > 0 and (words[i - 1] == "vllm" or words[i - 1].endswith("/vllm"))),
                 None)
    if start is None:
        start = next((i for i, w in enumerate(words[:-1]) if w == "serve"), None)
    if start is None:
        if not command and words and not words[0].startswith("-"):
            # No command: the vllm-openai image's entry point is `vllm serve`, so args
            # beginning with a word give the model first.
            out.values["model"] = words[0]
        return
    i = start + 1
    while i < len(words):
        word = words[i]
        if word in ("&&", ";", "|", "||"):
            return  # the shell's next command
        if word.startswith("-"):
            flag = vllm_spelling(word.partition("=")[0])
            switch = flag in BOOL_FLAGS or flag in _SWITCHES or flag.startswith("--no-")
            i += 1 if "=" in word or switch else 2
            continue
        out.values["model"] = word
        return


def vllm_spelling(flag: str) -> str:
    """A `--flag` as vLLM's parser reads it: underscores in the name, up to its first `.`, are
    dashes (`--gpu_memory_utilization` is `--gpu-memory-utilization`; vllm/utils/
    argparse_utils.py FlexibleArgumentParser.parse_args). Short flags (`-tp`) are kept."""
    if not flag.startswith("--"):
        return flag
    name, dot, rest = flag[2:].partition(".")
    return "--" + name.replace("_", "-") + dot + rest


# The engines whose parsers take a flag only as declared, and where they declare them: SGLang's
# argparse has dashed names only (python/sglang/srt/server_args.py, arg_groups/arg_utils.py
# `_field_to_cli_name`); trtllm-serve's click options are underscored only
# (tensorrt_llm/commands/serve.py), and click does not fold one into the other.
STRICT_PARSERS = {"sglang": "SGLang (argparse)", "trtllm": "trtllm-serve (click)"}


def _refuse_other_spelling(flag: str, known: Mapping[str, object], engine: str) -> None:
    """A flag the engine knows only in its other spelling (`--tp_size` to SGLang, `--tp-size`
    to trtllm-serve): the engine exits with "unrecognized arguments" / "No such option", so
    simulating it as served would be a wrong result."""
    if engine not in STRICT_PARSERS or not flag.startswith("--"):
        return
    other = "--" + (flag[2:].replace("_", "-") if "_" in flag else flag[2:].replace("-", "_"))
    if other != flag and other in known:
        raise ValueError(f"{flag}: {STRICT_PARSERS[engine]} knows this option only as {other} "
                         f"and would exit at start; write {other}")


def parse_flags(words: list[str], flags: Mapping[str, tuple[str, Callable]],
                bool_flags: dict[str, tuple[str, bool]], out: VllmArgs) -> VllmArgs:
    """`--flag value`, `--flag=value` and boolean flags into `out.values` (our keys); other
    `--flags` into `out.ignored`. Shared by the vLLM, SGLang and TensorRT-LLM readers; each
    engine's own spelling rules apply (`vllm_spelling`, `STRICT_PARSERS`)."""
    i = 0
    while i < len(words):
        word = words[i]
        flag, _, inline = word.partition("=")
        if out.engine == "vllm":
            flag = vllm_spelling(flag)
        elif flag not in flags and flag not in bool_flags:
            _refuse_other_spelling(flag, {**flags, **bool_flags}, out.engine)
        if flag in bool_flags:
            key, value = bool_flags[flag]
            if inline:  # argparse's BooleanOptionalAction refuses `--flag=false`
                opposite = next((f for f, (k, v) in bool_flags.items()
                                 if k == key and v != value), None)
                hint = f"; write {flag} or {opposite}" if opposite else f"; write {flag}"
                raise ValueError(f"{word}: {flag} takes no value{hint}")
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
                unset = " (a variable the container's env does not set literally)" if (
                    "$" in inline) else ""
                expected = {int: "an integer", human_int: "an integer (or 32k, 1M)",
                            float: "a number"}.get(kind, "a number")
                raise ValueError(f"{flag} expects {expected}, got {inline!r}{unset}") from None
            if key in PARALLEL_KEYS and out.values[key] < 1:
                # A parallel size of 0 divided the GPUs a node holds (a ZeroDivisionError).
                raise ValueError(f"{flag} expects an integer >= 1, got {inline!r}")
        elif word.startswith("--"):
            out.ignored.append(flag)
        i += 1
    return out
