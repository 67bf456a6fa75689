"""The body of `gpuscale backtest`: history -> traffic -> imported bundles -> the runs of
`compare --manifests` (run_common.run_and_report: the same verdict, gates, outputs) with the
agreement section made from the first bundle's run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuscale.errors import UserInputError
from gpuscale.outputs import write_atomic


def prepare(history_path: Path, first_bundle: str, seed: int):
    """(history, selector, traffic, recorded signals, notes) for today's bundle."""
    from gpuscale.backtest import history as hist
    from gpuscale.backtest.section import recorded_grid
    from gpuscale.backtest.signals import read_signals
    from gpuscale.backtest.traffic import reconstruct
    from gpuscale.importer.build import bundle_labels

    history = hist.read_history(history_path)
    labels = bundle_labels([first_bundle])
    selector, notes = hist.select(history, labels["namespace"], labels["served_model_name"],
                                  labels["deployment"])
    traffic = reconstruct(history, selector, seed)
    if not len(traffic):
        raise UserInputError(f"no request of {selector.model_name!r} in {selector.namespace!r} "
                             "got a first token or finished in the history: nothing to replay",
                             source=str(history_path))
    recorded = read_signals(history.store, selector, recorded_grid(history))
    return history, selector, traffic, recorded, notes


def model_len(scenario) -> int:
    """The context length the bundle serves (--max-model-len, else the model's)."""
    from gpuscale.catalog import get_model

    return scenario.engine.max_model_len or get_model(scenario.model.name).max_context_tokens


def run_selector(scenario):
    from gpuscale.backtest.history import Selector

    m = scenario.metrics
    return Selector(m.namespace, m.served_model_name, m.deployment)


def _check_outputs(out: Path | None, report: Path | None, others: list[Path | None],
                   force: bool) -> None:
    """Every output path before the history is read (a typo costs nothing)."""
    from gpuscale.cli.io import check_output_path
    from gpuscale.cli.run_common import check_result_path

    for path in (out, report):
        if path is not None and str(path) != "-":
            check_result_path(path, force=force)
    for path in others:
        if path is not None:
            check_output_path(path, force=force)


def run_backtest(bundles: tuple[str, ...], history_path: Path, trace_path: Path, *,
                 seed: int, emit_trace: Path | None, fmt: str, wide: bool,
                 fail_under: float | None, out: Path | None, series: bool,
                 report: Path | None, decisions: Path | None, metrics_out: Path | None,
                 force: bool) -> dict:
    from gpuscale.backtest import replay
    from gpuscale.backtest.traffic import fit_model_len
    from gpuscale.cli.manifests_run import import_bundles, imported_lines
    from gpuscale.cli.run_common import RunUnit, run_and_report

    _check_outputs(out, report, [emit_trace, decisions, metrics_out], force)
    history, selector, traffic, recorded, notes = prepare(history_path, bundles[0], seed)
    replay.write_trace(traffic, trace_path)
    imported = import_bundles(bundles, trace_path, seed=seed)
    # Read when the runs start: today's context length is known only once imported.
    fit_model_len(traffic, model_len(imported[0].scenario))
    replay.write_trace(traffic, trace_path)
    if emit_trace is not None:  # the safe writer: a link there replaced, not written through
        write_atomic(emit_trace, trace_path.read_bytes())
    at = replay.timing(history, traffic)
    replicas = recorded["replicas"][0]
    first_replicas = float(replicas[min(at.lag_steps, len(replicas) - 1)])
    for imp in imported:
        imp.data = dict(imp.data, seed=seed)
        replay.history_scenario(imp, history, traffic, at, first_replicas)
    units = [RunUnit(imp.scenario, Path("."), None, imp.as_json()) for imp in imported]

    def agreement(runs: list[Any]):
        from gpuscale.backtest import section
        from gpuscale.cli.run_common import CommandSection
        from gpuscale.report.html import ExtraSection

        scenario = imported[0].scenario
        made = section.build(history, selector, traffic, at, recorded, runs[0].prometheus.store,
                             run_selector(scenario), scenario.slo.ttft_s, runs[0].name)
        made.data["history"]["notes"] = notes
        return CommandSection("backtest", made.data, made.lines, ExtraSection(
            "Backtest: recorded vs replayed", made.lines, made.charts))

    return run_and_report(units, fmt=fmt, out=out, force=force, series=series, report=report,
                          wide=wide, fail_under=fail_under, verdict_line=len(units) > 1,
                          decisions=decisions, metrics_out=metrics_out,
                          footer=imported_lines(imported), section=agreement)
