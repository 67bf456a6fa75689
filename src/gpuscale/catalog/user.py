"""The user's own catalog entries: models, GPUs and instance types the built-in catalog lacks.

A catalog file has up to three sections, `models:`, `gpus:` and `instance_types:`, each a
mapping from name to entry. An entry whose name is already in the catalog overrides only the
fields it gives. A model is written either in the catalog's own fields (`models.yaml`) or in
its Hugging Face `config.json` field names (`hidden_size`, `num_hidden_layers`, ...; the
caller reads a `config_json: PATH` file and passes its content as the mapping). GPUs and
instance types use the built-in fields (`gpus.yaml`, `instance_types.yaml`).

Belongs here: turning already-parsed data into frozen specs, with one-line errors naming the
file, the field and what was expected. Must not read files: the caller loads them with the
project's YAML loader (so every input goes through the same hardened reader).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any

from gpuscale.catalog.specs import (
    GpuSpec,
    InstanceType,
    ModelSpec,
    Precision,
    _builtin_gpus,
    _builtin_instance_types,
    _builtin_models,
    get_gpu,
    set_user_entries,
)
from gpuscale.errors import UserInputError

SECTIONS = ("models", "gpus", "instance_types", "engines")
# Engine profiles a catalog's `engines:` section may override (serving/engines.py
# ENGINE_PROFILES; a test keeps the two lists equal: catalog must not import serving).
ENGINE_NAMES = ("default", "vllm", "trtllm", "sglang", "vllm-v0.6", "sarathi", "vllm-v1")
# `engines:` fields -> (EngineProfile field, unit to seconds).
ENGINE_FIELDS = {"host_step_ms": ("host_step_s", 1e-3), "host_seq_us": ("host_seq_s", 1e-6)}
# Upper bounds, in the fields' units: a host second per step (or a tenth per sequence) is ~8,000
# times vLLM's 126 us (serving/engines.py) and 50 times what `calibrate --fit` can fit (20 ms):
# a unit slip (seconds written as ms), not a slow host.
ENGINE_FIELD_MAX = {"host_step_ms": 1_000.0, "host_seq_us": 100_000.0}
# config.json fields the catalog reads: also accepted beside `config_json: PATH`, where they
# fill in or correct the file's (a multimodal config's text_config may omit vocab_size, say).
HF_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
             "attention_bias", "tie_word_embeddings", "model_type", "num_experts",
             "num_local_experts", "n_routed_experts", "num_experts_per_tok",
             "moe_intermediate_size", "n_shared_experts", "shared_expert_intermediate_size",
             "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
             "mlp_only_layers", "interleave_moe_layer_step", "intermediate_size_mlp",
             "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
             "v_head_dim")
ALLOWED_BESIDE_CONFIG_JSON = ("config_json", "source", "max_context_tokens", *HF_FIELDS)
_ZERO_OK = frozenset({"spot_discount_frac"})

# A GPU given without efficiency factors takes the H100's (the same assumption the built-in
# GPUs without a per-kernel profile make; gpus.yaml header) and says so in every result.
ASSUMED_EFFICIENCY = "assumed (user catalog entry without calibration points; H100 factors)"
REFERENCE_GPU = "H100-SXM"

# Hugging Face config.json -> ModelSpec. `text_config` (multimodal wrappers such as Gemma 3
# or Mistral-Small-3.1) is read in place of the top level when present.
_HF_REQUIRED = {"hidden_size": "hidden", "num_hidden_layers": "layers",
                "num_attention_heads": "q_heads", "vocab_size": "vocab"}
_HF_MARKERS = frozenset(_HF_REQUIRED) | {"intermediate_size", "num_key_value_heads",
                                          "max_position_embeddings", "head_dim", "model_type",
                                          "architectures", "text_config"}
_HF_EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts")


@dataclass
class CatalogEntries:
    """Validated entries of one or more catalog files, later files winning."""

    models: dict[str, ModelSpec] = field(default_factory=dict)
    gpus: dict[str, GpuSpec] = field(default_factory=dict)
    instance_types: dict[str, InstanceType] = field(default_factory=dict)
    engines: dict[str, dict] = field(default_factory=dict)  # profile -> host-time overrides
    sources: list[str] = field(default_factory=list)


def _fail(message: str, source: str, where: str) -> UserInputError:
    return UserInputError(message, source=source, field=where)


def _number(value: Any, source: str, where: str, *, integer: bool = False,
            minimum: float | None = 0.0, strictly: bool = True) -> float | int:
    """A real number (an int where `integer`), above `minimum`; bools are not numbers."""
    kind = "an integer" if integer else "a number"
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    # NaN and inf are not sizes, rates or prices.
    if isinstance(value, bool) or not ok or (isinstance(value, float) and not math.isfinite(value)):
        raise _fail(f"expected {kind}, got {value!r}", source, where)
    if minimum is not None and (value <= minimum if strictly else value < minimum):
        bound = f"> {minimum:g}" if strictly else f">= {minimum:g}"
        raise _fail(f"expected {kind} {bound}, got {value!r}", source, where)
    return int(value) if integer else float(value)


def _fields_of(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.name != "name"}


def _check_keys(entry: dict, allowed: dict, source: str, where: str, what: str) -> None:
    for key in entry:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _fail(f"unknown {what}{hint} (known: {', '.join(allowed)})", source,
                        f"{where}.{key}")


def _typed(cls, entry: dict, source: str, where: str, base: dict) -> dict:
    """Check each given field against the dataclass field's type; merge over `base`."""
    out = dict(base)
    hints = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    for key, value in entry.items():
        hint = hints[key]
        path = f"{where}.{key}"
        if hint.startswith("int") and "None" not in hint:
            out[key] = _number(value, source, path, integer=True, minimum=0, strictly=False)
        elif hint.startswith("int"):  # int | None
            out[key] = None if value is None else _number(value, source, path, integer=True)
        elif hint.startswith("float") and "None" in hint:
            out[key] = None if value is None else _number(value, source, path)
        elif hint.startswith("float"):
            # Sizes, rates and prices are > 0; a discount may be 0.
            out[key] = _number(value, source, path, minimum=0, strictly=key not in _ZERO_OK)
        elif hint == "bool":
            if not isinstance(value, bool):
                raise _fail(f"expected true or false, got {value!r}", source, path)
            out[key] = value
        elif hint == "str":
            if not isinstance(value, str) or not value:
                raise _fail(f"expected a non-empty string, got {value!r}", source, path)
            out[key] = value
        else:
            out[key] = value  # tuples and maps: checked by the section's own code
    return out


