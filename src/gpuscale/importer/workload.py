"""The vLLM serving workload of a manifest bundle: which object, its pod, and the scenario's
`model`, `engine`, `cold_start` and `pod_annotations` read from its container.

Deployment and StatefulSet (`spec.template`) and LeaderWorkerSet (`spec.leaderWorkerTemplate`,
leader template, else worker template) are read. One replica is one pod, or a LeaderWorkerSet
group of `size` pods (a replica spread over nodes: the leader's engine command says the whole
replica's parallelism, each pod requests its node's GPUs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.catalog import get_model, models
from gpuscale.errors import UserInputError
from gpuscale.importer import sglang_args, trtllm_args
from gpuscale.importer.vllm_args import VllmArgs, _env_of, _words, is_vllm, parse_container
from gpuscale.scenario.models import EngineSettings, ModelDeployment

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet")
GPU_RESOURCE = "nvidia.com/gpu"
GPU_RESOURCES = (GPU_RESOURCE, "amd.com/gpu")  # whole GPUs (device plugins' resource names)
# Hugging Face repo-name suffixes that do not change the architecture (same config.json shapes).
# A revision (`-v0.1`, `-v0.3`) of the same family keeps its shapes too (Mixtral-8x7B-v0.1).
_SUFFIXES = re.compile(
    r"(-(Instruct|Chat|chat|it|hf|Base|FP8|FP8-Dynamic|fp8|\d{4}|v\d+(\.\d+)*))+$")
_LOADERS = {"runai_streamer": "streamer"}
# A `$(VAR)`, `${VAR}` or `$VAR` left in a word: the env did not give its value literally.
_UNSET_REF = re.compile(r"\$\(([A-Za-z_]\w*)\)|\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
# An image of one of these serves a model: a command it runs that no reader knows is refused.
_ENGINE_IMAGES = ("sglang", "tensorrt-llm", "tensorrt_llm", "trtllm", "tritonserver", "dynamo")
# Objects that create serving pods through their own controller; their pod template is not in
# a form the readers take (KServe, llm-d, KubeRay).
_UNREAD_SERVING_KINDS = ("InferenceService", "ServingRuntime", "ClusterServingRuntime",
                         "LLMInferenceService", "RayService")
KNOWN_COMMANDS = ("vllm serve MODEL", "python -m vllm.entrypoints.openai.api_server",
                  "python -m sglang.launch_server", "trtllm-serve MODEL")


def serving_engine(container: dict) -> str | None:
    """vllm | sglang | trtllm for a container running one, None for any other container;
    `ValueError` for an engine image or command that none of the readers knows."""
    words = _words(container, _env_of(container))
    if trtllm_args.is_trtllm_command(words):
        return "trtllm"
    if sglang_args.is_sglang_command(words):
        return "sglang"
    if is_vllm(container):
        return "vllm"
    image = str(container.get("image", "")).lower()
    text = " ".join(words).lower()
    if any(m in image for m in _ENGINE_IMAGES) or any(
            m in text for m in ("sglang", "trtllm", "tensorrt_llm", "tritonserver")):
        shown = " ".join(words)[:80] or f"image {image}"
        raise ValueError(f"runs {shown!r}: not an engine command gpuscale reads (known: "
                         f"{'; '.join(KNOWN_COMMANDS)})")
    return None


def _parse(container: dict, engine: str) -> VllmArgs:
    reader = {"vllm": parse_container, "sglang": sglang_args.parse_container,
              "trtllm": trtllm_args.parse_container}[engine]
    return reader(container)


@dataclass
class ServingWorkload:
    obj: Manifest
    pod_path: tuple
    pod: dict
    container: dict
    args: VllmArgs
    replicas: int
    notes: list[str] = field(default_factory=list)
    group_size: int = 1  # pods per replica (a LeaderWorkerSet's leaderWorkerTemplate.size)

    @property
    def pod_spec(self) -> dict:
        spec = self.pod.get("spec") if isinstance(self.pod, dict) else None
        return spec if isinstance(spec, dict) else {}


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def _group_size(obj: Manifest) -> int:
    """Pods per replica: a LeaderWorkerSet's `leaderWorkerTemplate.size` (LWS default 1)."""
    if obj.kind != "LeaderWorkerSet":
        return 1
    where = ("spec", "leaderWorkerTemplate", "size")
    size = obj.get(*where, default=1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise _fail(obj, where, f"expected an integer >= 1, got {size!r}")
    return size


def _pod_path(obj: Manifest) -> tuple:
    if obj.kind != "LeaderWorkerSet":
        return ("spec", "template")
    base = ("spec", "leaderWorkerTemplate")
    return base + (("leaderTemplate",) if obj.get(*base, "leaderTemplate") else ("workerTemplate",))


def find_serving_workload(objects: list[Manifest]) -> ServingWorkload:
    """The one workload whose pod runs vLLM; none or several is bad input."""
    found = []
    for obj in objects:
        if obj.kind not in WORKLOAD_KINDS:
            continue
        pod_path = _pod_path(obj)
        containers = obj.get(*pod_path, "spec", "containers") or []
        if not isinstance(containers, list):
            raise _fail(obj, pod_path + ("spec", "containers"), "expected a list of containers")
        for index, container in enumerate(containers):
            try:
                engine = serving_engine(container) if isinstance(container, dict) else None
            except (TypeError, ValueError) as exc:
                raise _fail(obj, pod_path + ("spec", "containers", index), str(exc)) from None
            if engine:
                found.append((obj, pod_path, index, container, engine))
                break
    if not found:
        others = sorted({o.ref for o in objects if o.kind in _UNREAD_SERVING_KINDS})
        hint = (f"; {', '.join(others)} is not read: give the Deployment it creates "
                "(`kubectl get deploy -o yaml`)") if others else ""
        raise UserInputError("no Deployment, StatefulSet or LeaderWorkerSet running vLLM, "
                             "SGLang or TensorRT-LLM (a container whose command runs vllm serve "
                             "or vllm.entrypoints, a vLLM image without a command, or "
                             f"sglang.launch_server or trtllm-serve){hint}", field="manifests")
    if len(found) > 1:
        refs = ", ".join(f"{o.ref} ({o.source})" for o, *_ in found)
        raise UserInputError(f"several serving workloads ({refs}); give one deployment's "
                             "manifests per --manifests", field="manifests")
    obj, pod_path, index, container, engine = found[0]
    where = pod_path + ("spec", "containers", index)
    try:
        args = _parse(container, engine)
    except (TypeError, ValueError) as exc:
        raise _fail(obj, where + ("args",), str(exc)) from None
    replicas = obj.get("spec", "replicas", default=1)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise _fail(obj, ("spec", "replicas"), f"expected an integer >= 0, got {replicas!r}")
    notes = []
    if args.ignored:
        notes.append(f"{ENGINE_NAMES[engine]} arguments not simulated: "
                     f"{', '.join(dict.fromkeys(args.ignored))}")
    size = _group_size(obj)
    if size > 1:
        notes.append(f"{obj.ref}: a LeaderWorkerSet group of {size} pods per replica, placed "
                     "all or nothing in one zone (or NVLink domain), restarted whole when a pod "
                     "is lost (docs/serving.md, replicas spanning nodes)")
    return ServingWorkload(obj, pod_path, obj.get(*pod_path), container, args, replicas, notes,
                           group_size=size)


def catalog_model(model_id: str) -> tuple[str, str]:
    """(catalog name, note) for a served model id such as `Qwen/Qwen3-32B` or `org/X-Instruct`."""
    names = models()
    base = model_id.rstrip("/").split("/")[-1]
    lowered = {n.lower(): n for n in names}
    stripped = _SUFFIXES.sub("", base)
    # Older Hugging Face repos prefix the family ("Meta-Llama-3.1-8B-Instruct").
    for candidate in (model_id, base, stripped, stripped.removeprefix("Meta-")):
        if candidate in names:
            return (
                candidate,
                "" if candidate == model_id else f"model {model_id} read as {candidate}",
            )
        if candidate.lower() in lowered:
            return lowered[
                candidate.lower()
            ], f"model {model_id} read as {lowered[candidate.lower()]}"
    raise UserInputError(f"model {model_id!r} is not in the catalog (known: {', '.join(names)}); "
                         "describe it in a --catalog file (config.json fields or config_json: "
                         "PATH)", field="model")


def model_section(wl: ServingWorkload) -> dict:
    args, obj = wl.args, wl.obj
    model_id = args.get("model")
    if not model_id:
        raise _fail(obj, wl.pod_path + ("spec", "containers"), f"the {ENGINE_NAMES[args.engine]} "
                    "container names no model (`vllm serve MODEL` or --model, sglang "
                    "--model-path, `trtllm-serve MODEL`)")
    unset = _UNSET_REF.search(model_id)
    if unset:
        var = unset.group(1) or unset.group(2) or unset.group(3)
        raise _fail(obj, wl.pod_path + ("spec", "containers"), f"the model is {model_id!r}: "
                    f"variable {var} has no literal `value` in the container's env (valueFrom "
                    "and envFrom are not resolved); give the model id")
    name, note = catalog_model(model_id)
    wl.notes += [note] if note else []
    quant = (args.get("quantization") or "").lower()
    if quant and quant not in ("fp8", "modelopt", "fbgemm_fp8", "compressed-tensors"):
        raise UserInputError(f"--quantization {quant}: only bf16 and fp8 weights are simulated",
                             source=obj.source, field="args")
    fp8 = quant in ("fp8", "modelopt", "fbgemm_fp8") or "fp8" in model_id.lower()
    if not fp8 and not quant and get_model(name).checkpoint_precision == "fp8":
        fp8 = True  # vLLM reads the checkpoint's quantization_config without --quantization
        wl.notes.append(f"model {name}: its config.json's quantization_config is fp8; served "
                        "with fp8 weights")
    out: dict = {"name": name, "precision": "fp8" if fp8 else "bf16", "tp": args.get("tp", 1)}
    if (args.get("kv_cache_dtype") or "").lower().startswith("fp8"):
        out["kv_precision"] = "fp8"
    elif fp8:
        # vLLM's --kv-cache-dtype auto keeps the cache in the activations' dtype (bf16) for
        # fp8 weights; the scenario's default (the weights' precision) would double the KV.
        out["kv_precision"] = "bf16"
    out.update(expert_parallel_section(wl, get_model(name)))
    pp = args.get("pp", 1)
    if "pp" in ModelDeployment.model_fields:
        out["pp"] = pp
    elif pp != 1:
        raise UserInputError(f"--pipeline-parallel-size {pp}: pipeline parallelism is not "
                             "simulated by this version", source=obj.source, field="args")
    return out


def _gpu_value(wl: ServingWorkload, resources: dict, path: tuple):
    """The container's whole-GPU count as written: the limit (Kubernetes requires one for an
    extended resource; a request must equal it)."""
    found = {section: {k: v for k, v in resources[section].items() if k in GPU_RESOURCES}
             for section in ("limits", "requests") if isinstance(resources.get(section), dict)}
    limits, requests = found.get("limits") or {}, found.get("requests") or {}
    if limits and requests and {k: str(v) for k, v in limits.items()} != {
            k: str(v) for k, v in requests.items()}:  # "1" and 1 are the same quantity
        raise _fail(wl.obj, path, f"GPU requests {requests} differ from limits {limits}; "
                    "Kubernetes requires them equal for an extended resource")
    if not limits and requests:
        wl.notes.append(f"{', '.join(requests)} only in resources.requests: Kubernetes needs "
                        "the limit too (the API server refuses the pod); read as the limit")
    chosen = limits or requests
    if not chosen:
        other = sorted(str(k) for section in ("limits", "requests")
                       if isinstance(resources.get(section), dict)
                       for k in resources[section] if "gpu" in str(k) or "mig-" in str(k))
        shown = f" (requests {', '.join(other)}: MIG slices and shared GPUs are not simulated)" \
            if other else ""
        raise _fail(wl.obj, path, f"the {ENGINE_NAMES[wl.args.engine]} container requests no "
                    f"{' or '.join(GPU_RESOURCES)}{shown}")
    return next(iter(chosen.values()))


def gpus_requested(wl: ServingWorkload, gpus_needed: int) -> int:
    resources = wl.container.get("resources") or {}
    if not isinstance(resources, dict):
        raise _fail(wl.obj, wl.pod_path + ("spec", "containers"), "`resources` must be a mapping")
    path = wl.pod_path + ("spec", "containers")
    value = _gpu_value(wl, resources, path)
    try:
        count = int(str(value))
    except ValueError:
        raise _fail(wl.obj, path, f"{GPU_RESOURCE} must be a whole number, got {value!r}") from None
    size = wl.group_size
    if size > 1 and count != gpus_needed:
        raise _fail(wl.obj, path, f"the LeaderWorkerSet group of {size} pods requests "
                    f"{size * count} GPUs ({count} each) but "
                    f"{ENGINE_NAMES[wl.args.engine]}'s parallelism uses {size * gpus_needed}: a "
                    "replica across nodes takes whole pods of its engine's GPUs")
    if count < gpus_needed:
        raise _fail(
            wl.obj,
            path,
            f"requests {count} GPU(s) but {ENGINE_NAMES[wl.args.engine]}'s parallelism needs "
            f"{gpus_needed}; the engine would not start",
        )
    if count > gpus_needed:
        wl.notes.append(
            f"the pod requests {count} GPUs but {ENGINE_NAMES[wl.args.engine]} uses {gpus_needed}: "
            "simulated "
            f"with {gpus_needed} (the real pod holds {count - gpus_needed} idle)"
        )
    return count


def engine_section(wl: ServingWorkload, defaults: list[str]) -> dict:
    args = wl.args
    out: dict = {}
    if args.engine != "vllm":
        out["kind"] = args.engine
    name = ENGINE_NAMES[args.engine]
    for key in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
                "max_model_len", "block_size"):
        if args.get(key) is not None:
            out[key] = args.get(key)
        elif args.engine == "trtllm" and key in trtllm_args.DEFAULTS:
            out[key] = trtllm_args.DEFAULTS[key]
            defaults.append(f"engine.{key}: {out[key]} (trtllm-serve's default)")
        elif key != "block_size" and not (args.engine == "trtllm"
                                          and key == "gpu_memory_utilization"):
            default = EngineSettings.model_fields[key].default
            shown = default if default is not None else (
                "the model's context length" if key == "max_model_len"
                else "vLLM's default for the GPU")
            if args.engine == "sglang" and key != "max_model_len":
                shown = f"{shown} ({name} picks its own by GPU memory; vLLM's rule simulated)"
            defaults.append(f"engine.{key}: {shown}")
    context = models_context(wl)
    length = args.get("max_model_len")
    if length is not None and context is not None and length > context and \
            args.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1":
        wl.notes.append(f"--max-model-len {length} exceeds the model's {context}-token "
                        "context (max_position_embeddings): vLLM refuses to start unless rope "
                        "scaling extends it or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; simulated as given")
    if args.get("enable_prefix_caching") is not None:  # default on, as vLLM V1
        out["enable_prefix_caching"] = args.get("enable_prefix_caching")
    if args.engine == "sglang":
        wl.notes.append("SGLang: engine profile sglang (host time assumed as vLLM V1's: no "
                        "published SGLang point read; serving/engines.py)")
    if args.engine == "trtllm":
        # TensorRT-LLM keeps prompts whole (enable_chunked_context off by default) and admits
        # with GUARANTEED_NO_EVICT: its engine profile (serving/engines.py) carries both.
        wl.notes.append("TensorRT-LLM: whole prompts per step and guaranteed-no-evict "
                        "admission (its defaults; chunked context and the scheduler policy are "
                        "set in an extra options YAML the manifests do not carry)")
    if args.get("chunked_prefill") is False:
        out["batching"] = "prefill_first"  # whole prompts in prefill-only steps (vLLM V0)
    return out


