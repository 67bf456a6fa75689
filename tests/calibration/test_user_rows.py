"""`gpuscale calibrate --rows FILE`: rows as data, closed-loop workloads, the JSON shape."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from gpuscale.calibration.user_rows import builtin_rows, parse_rows, run_row
from gpuscale.cli import cli
from gpuscale.errors import UserInputError

ROW = """
rows:
  - id: my-h100-point
    source: free text
    gpu: H100-SXM
    model: Llama-3.3-70B
    weights: fp8
    kv_cache: fp8
    tp: 2
    replicas: 1
    engine: {kind: trtllm, max_num_seqs: 256, max_num_batched_tokens: 8192, cuda_graphs: true}
    workload:
      kind: closed_loop
      concurrency: 50
      requests: 200
      prompt_tokens: {kind: fixed, value: 5000}
      output_tokens: {kind: fixed, value: 500}
    checks:
      - {statistic: itl_mean_s, measured: 0.0597, tolerance: 0.30}
"""


def test_the_issue_example_runs_and_prints_the_exact_json(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW)
    out = CliRunner().invoke(cli, ["calibrate", "--rows", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert list(data) == ["rows"] and data["rows"][0]["row"] == "my-h100-point"
    (check,) = data["rows"][0]["checks"]
    assert list(check) == ["statistic", "measured", "predicted", "error_frac", "tolerance",
                           "passed"]
    assert check["statistic"] == "itl_mean_s" and check["passed"]
    text = CliRunner().invoke(cli, ["calibrate", "--rows", str(path)])
    assert "my-h100-point" in text.output and "itl_mean_s" in text.output


def test_unknown_fields_are_refused_in_one_line_naming_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(ROW.replace("cuda_graphs: true", "cuda_graphs: true, turbo: 1"))
    out = CliRunner().invoke(cli, ["calibrate", "--rows", str(path)])
    assert out.exit_code == 2
    assert "bad.yaml" in out.output and "turbo" in out.output
    assert "Traceback" not in out.output and len(out.output.strip().splitlines()) == 1
    # The file and the field are named once each, file first (they were printed twice).
    assert out.output.count("bad.yaml") == 1 and out.output.count("rows.0.engine") == 1
    assert out.output.index("bad.yaml") < out.output.index("rows.0.engine")
    with pytest.raises(UserInputError, match="needs concurrency"):
        parse_rows(ROW.replace("concurrency: 50", ""), "x.yaml")
    with pytest.raises(UserInputError, match=r"engine.kind"):
        parse_rows(ROW.replace("kind: trtllm", "kind: tgi"), "x.yaml")


def test_a_failing_user_row_exits_nonzero(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW.replace("measured: 0.0597", "measured: 0.5"))
    out = CliRunner().invoke(cli, ["calibrate", "--rows", str(path)])
    assert out.exit_code != 0 and "FAIL" in out.output


def test_closed_loop_keeps_at_most_n_requests_in_flight_and_honours_think_time():
    (row,) = parse_rows(ROW.replace("concurrency: 50", "concurrency: 4")
                        .replace("requests: 200", "requests: 12"), "x")
    tight = run_row(row)
    (slow,) = parse_rows(ROW.replace("concurrency: 50", "concurrency: 4\n      think_time_s: 30")
                         .replace("requests: 200", "requests: 12"), "x")
    thinking = run_row(slow)
    # Each client waits 30 s between requests: throughput falls, latency per token does not.
    assert thinking["output_tokens_per_s"] < 0.7 * tight["output_tokens_per_s"]
    assert thinking["itl_mean_s"] <= tight["itl_mean_s"] * 1.01


def test_closed_loop_concurrency_one_is_serial():
    from gpuscale.calibration.user_rows import row_hardware
    from gpuscale.serving.bench import replay_closed_loop
    from gpuscale.serving.replica import EngineConfig

    (row,) = parse_rows(ROW, "x")
    hw = row_hardware(row)
    cfg = EngineConfig(256, 8192, 16, 50_000, 10**6, 1e9)
    table = replay_closed_loop(hw, cfg, np.full(3, 100), np.full(3, 10), 1)
    cols = table.columns()
    assert cols.arrival_s[1] == pytest.approx(cols.finish_s[0])
    assert cols.arrival_s[2] == pytest.approx(cols.finish_s[1])


def test_builtin_rows_are_a_file_in_the_same_format():
    rows = builtin_rows()
    assert {r.id.split("-")[0] for r in rows} >= {"A11", "P1", "P2"}
    assert any(r.workload.kind == "closed_loop" for r in rows)


def test_pp_runs_the_pipeline_path_not_a_wider_tp_group():
    from gpuscale.calibration.user_rows import row_hardware

    (wide,) = parse_rows(ROW.replace("tp: 2", "tp: 4").replace("concurrency: 50", "concurrency: 4")
                         .replace("requests: 200", "requests: 12"), "wide.yaml")
    (piped,) = parse_rows(ROW.replace("tp: 2", "tp: 2\n    pp: 2")
                          .replace("concurrency: 50", "concurrency: 4")
                          .replace("requests: 200", "requests: 12"), "pp.yaml")
    hw = row_hardware(piped)
    assert (hw.tp, hw.pp, hw.tp_degree) == (4, 2, 2)  # 4 GPUs: 2 stages of TP2
    assert row_hardware(wide).pp == 1
    # Four sequences over two stages: each token crosses both stages at TP2 instead of one
    # TP4 group, so the inter-token latency is longer than the wide TP group's.
    assert run_row(piped)["itl_mean_s"] > 1.2 * run_row(wide)["itl_mean_s"]


@pytest.mark.parametrize("old, new, expected", [
    # Found by fuzzing: `requests: 1e9` was accepted and ran past any time limit.
    ("requests: 200", "requests: 1000000000", "about 1,000,000,000 requests, more than"),
    ("kind: closed_loop\n      concurrency: 50\n      requests: 200",
     "kind: poisson\n      rate_per_s: 1.0e6\n      duration_s: 3600", "about 3,600,000,000"),
    ("kind: closed_loop\n      concurrency: 50\n      requests: 200",
     "kind: poisson\n      rate_per_s: 1.0e-6\n      duration_s: 1.0e9", "31-day horizon"),
])
def test_a_row_past_the_one_run_limits_is_refused_in_one_line(tmp_path, old, new, expected):
    path = tmp_path / "rows.yaml"
    assert old in ROW
    path.write_text(ROW.replace(old, new))
    out = CliRunner().invoke(cli, ["calibrate", "--rows", str(path)])
    assert out.exit_code == 2, out.output
    assert expected in out.output and "rows.0.workload" in out.output
    assert len(out.output.strip().splitlines()) == 1


@pytest.mark.parametrize("old, new, field, expected", [
    # Found by probing: both ran (a 1e12-token prompt capped to 10M and replayed; a row with
    # no name in the table).
    ("{kind: fixed, value: 5000}", "{kind: fixed, value: 1000000000000}", "rows.0",
     "1000000000000 prompt + 500 output tokens is more than the 131072-token context"),
    ("id: my-h100-point", "id: ''", "rows.0.id", "at least 1 character"),
])
def test_absurd_rows_are_refused_in_one_line(tmp_path, old, new, field, expected):
    path = tmp_path / "rows.yaml"
    assert old in ROW
    path.write_text(ROW.replace(old, new))
    out = CliRunner().invoke(cli, ["calibrate", "--rows", str(path)])
    assert out.exit_code == 2, out.output
    assert f"{field}: " in out.output and expected in out.output, out.output
    assert len(out.output.strip().splitlines()) == 1


EP_ROW = """
rows:
  - id: ep-decode
    gpu: H100-SXM
    model: DeepSeek-V3
    weights: fp8
    kv_cache: bf16
    engine: {kind: sglang, max_num_seqs: 64, max_num_batched_tokens: 64}
    disaggregated:
      measured_phase: decode
      prefill: {tp: 16, nodes: 2, ep: 16, dp_attention: true}
      decode: {tp: 16, nodes: 2, ep: 16, dp_attention: true}
    workload:
      kind: offline
      requests: 400
      prompt_tokens: {kind: fixed, value: 1000}
      output_tokens: {kind: fixed, value: 20}
    checks:
      - {statistic: output_tokens_per_s, measured: 1000, tolerance: 10}