def _missing(cls, data: dict, source: str, where: str) -> None:
    for name, f in _fields_of(cls).items():
        no_default = (f.default is dataclasses.MISSING
                      and f.default_factory is dataclasses.MISSING)
        if no_default and name not in data:
            raise _fail("missing required field", source, f"{where}.{name}")


# ---------------------------------------------------------------- models
def _hf_model(name: str, cfg: dict, source: str, where: str) -> dict:
    """ModelSpec fields from a config.json mapping (its extra keys are the file's own)."""
    top, top_where = cfg, where
    if isinstance(cfg.get("text_config"), dict):
        cfg, where = cfg["text_config"], f"{where}.text_config"
    for key in _HF_REQUIRED:
        if key not in cfg:
            raise _fail("missing required config.json field (a config_json entry may give "
                        f"it beside the path: {key}: VALUE)", source, f"{where}.{key}")

    def num(key: str, default: Any = None, minimum: float = 0.0) -> int:
        value = cfg.get(key)
        value = default if value is None else value  # config.json null = the class default
        return int(_number(value, source, f"{where}.{key}", integer=True, minimum=minimum))

    hidden, heads = num("hidden_size"), num("num_attention_heads")
    head_dim = cfg.get("head_dim")  # config.json: null = hidden / heads; 0 is refused below
    head_dim = hidden // heads if head_dim is None else head_dim
    spec: dict = {
        "layers": num("num_hidden_layers"), "hidden": hidden, "q_heads": heads,
        "kv_heads": num("num_key_value_heads", heads),
        "head_dim": _number(head_dim, source, f"{where}.head_dim", integer=True),
        "vocab": num("vocab_size"),
        "max_context_tokens": num("max_position_embeddings", 4096),
        # Qwen2's configs carry no attention_bias key: its q, k, v projections always have one.
        "attention_bias": bool(cfg.get("attention_bias",
                                       str(cfg.get("model_type", "")).startswith("qwen2"))),
        "tied_embeddings": _tied(cfg, source, where),
        "checkpoint_precision": _checkpoint_precision(top, source, top_where),
        "source": f"config.json fields in {source}",
    }
    experts_key = next((k for k in _HF_EXPERTS if cfg.get(k)), None)
    if experts_key is None:
        spec["ffn"] = num("intermediate_size")
    else:
        spec.update(_moe_fields(cfg, num, experts_key, spec["layers"], source, where))
    if cfg.get("kv_lora_rank"):
        spec.update(_mla_fields(cfg, hidden, heads, source, where))
    return spec