def models_context(wl: ServingWorkload) -> int | None:
    """The served model's context length from the catalog (None when it is not known yet)."""
    try:
        return get_model(catalog_model(str(wl.args.get("model")))[0]).max_context_tokens
    except UserInputError:
        return None


def kv_cache_utilization(wl: ServingWorkload, engine: dict, model: dict,
                         gpu_memory_gib: float) -> None:
    """TensorRT-LLM sizes its KV cache as a fraction of the memory left after the weights
    (`--kv_cache_free_gpu_memory_fraction`); the scenario's gpu_memory_utilization is the
    share of the whole memory for weights, reserves and KV. Same KV bytes:
    util = (weights + reserves + frac x (memory - weights - reserves)) / memory."""
    if wl.args.engine != "trtllm" or "gpu_memory_utilization" in engine:
        return
    frac = wl.args.get("kv_cache_free_fraction", trtllm_args.DEFAULTS["kv_cache_free_fraction"])
    if not 0 < frac <= 1:
        raise UserInputError(f"--kv_cache_free_gpu_memory_fraction {frac}: expected a fraction "
                             "in (0, 1]", source=wl.obj.source, field="args")
    from gpuscale.catalog.specs import Precision

    gpus = model["tp"] * model.get("pp", 1)
    weights_gib = get_model(model["name"]).weight_bytes(Precision(model["precision"])) / gpus \
        / 2**30
    reserves_gib = (EngineSettings.model_fields["activation_reserve_gib"].default
                    + EngineSettings.model_fields["non_torch_gib"].default)
    fixed = min(gpu_memory_gib, weights_gib + reserves_gib)
    engine["gpu_memory_utilization"] = round(
        (fixed + frac * (gpu_memory_gib - fixed)) / gpu_memory_gib, 4)
    wl.notes.append(f"--kv_cache_free_gpu_memory_fraction {frac:g} read as "
                    f"gpu_memory_utilization {engine['gpu_memory_utilization']} (the same KV "
                    "bytes after the weights and the default reserves)")


