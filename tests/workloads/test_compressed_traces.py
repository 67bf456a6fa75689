"""Compressed traces read as the plain text they hold (gzip, bzip2, xz, Zstandard), known by
their magic bytes; the trace limit applies to the decompressed bytes (issue 30)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest
import zstandard

from gpuscale.errors import UserInputError
from gpuscale.importer.traces import detect_format
from gpuscale.workloads import trace_files
from gpuscale.workloads.traces import TRACE_READERS

FIXTURES = Path(__file__).parent / "fixtures"
COMPRESSORS = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": lambda data: zstandard.ZstdCompressor().compress(data),
}
CASES = [("generic_ties.csv", "generic"), ("azure_midnight.csv", "azure"),
         ("mooncake_small.jsonl", "mooncake"), ("burstgpt_plain.csv", "burstgpt")]


def _same(a, b) -> None:
    for column in ("arrival_s", "prompt_tokens", "output_tokens"):
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column))


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
@pytest.mark.parametrize("name, fmt", CASES)
def test_a_compressed_trace_reads_as_its_plain_file(tmp_path, name, fmt, suffix):
    plain = FIXTURES / name
    packed = tmp_path / f"{name}.{suffix}"
    packed.write_bytes(COMPRESSORS[suffix](plain.read_bytes()))
    assert detect_format(packed) == fmt
    _same(TRACE_READERS[fmt](packed), TRACE_READERS[fmt](plain))


def test_the_magic_bytes_decide_not_the_name(tmp_path):
    renamed = tmp_path / "trace.csv"
    renamed.write_bytes(gzip.compress((FIXTURES / "generic_ties.csv").read_bytes()))
    assert trace_files.compression_of(renamed) == "gzip"
    plain = FIXTURES / "generic_ties.csv"
    _same(TRACE_READERS["generic"](renamed), TRACE_READERS["generic"](plain))


def test_the_limit_applies_to_the_decompressed_bytes(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.csv.gz"
    header = b"arrival_s,prompt_tokens,output_tokens\n"
    bomb.write_bytes(gzip.compress(header + b"0,1,1\n" * 50_000))
    assert bomb.stat().st_size < 2_000
    monkeypatch.setattr(trace_files, "MAX_TRACE_BYTES", 100_000)
    with pytest.raises(UserInputError, match=r"bomb\.csv\.gz.*decompresses to more than the "
                                              r"100000-byte trace limit"):
        TRACE_READERS["generic"](bomb)


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_truncated_archive_is_one_line_naming_the_file(tmp_path, suffix):
    data = COMPRESSORS[suffix]((FIXTURES / "mooncake_small.jsonl").read_bytes() * 50)
    broken = tmp_path / f"broken.jsonl.{suffix}"
    broken.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserInputError, match=r"broken\.jsonl\.\w+.*not a readable"):
        TRACE_READERS["mooncake"](broken)


def test_the_servegen_day_reads_from_its_gzip():
    shared = Path(__file__).resolve().parents[2] / "../shared/traces"
    day = shared / "servegen_mm_image" / "mm_image_day_a.csv.gz"
    if not day.exists():
        pytest.skip("../shared/traces/servegen_mm_image is not in this checkout")
    requests = TRACE_READERS[detect_format(day)](day)
    assert len(requests.arrival_s) == 826_738  # the README's row count
    assert requests.arrival_s[-1] < 86_400.0