# quantization_config.quant_method values whose weights are 8-bit floats (vLLM serves them
# as fp8 on GPUs with FP8 tensor cores).
_FP8_METHODS = ("fp8", "fbgemm_fp8", "modelopt")


def _checkpoint_precision(cfg: dict, source: str, where: str) -> str | None:
    """"fp8" for an FP8 checkpoint, None for bf16/fp16/fp32; other quantizations (AWQ, GPTQ,
    MXFP4, bitsandbytes, int4/int8 compressed-tensors) are refused: only bf16 and fp8 weights
    are simulated."""
    quant = cfg.get("quantization_config")
    if quant is None:
        return None
    field = f"{where}.quantization_config"
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method in _FP8_METHODS or (method == "modelopt" and "FP8" in str(quant.get("quant_algo"))):
        return "fp8"
    if method == "compressed-tensors":
        groups = quant.get("config_groups")
        weights = [g.get("weights") for g in groups.values()] if isinstance(groups, dict) else []
        if weights and all(isinstance(w, dict) and w.get("num_bits") == 8
                           and w.get("type") == "float" for w in weights):
            return "fp8"
    raise _fail(f"quant_method {method!r} is not simulated: only bf16 and fp8 weights "
                "(quant_method fp8, or compressed-tensors with 8-bit float weights)", source,
                field)


def _tied(cfg: dict, source: str, where: str) -> bool:
    """`tie_word_embeddings`; when absent, the config class's default: True for Gemma's
    (Gemma2Config, Gemma3TextConfig), False for Llama, Mistral, Mixtral, Qwen and DeepSeek's."""
    value = cfg.get("tie_word_embeddings")
    if value is None:
        return str(cfg.get("model_type", "")).startswith("gemma")
    if not isinstance(value, bool):
        raise _fail(f"expected true or false, got {value!r}", source,
                    f"{where}.tie_word_embeddings")
    return value


