"""Mooncake `hash_ids` read into chained per-request block ids, kept through replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.errors import UserInputError
from gpuscale.workloads.base import Requests
from gpuscale.workloads.prefix_blocks import ChainInterner
from gpuscale.workloads.replay import TraceWorkload, head, scale_rate, tile, window
from gpuscale.workloads.traces import read_mooncake_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
REAL = Path(__file__).resolve().parents[2] / "../shared/traces/mooncake/synthetic_trace.jsonl"


def _rows(requests: Requests) -> list[list[int]]:
    assert requests.prefix_blocks is not None
    return [requests.prefix_blocks.row(i).tolist() for i in range(len(requests))]


def test_hash_ids_become_chained_ids_sorted_with_their_requests():
    req = read_mooncake_jsonl(FIXTURES / "mooncake_small.jsonl")
    assert req.prefix_blocks is not None and req.prefix_blocks.block_tokens == 512
    # File order 6955 [46..59], 6472 [46,47,48], 512 [46], 100 []; the 100-token row sorts
    # second. Equal leading hashes give equal chained ids.
    assert _rows(req) == [list(range(14)), [], [0, 1, 2], [0]]


def test_chaining_makes_a_block_depend_on_every_block_before_it():
    chains = ChainInterner()
    for row in ([7, 8, 9], [5, 8, 9], [7, 8, 4]):
        chains.add(row)
    blocks = chains.build(512)
    assert [blocks.row(i).tolist() for i in range(3)] == [[0, 1, 2], [3, 4, 5], [0, 1, 6]]


def test_a_trace_without_hash_ids_has_no_blocks(tmp_path):
    path = tmp_path / "plain.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1}\n'
                    '{"timestamp": 5, "input_length": 4, "output_length": 2}\n')
    assert read_mooncake_jsonl(path).prefix_blocks is None


@pytest.mark.parametrize("value", ['"abc"', "[1, -2]", "[1, true]", "[1.5]", "null"])
def test_bad_hash_ids_name_the_line_and_key(tmp_path, value):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]}\n'
                    f'{{"timestamp": 1, "input_length": 3, "output_length": 1, '
                    f'"hash_ids": {value}}}\n')
    with pytest.raises(UserInputError, match=r"line 2, key hash_ids: expected a list of "
                       r"integers >= 0"):
        read_mooncake_jsonl(path)


def test_window_tile_rate_and_head_keep_each_request_with_its_blocks():
    req = read_mooncake_jsonl(FIXTURES / "mooncake_small.jsonl")
    cut = window(req, 1.0, 3.1)  # rows 1..3
    assert _rows(cut) == [[], [0, 1, 2], [0]]
    tiled = tile(cut, 2, 5.0)
    assert _rows(tiled) == [[], [0, 1, 2], [0]] * 2  # a replayed copy sends the same prompts
    assert _rows(scale_rate(tiled, 2.0)) == _rows(tiled)
    assert _rows(head(tiled, 4)) == [[], [0, 1, 2], [0], []]
    assert _rows(tiled.take(tiled.arrival_s > 4.0)) == [[], [0, 1, 2], [0]]


def test_concat_with_a_part_without_hashes_gives_it_empty_rows_and_keeps_ids_apart():
    req = read_mooncake_jsonl(FIXTURES / "mooncake_small.jsonl")
    plain = Requests(np.array([0.5]), np.array([10]), np.array([1]))
    both = Requests.concat([req, plain, req])
    # Stable by arrival: both 0.0 rows (parts in order), the plain row at 0.5, then the rest;
    # the second copy's ids are shifted past the first's, so they never match.
    second = list(range(14, 28))
    assert _rows(both) == [list(range(14)), second, [], [], [], [0, 1, 2], [0],
                           [14, 15, 16], [14]]


def test_trace_workload_replays_the_hashes(tmp_path):
    spec = TraceWorkload(format="mooncake", path=str(FIXTURES / "mooncake_small.jsonl"),
                         repeat=2)
    out = spec.generate(np.random.default_rng(0), tmp_path)
    assert out.prefix_blocks is not None and len(out.prefix_blocks) == 8


@pytest.mark.skipif(not REAL.is_file(), reason="shared Mooncake trace not present")
def test_real_mooncake_trace_has_one_hash_per_started_512_token_block():
    req = read_mooncake_jsonl(REAL)
    blocks = req.prefix_blocks
    assert blocks is not None and len(req) == 3993 and len(blocks.ids) == 121_877
    lengths = np.diff(blocks.offsets)
    assert np.array_equal(lengths, -(-req.prompt_tokens // 512))