"""


def _ep_row(**edits: str):
    text = EP_ROW
    for old, new in edits.items():
        text = text.replace(old, new)
    return parse_rows(text, "ep.yaml")


def test_a_decode_phase_row_runs_its_pool_with_kv_already_there():
    """Decode generates all but the first token (it came with the KV); every request is
    admitted straight into decode: no prefill, TTFT 0."""
    (row,) = _ep_row()
    got = run_row(row)
    assert got["ttft_mean_s"] == 0.0
    tokens_per_request = got["output_tokens_per_s"] / got["requests_per_s"]
    assert tokens_per_request == pytest.approx(19.0)


def test_a_prefill_phase_row_counts_prefills_and_refuses_decode_statistics():
    (row,) = _ep_row(**{"measured_phase: decode": "measured_phase: prefill",
                        "output_tokens_per_s, measured: 1000": "requests_per_s, measured: 10"})
    got = run_row(row)
    assert got["requests_per_s"] > 0 and got["ttft_mean_s"] > 0
    with pytest.raises(UserInputError, match="prefill phase reports requests_per_s"):
        _ep_row(**{"measured_phase: decode": "measured_phase: prefill"})


@pytest.mark.parametrize(("old", "new", "message"), [
    ("model: DeepSeek-V3", "model: Llama-3.1-70B", "apply to MoE models"),
    ("decode: {tp: 16, nodes: 2, ep: 16", "decode: {tp: 16, nodes: 2, ep: 12",
     "ep=12 must divide tp=16"),
    ("decode: {tp: 16, nodes: 2, ep: 16, dp_attention: true}",
     "decode: {tp: 16, nodes: 2, ep: 16, dp: 4}", r"dp \(attention DP ranks\) needs"),
])
def test_expert_parallel_fields_are_checked(old, new, message):
    with pytest.raises(UserInputError, match=message):
        _ep_row(**{old: new})


def test_a_replica_spanning_nodes_needs_whole_nodes_and_the_rows_gpu():
    (row,) = _ep_row(**{"decode: {tp: 16, nodes: 2": "decode: {tp: 16, nodes: 3"})
    with pytest.raises(UserInputError, match="16 GPUs do not split over 3 nodes"):
        run_row(row)
    with pytest.raises(UserInputError, match="holds GB200, not H100-SXM"):
        _ep_row(**{"gpu: H100-SXM": "gpu: H100-SXM\n    instance_type: p6e-gb200.36xlarge"})


# Where the two halves of issue 28 meet in the row format: a disaggregated (EP) row with the
# dense half's statistics, `per` and whole-prompt refusal.

def test_a_phase_accepts_the_medians_and_input_throughput_of_its_own_side():
    (prefill,) = _ep_row(**{"measured_phase: decode": "measured_phase: prefill",
                            "output_tokens_per_s, measured: 1000":
                            "input_tokens_per_s, measured: 10"})
    assert run_row(prefill)["input_tokens_per_s"] > 0
    (decode,) = _ep_row(**{"output_tokens_per_s, measured: 1000": "itl_p50_s, measured: 0.05"})
    assert run_row(decode)["itl_p50_s"] > 0
    with pytest.raises(UserInputError, match="decode phase reports"):
        _ep_row(**{"output_tokens_per_s, measured: 1000": "ttft_p50_s, measured: 0.05"})


def test_per_counts_the_measured_pool():
    """The system a disaggregated row measures is its measured pool: 16 GPUs over 2 nodes of
    8 here, where the row's own (unused) tp is 1."""
    (row,) = _ep_row(**{"decode: {tp: 16, nodes: 2": "decode: {tp: 16, nodes: 2, replicas: 3"})
    assert (row.units("replica"), row.units("gpu"), row.units("node")) == (3, 48, 6)


