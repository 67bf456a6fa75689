"""The history export: its three formats read alike, the deployment's series found, and an
export without the request counter or token histograms refused in one line."""

import json

import pytest
from click.testing import CliRunner

from gpuscale.backtest.history import export_format, read_history, select
from gpuscale.cli import cli
from gpuscale.errors import UserInputError

T0 = 1_767_225_600
SERIES = {"namespace": "llm", "model_name": "m", "pod": "p-1"}


def _om_lines(names: list[str]) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in SERIES.items())
    lines = []
    for k in range(4):
        for name in names:
            extra = ',le="+Inf"' if name.endswith("_bucket") else ""
            lines.append(f"{name}{{{labels}{extra}}} {float(3 * k)} {T0 + 15 * k}")
    return "\n".join(lines) + "\n# EOF\n"


NAMES = ["vllm:time_to_first_token_seconds_count", "vllm:request_prompt_tokens_bucket",
         "vllm:request_generation_tokens_bucket"]


def _dump(names: list[str]) -> str:
    """`promtool tsdb dump` of Prometheus 2.42 (Debian 12's): name among the labels, ms."""
    lines = []
    for k in range(4):
        for name in names:
            pairs = {"__name__": name, **SERIES, **({"le": "+Inf"} if "bucket" in name else {})}
            body = ", ".join(f'{a}="{b}"' for a, b in sorted(pairs.items()))
            lines.append(f"{{{body}}} {3 * k} {(T0 + 15 * k) * 1000}")
    return "\n".join(lines) + "\n"


def _query_range(names: list[str]) -> dict:
    """Two queries saved in one file, as calibrate --fit reads them too."""
    def response(subset):
        return {"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"__name__": n, **SERIES, **({"le": "+Inf"} if "bucket" in n else {})},
             "values": [[T0 + 15 * k, str(3 * k)] for k in range(4)]} for n in subset]}}
    return {"counters": response(names[:1]), "histograms": response(names[1:])}


@pytest.mark.parametrize("form", ["openmetrics", "promtool-dump", "query_range"])
def test_every_format_reads_the_same_samples(tmp_path, form):
    text = {"openmetrics": _om_lines(NAMES), "promtool-dump": _dump(NAMES),
            "query_range": json.dumps(_query_range(NAMES))}[form]
    path = tmp_path / "history"
    path.write_text(text)
    assert export_format(text) == form
    history = read_history(path)
    assert (history.step_ms, history.start_ms, history.end_ms) == (15_000, T0 * 1000,
                                                                   (T0 + 45) * 1000)
    family = history.store.families["vllm:time_to_first_token_seconds_count"]
    assert family.val.view().tolist() == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize("missing", NAMES)
def test_an_export_without_counter_or_histograms_is_refused_in_one_line(tmp_path, missing):
    path = tmp_path / "history.om"
    path.write_text(_om_lines([n for n in NAMES if n != missing]))
    result = CliRunner().invoke(cli, ["backtest", "--manifests", "examples/backtest/manifests",
                                      "--history", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and str(path) in line and missing.split("_count")[0] in line
    assert "docs/backtest.md" in line


def test_the_deployment_is_found_by_namespace_and_model(tmp_path):
    path = tmp_path / "h.om"
    path.write_text(_om_lines(NAMES))
    history = read_history(path)
    assert select(history, "llm", "m", "d")[1] == []
    selector, notes = select(history, "chat", "other", "d")  # one group: read as it, said
    assert (selector.namespace, selector.model_name) == ("llm", "m") and "read as it" in notes[0]
    more = _om_lines(NAMES).replace("# EOF\n", "") + _om_lines(NAMES).replace(
        'namespace="llm"', 'namespace="b"')
    path.write_text(more)
    with pytest.raises(UserInputError, match="the export holds 'm' in 'b', 'm' in 'llm'"):
        select(read_history(path), "chat", "other", "d")