def cold_start_section(wl: ServingWorkload, defaults: list[str]) -> dict:
    env = wl.args.env
    out: dict = {"loader": _LOADERS.get(wl.args.get("load_format") or "", "safetensors")}
    if env.get("VLLM_SKIP_P2P_CHECK") == "1":
        out["skip_p2p_check"] = True
    defaults.append("cold_start.image_size_gb: 12 (vLLM image size; manifests do not say)")
    return out


def pod_annotations(wl: ServingWorkload) -> dict[str, str]:
    meta = wl.pod.get("metadata") or {}
    annotations = meta.get("annotations") if isinstance(meta, dict) else {}
    return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}


def expert_parallel_section(wl: ServingWorkload, model) -> dict:
    """`tp`, `ep`, `dp_attention`, `dp`, `redundant_experts`, `eplb`, `two_batch_overlap`
    from the engine's flags (scenario/parallelism.py gives the mapping). A dense model's
    data-parallel engines in one pod are refused: they are replicas, not one engine."""
    args, obj = wl.args, wl.obj
    dp = args.get("dp", 1)
    out: dict = {"tp": args.get("tp", 1)}
    moe = model.is_moe
    if args.engine == "vllm" and dp > 1 and moe:
        # vLLM: each DP rank is an engine of --tensor-parallel-size GPUs, their expert layers
        # one (DP x TP) group, expert-parallel with --enable-expert-parallel.
        out.update(tp=out["tp"] * dp, dp_attention=True, dp=dp)
        if args.get("expert_parallel"):
            out["ep"] = out["tp"]
    elif args.engine == "sglang" and args.get("dp_attention"):
        out.update(dp_attention=True, dp=dp if dp > 1 else None)
    elif dp != 1:
        flag = "--dp-size" if args.engine == "sglang" else "--data-parallel-size"
        raise UserInputError(f"{flag} {dp}: data-parallel engines inside one pod are not "
                             "simulated (a replica is one engine); run one engine per pod and "
                             "scale the replicas (an MoE model's DP attention is: vLLM with "
                             "--enable-expert-parallel, SGLang with --enable-dp-attention)",
                             source=obj.source, field="args")
    if args.engine != "vllm" and args.get("ep", 1) > 1:
        out["ep"] = args.get("ep")
    elif args.engine == "vllm" and args.get("expert_parallel") and "ep" not in out:
        out["ep"] = out["tp"]  # EP over the TP group alone (no DP)
    redundant = args.get("redundant_experts") or _eplb_config_redundant(wl)
    if redundant:
        out["redundant_experts"] = redundant
    for key in ("eplb", "two_batch_overlap"):
        if args.get(key):
            out[key] = True
    return out


def _eplb_config_redundant(wl: ServingWorkload) -> int:
    """num_redundant_experts inside vLLM's --eplb-config JSON (0 when absent)."""
    import json

    text = wl.args.get("eplb_config")
    if not text:
        return 0
    try:
        value = json.loads(text).get("num_redundant_experts", 0)
    except (ValueError, AttributeError):
        raise UserInputError(f"--eplb-config {text!r}: expected a JSON object",
                             source=wl.obj.source, field="args") from None
    return int(value)


def gpus_per_pod(wl: ServingWorkload, replica_gpus: int) -> int:
    """The GPUs each pod of the replica holds: all of them, or a LeaderWorkerSet group's
    share (its pods split the engine's GPUs evenly, one node each)."""
    size = wl.group_size
    if replica_gpus % size:
        raise _fail(wl.obj, ("spec", "leaderWorkerTemplate", "size"),
                    f"the engine's parallelism needs {replica_gpus} GPUs, which do not split "
                    f"over the group's {size} pods")
    return replica_gpus // size