def test_per_node_counts_the_nodes_a_replica_is_said_to_span():
    """16 GPUs over 4 nodes are 4 nodes, not the two 8-GPU nodes the default assumes."""
    (row,) = _ep_row(**{"decode: {tp: 16, nodes: 2": "decode: {tp: 16, nodes: 4, replicas: 3"})
    assert (row.node_gpus(), row.units("node")) == (4, 12)


def test_gpus_per_node_defaults_to_the_instance_types_and_may_not_contradict_it():
    (row,) = _ep_row(**{"gpu: H100-SXM": "gpu: GB200\n    instance_type: p6e-gb200.36xlarge",
                        "weights: fp8": "weights: fp8\n    gpus_per_node: 4"})
    assert row.node_gpus() == 4 and row.units("node") == 4
    (row,) = _ep_row(**{"gpu: H100-SXM": "gpu: GB200\n    instance_type: p6e-gb200.36xlarge"})
    assert row.node_gpus() == 4
    with pytest.raises(UserInputError, match="gpus_per_node 8 contradicts instance_type"):
        _ep_row(**{"gpu: H100-SXM": "gpu: GB200\n    instance_type: p6e-gb200.36xlarge",
                   "weights: fp8": "weights: fp8\n    gpus_per_node: 8"})


def test_a_decode_pool_is_not_refused_for_prompts_longer_than_its_budget():
    """Whole-prompt batching refuses a prompt longer than the budget because it never runs;
    a decode pool never runs prompts (they arrive prefilled), so its rows replay."""
    whole = {"max_num_batched_tokens: 64}": "max_num_batched_tokens: 64,\n"
             "             batching: prefill_first}"}
    (decode,) = _ep_row(**whole)
    assert run_row(decode)["output_tokens_per_s"] > 0
    (prefill,) = _ep_row(**whole, **{"measured_phase: decode": "measured_phase: prefill",
                                     "output_tokens_per_s, measured: 1000":
                                     "requests_per_s, measured: 10"})
    with pytest.raises(UserInputError, match="1000-token prompt is longer than"):
        run_row(prefill)
