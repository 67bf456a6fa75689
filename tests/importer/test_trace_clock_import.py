"""`simulate --manifests DIR --trace T` on a trace that records wall-clock time: the cron
triggers of the ScaledObject read the trace's own clock (issue 27), and one that never opens
while the trace runs is one line naming the manifest, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuscale.cli import cli

from .bundle import CATALOG, load_docs, of_kind, write_bundle


def _azure_trace(path: Path) -> Path:
    # a request every 20 s from 18:20 to 18:39 UTC on 2023-11-16
    rows = [f"2023-11-16 18:{20 + k // 3:02d}:{20 * (k % 3):02d}.0000000,500,60"
            for k in range(60)]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


def _simulate(tmp_path: Path, start: str, end: str):
    docs = load_docs()
    of_kind(docs, "ScaledObject")["spec"]["triggers"].append(
        {"type": "cron", "metadata": {"timezone": "Etc/UTC", "start": start, "end": end,
                                      "desiredReplicas": "3"}})
    bundle = write_bundle(tmp_path, docs)
    trace = _azure_trace(tmp_path / "azure.csv")
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(trace), "--catalog", str(CATALOG), "--format", "json"])
    return result, bundle


def test_the_imported_cron_trigger_reads_the_traces_clock(tmp_path):
    result, _ = _simulate(tmp_path, "25 18 * * *", "35 18 * * *")
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    assert run["resolved"]["start_time"] == {"value": "2023-11-16T18:20:00+00:00",
                                             "source": "trace"}
    assert run["replicas"]["peak"] >= 3
    assert any("start_time: 2023-11-16T18:20:00+00:00, the trace's first request" in d
               for d in run["imported"]["defaults"])


def test_a_cron_window_outside_the_trace_is_one_line_naming_the_manifest(tmp_path):
    result, bundle = _simulate(tmp_path, "0 8 * * *", "0 9 * * *")
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "never opens" in line
    assert str(bundle / "all.yaml") in line and "2023-11-16T18:20:00+00:00" in line
