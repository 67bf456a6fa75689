"""Trace readers on tiny hand-written fixtures, and their error messages on bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.errors import UserInputError
from gpuscale.workloads import (
    TRACE_READERS,
    read_azure_llm_csv,
    read_burstgpt_csv,
    read_generic_csv,
    read_mooncake_jsonl,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_fixtures_keep_their_line_ends():
    raw = (FIXTURES / "azure_midnight.csv").read_bytes()
    assert raw.count(b"\r\n") == 5 and not raw.endswith(b"\n")  # like the real Azure files


def test_azure_seven_digit_fractions_across_midnight():
    req = read_azure_llm_csv(FIXTURES / "azure_midnight.csv")
    # 23:59:58.5 -> 23:59:59.9999999 -> 00:00:00.0000001 (next day) -> 00:00:02.25 twice.
    expected = [0.0, 1.4999999, 1.5000001, 3.75, 3.75]
    assert req.arrival_s.tolist() == pytest.approx(expected, abs=1e-9)
    assert req.arrival_s[2] - req.arrival_s[1] == pytest.approx(2e-7, abs=1e-10)
    assert req.prompt_tokens.tolist() == [374, 396, 879, 1, 14050]
    assert req.output_tokens.tolist() == [44, 109, 3, 1, 1000]


def test_generic_keeps_ties_skips_blank_lines_and_ignores_extra_columns():
    req = read_generic_csv(FIXTURES / "generic_ties.csv")
    assert req.arrival_s.tolist() == [0.0, 0.5, 0.5, 2.25]
    assert req.prompt_tokens.tolist() == [100, 2000, 7, 1]
    assert req.output_tokens.tolist() == [20, 1, 300, 1]


def test_generic_is_shifted_to_its_first_row(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n100.5,3,4\n101,3,4\n")
    assert read_generic_csv(path).arrival_s.tolist() == [0.0, 0.5]


def test_mooncake_ms_timestamps_sorted_stably():
    req = read_mooncake_jsonl(FIXTURES / "mooncake_small.jsonl")
    # Rows at 27482, 30535, 30535, 29000 ms: the last row moves up; equal times keep file order.
    assert req.arrival_s.tolist() == pytest.approx([0.0, 1.518, 3.053, 3.053])
    assert req.prompt_tokens.tolist() == [6955, 100, 6472, 512]
    assert req.output_tokens.tolist() == [52, 9, 26, 1]


def test_burstgpt_reads_columns_by_name_and_drops_failed():
    req = read_burstgpt_csv(FIXTURES / "burstgpt_release3.csv")
    # Rows at 45 s and 61 s failed (Response tokens 0); timestamps relative to 5 s.
    assert req.arrival_s.tolist() == [0.0, 42.0, 45.0, 65.0]
    assert req.prompt_tokens.tolist() == [472, 417, 1360, 900]
    assert req.output_tokens.tolist() == [18, 276, 226, 12]
    plain = read_burstgpt_csv(FIXTURES / "burstgpt_plain.csv")
    assert plain.prompt_tokens.tolist() == [300, 20]


def test_burstgpt_filters():
    path = FIXTURES / "burstgpt_release3.csv"
    gpt4 = read_burstgpt_csv(path, model="GPT-4")
    assert gpt4.prompt_tokens.tolist() == [417, 900]  # the failed GPT-4 row is gone
    api = read_burstgpt_csv(path, log_type="API log")
    assert api.prompt_tokens.tolist() == [417, 1360]
    both = read_burstgpt_csv(path, model="ChatGPT", log_type="Conversation log")
    assert both.prompt_tokens.tolist() == [472]
    unseen = "no row has Model 'gpt4'; values present: ChatGPT, GPT-4"
    with pytest.raises(UserInputError, match=unseen):
        read_burstgpt_csv(path, model="gpt4")


def test_burstgpt_keeping_failed_rows_needs_a_prompt(tmp_path):
    # The failed row at 61 s has an empty prompt too: kept, it cannot be a request.
    message = "line 6, column Request tokens: expected an integer >= 1, got '0'"
    with pytest.raises(UserInputError, match=message):
        read_burstgpt_csv(FIXTURES / "burstgpt_release3.csv", drop_failed=False)
    kept = read_burstgpt_csv(FIXTURES / "burstgpt_release3.csv", model="ChatGPT", drop_failed=False)
    assert kept.output_tokens.tolist() == [18, 1, 226]  # failed request -> one output token


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GENERIC_HEAD = "arrival_s,prompt_tokens,output_tokens\n"


@pytest.mark.parametrize(
    "body, where, expected",
    [
        ("0,1,1\n1,abc,2\n", "line 3, column prompt_tokens", "expected an integer >= 1, got 'abc'"),
        ("0,1,1\n1,0,2\n", "line 3, column prompt_tokens", "expected an integer >= 1, got '0'"),
        ("0,1,1\n1,2,2.5\n", "line 3, column output_tokens", "expected an integer >= 1, got '2.5'"),
        (
            "0,1,1\nnan,1,1\n",
            "line 3, column arrival_s",
            "expected a finite number >= 0, got 'nan'",
        ),
        ("-1,1,1\n", "line 2, column arrival_s", "expected a finite number >= 0, got '-1'"),
        ("0,1,1\n5,1,1\n4,1,1\n", "line 4, column arrival_s", "expected rows sorted by arrival_s"),
        ("0,1,1\n1,1\n", "line 3", "expected 3 fields like the header, got 2"),
    ],
)
def test_generic_errors_name_file_line_column(tmp_path, body, where, expected):
    path = _write(tmp_path, "trace.csv", GENERIC_HEAD + body)
    with pytest.raises(UserInputError) as info:
        read_generic_csv(path)
    assert str(info.value).startswith(f"{path}: {where}: {expected}")
    assert info.value.exit_code == 2


def test_generic_unsorted_message_names_the_previous_value(tmp_path):
    path = _write(tmp_path, "trace.csv", GENERIC_HEAD + "0,1,1\n5,1,1\n4,1,1\n")
    with pytest.raises(UserInputError, match=r"a value >= 5 \(the row above\), got '4'"):
        read_generic_csv(path)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "file is empty"),
        ("time,prompt_tokens,output_tokens\n", "header lacks column(s) arrival_s; found time,"),
    ],
)
def test_generic_header_errors(tmp_path, text, expected):
    with pytest.raises(UserInputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        read_generic_csv(_write(tmp_path, "t.csv", text))


@pytest.mark.parametrize(
    "row, expected",
    [
        ("2023-11-16 18:15:46,1,1", None),  # no fraction is fine
        ("2023-11-16T18:15:46.1,1,1", "line 3, column TIMESTAMP: expected a timestamp like"),
        ("NaT,1,1", "line 3, column TIMESTAMP: expected a timestamp like"),
        ("2023-13-16 18:15:46.1,1,1", "line 3, column TIMESTAMP: expected a timestamp like"),
        ("2023-11-16 18:15:47.1,5,0", "line 3, column GeneratedTokens: expected an integer >= 1"),
    ],
)
def test_azure_bad_rows(tmp_path, row, expected):
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:40.0000000,3,4\r\n" + row
    path = _write(tmp_path, "az.csv", text)
    if expected is None:
        assert read_azure_llm_csv(path).arrival_s.tolist() == [0.0, 6.0]
    else:
        with pytest.raises(UserInputError, match=expected):
            read_azure_llm_csv(path)


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            '{"timestamp": 1, "input_length": 5}',
            "line 2, key output_length: expected an integer >= 1, got nothing",
        ),
        (
            '{"timestamp": 1, "input_length": 0, "output_length": 1}',
            "line 2, key input_length: expected an integer >= 1, got 0",
        ),
        (
            '{"timestamp": "1", "input_length": 3, "output_length": 1}',
            "line 2, key timestamp: expected an integer, got '1'",
        ),
        (
            '{"timestamp": 1, "input_length": 3, "output_length": true}',
            "key output_length: expected an integer >= 1, got True",
        ),
        ("[1, 2]", "line 2: expected a JSON object, got list"),
        ("{oops", "line 2: expected a JSON object, got invalid JSON"),
    ],
)
def test_mooncake_bad_lines(tmp_path, line, expected):
    good = '{"timestamp": 0, "input_length": 3, "output_length": 1}\n'
    path = _write(tmp_path, "m.jsonl", good + line + "\n")
    with pytest.raises(UserInputError, match=expected.replace("[", r"\[")):
        read_mooncake_jsonl(path)


@pytest.mark.parametrize("fmt", sorted(TRACE_READERS))
def test_missing_file_and_directory_are_clear(tmp_path, fmt):
    with pytest.raises(UserInputError, match=r"nope\.csv: trace file not found \(looked at "):
        TRACE_READERS[fmt](tmp_path / "nope.csv")
    with pytest.raises(UserInputError, match="is a directory, not a trace file"):
        TRACE_READERS[fmt](tmp_path)


def test_non_utf8_file_is_a_user_error(tmp_path):
    path = tmp_path / "bin.csv"
    path.write_bytes(GENERIC_HEAD.encode() + b"\xff\xfe,1,1\n")
    with pytest.raises(UserInputError, match="not UTF-8 text"):
        read_generic_csv(path)


def test_header_only_files_give_empty_tables(tmp_path):
    req = read_generic_csv(_write(tmp_path, "h.csv", GENERIC_HEAD))
    assert len(req) == 0 and req.prompt_tokens.dtype == np.int64
    assert len(read_mooncake_jsonl(_write(tmp_path, "e.jsonl", "\n"))) == 0


def test_integers_beyond_int64_are_user_errors(tmp_path):
    path = _write(tmp_path, "t.csv", GENERIC_HEAD + "0,99999999999999999999,1\n")
    with pytest.raises(UserInputError, match=r"line 2, column prompt_tokens: .* fits in 64 bits"):
        read_generic_csv(path)
    huge = '{"timestamp": 0, "input_length": 99999999999999999999, "output_length": 1}\n'
    with pytest.raises(UserInputError, match="line 1, key input_length"):
        read_mooncake_jsonl(_write(tmp_path, "m.jsonl", huge))
