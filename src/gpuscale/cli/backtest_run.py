"""The body of `gpuscale backtest`: history -> traffic -> imported bundles -> runs -> the
agreement section, printed and written like `compare`'s result."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import click

from gpuscale.errors import UserInputError


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


def _check_outputs(paths: list[Path | None], force: bool) -> None:
    from gpuscale.cli.run_common import check_result_path

    for path in paths:
        if path is not None:
            check_result_path(path, force=force)


def run_backtest(bundles: tuple[str, ...], history_path: Path, trace_path: Path, *,
                 seed: int, emit_trace: Path | None, fmt: str, wide: bool, seeds: int,
                 fail_under: float | None, out: Path | None, series: bool,
                 report: Path | None, decisions: Path | None, force: bool) -> dict:
    from gpuscale.backtest import replay
    from gpuscale.backtest.traffic import fit_model_len
    from gpuscale.cli.manifests_run import import_bundles, imported_lines

    if seeds > 1 or decisions is not None:
        raise click.UsageError("--seeds and --decisions are not available on backtest yet")
    _check_outputs([out, report, emit_trace], force)
    history, selector, traffic, recorded, notes = prepare(history_path, bundles[0], seed)
    replay.write_trace(traffic, trace_path)
    imported = import_bundles(bundles, trace_path)
    # Read when the runs start: today's context length is known only once imported.
    fit_model_len(traffic, model_len(imported[0].scenario))
    replay.write_trace(traffic, trace_path)
    if emit_trace is not None:
        shutil.copyfile(trace_path, emit_trace)
    at = replay.timing(history, traffic)
    first_replicas = float(recorded["replicas"][0][min(at.lag_steps,
                                                       len(recorded["replicas"][0]) - 1)])
    for imp in imported:
        imp.scenario = imp.scenario.model_copy(update={"seed": seed})
        imp.data = dict(imp.data, seed=seed)
        replay.history_scenario(imp, history, traffic, at, first_replicas)
    data, results = _run(imported, series=series or report is not None)
    section = _section(history, selector, traffic, at, recorded, imported, results)
    section.data["history"]["notes"] = notes
    data["backtest"] = section.data
    return _report(data, section, imported_lines(imported), imported[0].scenario, fmt=fmt,
                   wide=wide, out=out, report=report, fail_under=fail_under, force=force)


def _run(imported: list, *, series: bool) -> tuple[dict, list]:
    """Each bundle's run on the rebuilt traffic, joined as `compare --manifests` joins them,
    with every run's series kept (the agreement reads the first's)."""
    import time

    from gpuscale.importer.resolved import attach_resolved
    from gpuscale.report.timeline import attach_series
    from gpuscale.sim import simulate_scenario

    runs: list[Any] = []
    results: list[Any] = []
    head: dict[str, Any] = {}
    for imp in imported:
        result, walls = simulate_scenario(imp.scenario, Path("."), clock=time.perf_counter,
                                          export_series=True)
        results.extend(result.runs)
        part = attach_resolved(result.to_json(walls), imp.scenario)
        if series:
            part = attach_series(part, result)
        for run in part["runs"]:
            run["imported"] = imp.as_json()
        runs.extend(part["runs"])
        head = head or {k: v for k, v in part.items() if k != "runs"}
    data = dict(head, scenario=" vs ".join(i.scenario.name for i in imported),
                seed=imported[0].scenario.seed, runs=runs)
    return data, results


def _section(history, selector, traffic, at, recorded, imported, results):
    from gpuscale.backtest import section

    first = results[0]
    scenario = imported[0].scenario
    return section.build(history, selector, traffic, at, recorded, first.prometheus.store,
                         run_selector(scenario), scenario.slo.ttft_s, first.name)


def _report(data: dict, section, lines: list[str], scenario, *, fmt: str, wide: bool,
            out: Path | None, report: Path | None, fail_under: float | None,
            force: bool) -> dict:
    import textwrap

    from gpuscale.cli.run_common import write_result
    from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET
    from gpuscale.report.timeline import result_json_text
    from gpuscale.report.verdict import failing_gate, verdict

    slo = {"ttft_s": scenario.slo.ttft_s, "tpot_s": scenario.slo.tpot_s}
    target = fail_under if fail_under is not None else SLO_ATTAINMENT_TARGET
    line = verdict([data], slo, target) if len(data["runs"]) > 1 else None
    if line:
        data["verdict"] = line
    text = result_json_text(data)
    if out is not None:
        write_result(out, text, force=force)
    if report is not None:
        from gpuscale.report.html import ExtraSection, ReportInputs, render_html

        extra = ExtraSection("Backtest: recorded vs replayed", section.lines, section.charts)
        write_result(report, render_html(ReportInputs(results=[data], title=f"gpuscale "
                                                      f"backtest: {data['scenario']}",
                                                      sections=[extra])), force=force)
    if fmt in ("json", "yaml"):
        from gpuscale.cli.options import json_text_as

        click.echo(json_text_as(fmt, text), nl=False)
    else:
        from gpuscale.importer.resolved import resolved_line
        from gpuscale.outputs import terminal_safe
        from gpuscale.report.terminal import print_summary

        print_summary(data, wide=wide)
        for run in data["runs"]:
            click.echo(f"resolved {terminal_safe(resolved_line(run))}")
        for text_line in [*lines, *section.lines]:
            click.echo(terminal_safe(text_line))
        if line:
            click.echo(textwrap.fill(line, width=98, subsequent_indent="  ",
                                     break_on_hyphens=False))
    if fail_under is not None and (gate := failing_gate([data], fail_under)) is not None:
        click.echo(f"gpuscale: {gate}", err=True)
        click.get_current_context().exit(1)
    return data