def _moe_fields(cfg: dict, num, experts_key: str, layers: int, source: str,
                where: str) -> dict:
    """Routed experts, shared experts and which layers are dense, as each family writes them.

    Routed experts are `moe_intermediate_size` wide (else `intermediate_size`: Mixtral,
    Llama 4). Shared experts: DeepSeek's `n_shared_experts` of the routed width; Qwen2-MoE's
    one `shared_expert_intermediate_size` MLP, counted as that many routed widths; Llama 4's
    one shared expert of `intermediate_size`. Dense layers (their MLP `intermediate_size`
    wide, Llama 4's `intermediate_size_mlp`): DeepSeek's first `first_k_dense_replace` and
    those off `moe_layer_freq`, Qwen2-MoE's off `decoder_sparse_step` and `mlp_only_layers`,
    Llama 4's off `interleave_moe_layer_step`. Where they sit does not change a count.
    """
    out: dict = {"num_experts": num(experts_key), "experts_per_token": num("num_experts_per_tok")}
    llama4 = str(cfg.get("model_type", "")).startswith("llama4")
    out["ffn"] = num("moe_intermediate_size", cfg.get("intermediate_size"))
    shared = num("n_shared_experts", 0, minimum=-1)
    shared_width = cfg.get("shared_expert_intermediate_size")
    if shared_width:
        width = num("shared_expert_intermediate_size")
        if width % out["ffn"]:
            raise _fail(f"shared_expert_intermediate_size {width} is not a whole number of "
                        f"experts of {out['ffn']} (moe_intermediate_size); the catalog counts "
                        "shared experts in routed widths", source,
                        f"{where}.shared_expert_intermediate_size")
        shared = width // out["ffn"]
    if llama4:
        shared = 1  # Llama4TextMoe always adds one shared expert of the routed width
    out["shared_experts"] = shared
    first_dense = num("first_k_dense_replace", 0, minimum=-1)
    every = num("moe_layer_freq", 1) if "moe_layer_freq" in cfg else num(
        "decoder_sparse_step", 1) if "decoder_sparse_step" in cfg else num(
        "interleave_moe_layer_step", 1)
    only_mlp = cfg.get("mlp_only_layers") or []
    if not isinstance(only_mlp, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in only_mlp):
        raise _fail(f"expected a list of layer indices, got {only_mlp!r}", source,
                    f"{where}.mlp_only_layers")
    if llama4:  # Llama4TextDecoderLayer: layer i is MoE when (i + 1) % step == 0
        moe = [i for i in range(layers) if (i + 1) % every == 0]
    elif "moe_layer_freq" in cfg or first_dense:  # DeepSeek: i >= k and i % freq == 0
        moe = [i for i in range(layers) if i >= first_dense and i % every == 0]
    else:  # Qwen2-MoE / Qwen3-MoE: (i + 1) % step == 0 and i not in mlp_only_layers
        moe = [i for i in range(layers) if (i + 1) % every == 0 and i not in only_mlp]
    out["dense_layers"] = layers - len(moe)
    if out["dense_layers"]:
        key = "intermediate_size_mlp" if llama4 and "intermediate_size_mlp" in cfg else (
            "intermediate_size")
        out["dense_ffn"] = num(key)
    return out


def _mla_fields(cfg: dict, hidden: int, heads: int, source: str, where: str) -> dict:
    """Multi-head latent attention (DeepSeek-V2/V3): one latent of kv_lora_rank + rope dims is
    cached per layer, and the projections are low-rank (parameter count from their shapes)."""
    def num(key: str) -> int:
        return int(_number(cfg.get(key), source, f"{where}.{key}", integer=True))

    kv_rank, rope, nope, v_dim = (num("kv_lora_rank"), num("qk_rope_head_dim"),
                                  num("qk_nope_head_dim"), num("v_head_dim"))
    q_rank = cfg.get("q_lora_rank")
    q_out = heads * (nope + rope)
    # The low-rank paths carry an RMSNorm each (q_a_layernorm, kv_a_layernorm), counted as the
    # built-in DeepSeek-V3 entry counts them.
    q_params = hidden * q_out if not q_rank else hidden * q_rank + q_rank * q_out + q_rank
    kv_params = hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + kv_rank
    return {"kv_elems_per_token_per_layer": kv_rank + rope, "head_dim": kv_rank + rope,
            "attention_params_per_layer": q_params + kv_params + heads * v_dim * hidden}


