"""A trace that records wall-clock time gives its first request's instant (`Requests.start_time`),
which a run without its own start_time starts at (issue 27: "arrival 0 of a trace is 00:00
UTC unless the trace has wall-clock times"). Traces with relative times carry none."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from gpuscale.workloads.replay import TraceWorkload
from gpuscale.workloads.traces import (
    read_azure_llm_csv,
    read_burstgpt_csv,
    read_generic_csv,
    read_mooncake_jsonl,
)

SHARED = Path(__file__).resolve().parents[3] / "shared"
UTC = timezone.utc


def _azure(path: Path, stamps: list[str]) -> Path:
    rows = [f"{s},100,10" for s in stamps]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


def test_azure_first_request_is_the_start_in_both_readers(tmp_path):
    # Azure's own layout (7 fractional digits: the byte reader) and a freer one (the general
    # reader, 3 digits) give the same instant, read as UTC (the file has no zone)
    fixed = _azure(tmp_path / "a.csv", ["2023-11-16 18:15:46.6805900",
                                        "2023-11-16 18:15:47.0000000"])
    general = _azure(tmp_path / "b.csv", ["2023-11-16 18:15:46.680", "2023-11-16 18:15:47.000"])
    expected = datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC)
    assert read_azure_llm_csv(fixed).start_time == expected
    assert read_azure_llm_csv(general).start_time == expected.replace(microsecond=680000)


def test_azure_out_of_order_rows_start_at_the_earliest(tmp_path):
    path = _azure(tmp_path / "a.csv", ["2023-11-16 18:20:00.000", "2023-11-16 18:10:00.000"])
    requests = read_azure_llm_csv(path)
    assert requests.start_time == datetime(2023, 11, 16, 18, 10, tzinfo=UTC)
    assert requests.arrival_s.tolist() == [0.0, 600.0]


def test_burstgpt_seconds_from_midnight_give_the_time_of_day(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                    "36000,GPT-4,10,0,10,Conversation log\n"  # failed: dropped
                    "36005,ChatGPT,10,5,15,Conversation log\n"
                    "36065,ChatGPT,10,5,15,Conversation log\n")
    requests = read_burstgpt_csv(path)
    # the first kept request, 10:00:05 of the first day (the date is not recorded)
    assert requests.start_time is not None
    assert requests.start_time.time().isoformat() == "10:00:05"
    assert requests.start_time.tzinfo is not None


def test_relative_formats_carry_no_wall_clock(tmp_path):
    generic = tmp_path / "g.csv"
    generic.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1.5,10,5\n")
    mooncake = tmp_path / "m.jsonl"
    mooncake.write_text("\n".join(json.dumps({"timestamp": t, "input_length": 10,
                                              "output_length": 5}) for t in (0, 1500)) + "\n")
    assert read_generic_csv(generic).start_time is None
    assert read_mooncake_jsonl(mooncake).start_time is None


def test_a_window_moves_the_clock_with_it(tmp_path):
    path = _azure(tmp_path / "a.csv", [f"2023-11-16 18:{m:02d}:00.000" for m in range(10)])
    workload = TraceWorkload(format="azure", path=str(path), start_s=120.0, rate_scale=2.0)
    requests = workload.generate(np.random.default_rng(0), tmp_path)
    assert requests.start_time == datetime(2023, 11, 16, 18, 2, tzinfo=UTC)
    assert requests.arrival_s[0] == 0.0 and requests.arrival_s[1] == 30.0
    assert workload.records_wall_clock
    assert not TraceWorkload(format="generic", path="x.csv").records_wall_clock


@pytest.mark.skipif(not (SHARED / "traces").is_dir(), reason="needs ../shared/traces")
def test_the_real_azure_conversation_trace_starts_at_its_first_timestamp():
    path = SHARED / "traces" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
    start = read_azure_llm_csv(path).start_time
    assert start is not None
    # shared/traces/README.md: first arrival 18:15:46.68 on 2023-11-16
    assert abs(start - datetime(2023, 11, 16, 18, 15, 46, 680000, tzinfo=UTC)) \
        < timedelta(milliseconds=10)
