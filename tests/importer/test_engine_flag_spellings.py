"""Engine flags in the spellings each engine's own parser accepts (issue 30: vLLM took
`--gpu_memory_utilization 0.5` from production-stack's chart while gpuscale listed it as not
simulated and ran 0.9).

- vLLM's FlexibleArgumentParser reads underscores in a `--flag` name as dashes
  (vllm/utils/argparse_utils.py): every flag gpuscale reads is read in both spellings.
- SGLang's argparse declares dashed names only (python/sglang/srt/server_args.py) and
  trtllm-serve's click options underscored ones only (tensorrt_llm/commands/serve.py, with
  aliases such as `--tensor_parallel_size` / `--tp_size`): the other spelling makes the engine
  exit at start, so it is refused in one line rather than simulated as served.
"""

from __future__ import annotations

import pytest

from gpuscale.audit.loader import parse_text
from gpuscale.audit.workloads import parallel_size
from gpuscale.importer import sglang_args, trtllm_args, vllm_args

from .bundle import container, load_docs
from .test_engine_args import _sglang, _trtllm
from .test_manifests import imported, refused

VALUES = {int: "48", float: "0.5", str: "fp8"}


def _value_for(kind) -> str:
    return VALUES.get(kind, "4096")  # human_int and friends


def _vllm(args: list[str]) -> vllm_args.VllmArgs:
    return vllm_args.parse_container({"command": ["vllm", "serve", "m"], "args": args})


@pytest.mark.parametrize("flag", sorted(f for f in vllm_args.FLAGS if f.startswith("--")))
def test_every_vllm_flag_reads_the_same_with_underscores(flag):
    value = _value_for(vllm_args.FLAGS[flag][1])
    dashed = _vllm([flag, value])
    underscored = _vllm([flag.replace("-", "_").replace("__", "--", 1), value])
    inline = _vllm([flag.replace("-", "_").replace("__", "--", 1) + "=" + value])
    assert underscored.values == inline.values == dashed.values
    assert dashed.values[vllm_args.FLAGS[flag][0]] is not None
    assert underscored.ignored == []


# long switches only: a short one (`-ep`) has no underscored spelling
@pytest.mark.parametrize("flag", sorted(f for f in vllm_args.BOOL_FLAGS if f.startswith("--")))
def test_every_vllm_switch_reads_the_same_with_underscores(flag):
    spelled = "--" + flag[2:].replace("-", "_")
    assert _vllm([spelled]).values == _vllm([flag]).values != {"model": "m"}


def test_an_underscored_switch_before_the_model_is_not_read_as_taking_it():
    args = vllm_args.parse_container({"command": ["vllm", "serve"],
                                      "args": ["--enable_prefix_caching", "org/model"]})
    assert args.values["model"] == "org/model"


def test_production_stack_underscores_set_the_engine_that_is_simulated(tmp_path):
    docs = load_docs()
    c = container(docs)
    c["args"] = ["Qwen/Qwen3-32B", "--tensor_parallel_size", "4", "--gpu_memory_utilization",
                 "0.5", "--max_num_seqs", "64", "--max_model_len", "16384"]
    imp = imported(tmp_path, docs)
    engine = imp.scenario.engine
    assert (engine.gpu_memory_utilization, engine.max_num_seqs, engine.max_model_len) == \
        (0.5, 64, 16384)
    assert imp.scenario.model.tp == 4
    assert not any("gpu_memory" in note or "gpu-memory" in note for note in imp.notes)


@pytest.mark.parametrize("flag", sorted(f for f in sglang_args.FLAGS if "-" in f[2:]))
def test_sglang_refuses_the_underscored_spelling_it_does_not_declare(flag):
    spelled = "--" + flag[2:].replace("-", "_")
    with pytest.raises(ValueError, match=f"only as {flag}"):
        sglang_args.parse_container({"command": ["python3", "-m", "sglang.launch_server"],
                                     "args": [spelled, _value_for(sglang_args.FLAGS[flag][1])]})


@pytest.mark.parametrize("flag", sorted(f for f in trtllm_args.FLAGS if "_" in f))
def test_trtllm_refuses_the_dashed_spelling_it_does_not_declare(flag):
    spelled = "--" + flag[2:].replace("_", "-")
    with pytest.raises(ValueError, match=f"only as {flag}"):
        trtllm_args.parse_container({"command": ["trtllm-serve", "m"],
                                     "args": [spelled, _value_for(trtllm_args.FLAGS[flag][1])]})


def test_trtllm_long_names_and_aliases_read_alike(tmp_path):
    long = trtllm_args.parse_container({"command": ["trtllm-serve", "m"], "args": [
        "--tensor_parallel_size", "2", "--pipeline_parallel_size", "2",
        "--free_gpu_memory_fraction", "0.7"]})
    short = trtllm_args.parse_container({"command": ["trtllm-serve", "m"], "args": [
        "--tp_size", "2", "--pp_size", "2", "--kv_cache_free_gpu_memory_fraction", "0.7"]})
    assert long.values == short.values == {"tp": 2, "pp": 2, "kv_cache_free_fraction": 0.7,
                                           "model": "m"}


def test_a_wrong_spelling_in_a_bundle_is_one_line_naming_the_file_and_flag(tmp_path):
    docs = _sglang(load_docs(), ["--model-path", "Qwen/Qwen3-32B", "--tp_size", "4"])
    refused(tmp_path, docs, "--tp_size", "--tp-size", "all.yaml")
    docs = _trtllm(load_docs(), ["Qwen/Qwen3-32B", "--tp-size", "4"])
    refused(tmp_path, docs, "--tp-size", "--tp_size", "all.yaml")


@pytest.mark.parametrize("args", [["--tensor_parallel_size", "4"], ["--tp_size", "4"],
                                  ["--tensor-parallel-size=4"], ["-tp", "4"]])
def test_audit_reads_the_tensor_parallel_size_in_every_spelling(args):
    text = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  template:\n"
            "    spec:\n      containers:\n      - name: c\n        args: " + str(args) + "\n")
    (obj,) = parse_text(text, "m.yaml")
    assert parallel_size(obj, "tensor") == 4