def _with_overrides(cfg: dict, fields: dict) -> dict:
    """config.json content with the catalog entry's own fields over it (in its text_config
    when it has one, as that is what is read)."""
    if not fields:
        return cfg
    if isinstance(cfg.get("text_config"), dict):
        return dict(cfg, text_config={**cfg["text_config"], **fields})
    return {**cfg, **fields}


def _model(name: str, entry: Any, source: str) -> ModelSpec:
    where = f"models.{name}"
    if not isinstance(entry, dict):
        raise _fail(f"expected a mapping of model fields, got {entry!r}", source, where)
    base = {}
    if name in _builtin_models():
        base = dataclasses.asdict(_builtin_models()[name])
        base.pop("name")
    if isinstance(entry.get("config_json"), dict) or _HF_MARKERS & set(entry):
        if "config_json" in entry:
            _check_keys(entry, dict.fromkeys(ALLOWED_BESIDE_CONFIG_JSON),
                        source, where, "model field (beside config_json)")
        cfg = entry.get("config_json", entry)
        if cfg is not entry:
            cfg = _with_overrides(cfg, {k: v for k, v in entry.items() if k in HF_FIELDS})
        data = _hf_model(name, cfg, source, where)
        extra = {k: v for k, v in entry.items() if k in ("source", "max_context_tokens")}
        data = _typed(ModelSpec, extra, source, where, data)
    else:
        _check_keys(entry, _fields_of(ModelSpec), source, where, "model field")
        data = _typed(ModelSpec, entry, source, where, base)
        data.setdefault("source", f"user catalog {source}")
    _missing(ModelSpec, data, source, where)
    spec = ModelSpec(name=name, **data)
    for key in ("layers", "hidden", "q_heads", "kv_heads", "head_dim", "ffn", "vocab",
                "max_context_tokens"):
        if getattr(spec, key) <= 0:
            raise _fail(f"expected an integer > 0, got {getattr(spec, key)!r}", source,
                        f"{where}.{key}")
    if spec.num_experts and not 1 <= spec.experts_per_token <= spec.num_experts:
        # A token routed to more experts than exist (or none) is no model: refused, not run.
        hf = "config_json" in entry or bool(_HF_MARKERS & set(entry))
        raise _fail(f"expected 1 <= experts per token <= {spec.num_experts} experts, got "
                    f"{spec.experts_per_token}", source,
                    f"{where}.{'num_experts_per_tok' if hf else 'experts_per_token'}")
    if spec.q_heads % spec.kv_heads:
        hf = "config_json" in entry or bool(_HF_MARKERS & set(entry))
        raise _fail(f"num_key_value_heads {spec.kv_heads} must divide the "
                    f"{spec.q_heads} attention heads", source,
                    f"{where}.{'num_key_value_heads' if hf else 'kv_heads'}")
    return spec


# ---------------------------------------------------------------- GPUs
def _gpu(name: str, entry: Any, source: str) -> GpuSpec:
    where = f"gpus.{name}"
    if not isinstance(entry, dict):
        raise _fail(f"expected a mapping of GPU fields, got {entry!r}", source, where)
    _check_keys(entry, _fields_of(GpuSpec), source, where, "GPU field")
    builtin = _builtin_gpus().get(name)
    if builtin is not None:
        base = dataclasses.asdict(builtin)
        base.pop("name")
    else:
        ref = _builtin_gpus()[REFERENCE_GPU]
        base = {"fp8_tflops": None, "hbm_efficiency": ref.hbm_efficiency,
                "compute_efficiency": ref.compute_efficiency,
                "efficiency_source": ASSUMED_EFFICIENCY, "source": f"user catalog {source}",
                "allreduce_bus_frac": ref.allreduce_bus_frac,
                "allreduce_latency_us": ref.allreduce_latency_us,
                "allreduce_source": f"assumed ({REFERENCE_GPU} fit)",
                "fp8_efficiency_factor": ref.fp8_efficiency_factor}
        if {"hbm_efficiency", "compute_efficiency"} & set(entry) and \
                "efficiency_source" not in entry:
            base["efficiency_source"] = f"given in {source}, no calibration points"
    data = _typed(GpuSpec, entry, source, where, base)
    for key in ("allreduce_bus_frac", "allreduce_latency_us"):
        if key in entry:
            data[key] = _tp_map(entry[key], source, f"{where}.{key}")
    if "fp4_formats" in entry:
        data["fp4_formats"] = _fp4_formats(entry["fp4_formats"], source, f"{where}.fp4_formats")
    _missing(GpuSpec, data, source, where)
    for key in ("bf16_tflops", "memory_gib", "memory_bandwidth_tbps", "link_gbps_per_direction"):
        _number(data[key], source, f"{where}.{key}")
    for key in ("hbm_efficiency", "compute_efficiency"):
        value = _number(data[key], source, f"{where}.{key}")
        if value > 1:
            raise _fail(f"expected a fraction in (0, 1], got {value!r}", source, f"{where}.{key}")
    return GpuSpec(name=name, **data)


def _fp4_formats(value: Any, source: str, where: str) -> tuple[str, ...]:
    """The FP4 formats a GPU's tensor cores take: a list of nvfp4 / mxfp4 (may be empty)."""
    known = [p.value for p in Precision if p.is_fp4]
    if not isinstance(value, list) or any(v not in known for v in value):
        raise _fail(f"expected a list of {' / '.join(known)}, got {value!r}", source, where)
    return tuple(value)


def _tp_map(value: Any, source: str, where: str) -> tuple[tuple[int, float], ...]:
    if not isinstance(value, dict) or not value:
        raise _fail(f"expected a mapping of TP degree to value, got {value!r}", source, where)
    out = []
    for key, item in value.items():
        tp = int(key) if isinstance(key, int) or str(key).isdigit() else None
        if tp is None or tp < 1:
            raise _fail(f"expected a TP degree (integer >= 1), got {key!r}", source, where)
        out.append((tp, _number(item, source, f"{where}.{key}")))
    return tuple(sorted(out))


# ---------------------------------------------------------------- instance types
def _instance_type(name: str, entry: Any, source: str, known_gpus: set[str]) -> InstanceType:
    where = f"instance_types.{name}"
    if not isinstance(entry, dict):
        raise _fail(f"expected a mapping of instance-type fields, got {entry!r}", source, where)
    _check_keys(entry, _fields_of(InstanceType), source, where, "instance-type field")
    base: dict = {"source": f"user catalog {source}", "nvlink_domain_gpus": 1,
                  "verified": False, "spot_discount_frac": 0.3, "labels": {}}
    if name in _builtin_instance_types():
        base = dataclasses.asdict(_builtin_instance_types()[name])
        base.pop("name")
    data = _typed(InstanceType, entry, source, where, base)
    if "zones" in entry:
        zones = entry["zones"]
        if not isinstance(zones, list) or not zones or not all(isinstance(z, str) for z in zones):
            raise _fail(f"expected a non-empty list of zone names, got {zones!r}", source,
                        f"{where}.zones")
        data["zones"] = tuple(zones)
    if "labels" in entry and not (isinstance(entry["labels"], dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in entry["labels"].items())):
        raise _fail("expected a mapping of label to string value", source, f"{where}.labels")
    _missing(InstanceType, data, source, where)
    if data["gpu"] not in known_gpus:
        close = difflib.get_close_matches(data["gpu"], sorted(known_gpus), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise _fail(f"unknown GPU {data['gpu']!r}{hint} (add it under `gpus:`)", source,
                    f"{where}.gpu")
    gpus, domain = data["num_gpus"], data["nvlink_domain_gpus"]
    # A rack-scale NVLink domain spans nodes (GB200 NVL72: 18 nodes of 4 GPUs), so it may be
    # larger than one node, in whole nodes; inside one node it is at most the node.
    if gpus < 1 or domain < 1 or (domain > gpus and domain % gpus):
        raise _fail(f"needs num_gpus >= 1 and nvlink_domain_gpus >= 1, at most num_gpus or a "
                    f"whole number of nodes of it (NVL72: 72 on nodes of 4), got {gpus} and "
                    f"{domain}", source, where)
    if not 0 <= data["spot_discount_frac"] < 1:
        raise _fail(f"expected a fraction in [0, 1), got {data['spot_discount_frac']!r}",
                    source, f"{where}.spot_discount_frac")
    return InstanceType(name=name, **data)


# ---------------------------------------------------------------- engines
def _engine(name: str, entry: Any, source: str) -> dict:
    """Host time of an engine profile (what `calibrate --fit` writes): ms per step, us per
    sequence; an engine property, so it applies on every GPU that engine runs on."""
    where = f"engines.{name}"
    if name not in ENGINE_NAMES:
        raise _fail(f"unknown engine profile (known: {', '.join(ENGINE_NAMES)})", source, where)
    if not isinstance(entry, dict):
        raise _fail(f"expected a mapping of engine fields, got {entry!r}", source, where)
    _check_keys(entry, {**ENGINE_FIELDS, "source": None}, source, where, "engine field")
    out: dict = {"source": f"user catalog {source}"}
    for key, (target, scale) in ENGINE_FIELDS.items():
        if key in entry:
            value = _number(entry[key], source, f"{where}.{key}", strictly=False)
            if value > ENGINE_FIELD_MAX[key]:
                raise _fail(f"expected at most {ENGINE_FIELD_MAX[key]:g}, got {value:g} (the "
                            f"unit is {key.rsplit('_', 1)[1]})", source, f"{where}.{key}")
            out[target] = value * scale
    if "source" in entry:
        if not isinstance(entry["source"], str) or not entry["source"]:
            raise _fail(f"expected a non-empty string, got {entry['source']!r}", source,
                        f"{where}.source")
        out["source"] = entry["source"]
    return out


# ---------------------------------------------------------------- files
def add_catalog(entries: CatalogEntries, data: Any, source: str) -> CatalogEntries:
    """Validate one parsed catalog file into `entries` (its entries win over earlier ones)."""
    if not isinstance(data, dict):
        raise UserInputError("expected a mapping with sections models, gpus, instance_types, "
                             "engines",
                             source=source)
    _check_keys(data, dict.fromkeys(SECTIONS), source, "(top level)", "catalog section")
    for section in SECTIONS:
        value = data.get(section) or {}
        if not isinstance(value, dict):
            raise _fail(f"expected a mapping of name to entry, got {value!r}", source, section)
        for name in value:
            if not isinstance(name, str) or not name:
                raise _fail(f"expected a name (a string), got {name!r}", source, section)
    for name, entry in (data.get("gpus") or {}).items():
        entries.gpus[name] = _gpu(name, entry, source)
    for name, entry in (data.get("models") or {}).items():
        entries.models[name] = _model(name, entry, source)
    known_gpus = set(_builtin_gpus()) | set(entries.gpus)
    for name, entry in (data.get("instance_types") or {}).items():
        entries.instance_types[name] = _instance_type(name, entry, source, known_gpus)
    for name, entry in (data.get("engines") or {}).items():
        entries.engines[name] = {**entries.engines.get(name, {}), **_engine(name, entry, source)}
    entries.sources.append(source)
    return entries


def install(entries: CatalogEntries) -> None:
    """Make `entries` part of the catalog for this process (every lookup sees them)."""
    set_user_entries(entries.models, entries.gpus, entries.instance_types, entries.engines)


def gpu_has_calibration_points(name: str) -> bool:
    """False for a GPU whose efficiency factors are assumed rather than fixed by measured rows
    (user entries without a fit, and the built-in GPUs gpus.yaml marks `assumed`)."""
    return not get_gpu(name).efficiency_source.lower().startswith(("assumed", "given in"))
