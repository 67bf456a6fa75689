"""`gpuscale calibrate --fit FILE --gpu G --model M --tp N [--overlay FILE]`.

FILE is a vLLM bench-serve result JSON or a Prometheus range-query export (told apart by
shape). Fits the deployment's host time per step and the GPU's efficiency factors where the
points identify them (calibration/fit.py), prints the fit with its error per point, and writes
a catalog overlay that `--catalog` takes.
"""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from gpuscale.cli.io import OutputFile, check_output_path
from gpuscale.cli.options import MAX_BATCH_TOKENS, MAX_NUM_SEQS, MAX_TP

FIT_ENGINES = ("vllm", "sglang", "trtllm", "sarathi")  # serving/engines.py ENGINE_KINDS


def fit_options(fn):
    for option in reversed([
        click.option("--fit", "fit_file", type=click.Path(path_type=Path), default=None,
                     help="Fit host time and efficiencies to this vLLM bench serve result JSON "
                          "or Prometheus query_range export instead."),
        click.option("--gpu", default=None, help="--fit: the GPU measured (catalog name)."),
        click.option("--model", default=None, help="--fit: the model measured (catalog name)."),
        click.option("--tp", type=click.IntRange(min=1, max=MAX_TP), default=1,
                     show_default=True,
                     help="--fit: tensor-parallel size of the measured server."),
        click.option("--precision", type=click.Choice(["bf16", "fp8", "nvfp4", "mxfp4"]),
                     default="bf16", show_default=True,
                     help="--fit: weight precision of the measured server."),
        click.option("--engine", "fit_engine", type=click.Choice(FIT_ENGINES), default="vllm",
                     show_default=True, help="--fit: the engine measured (its host time)."),
        click.option("--max-num-seqs", type=click.IntRange(min=1, max=MAX_NUM_SEQS), default=256,
                     show_default=True, help="--fit: the server's --max-num-seqs."),
        click.option("--max-num-batched-tokens", "fit_budget",
                     type=click.IntRange(min=16, max=MAX_BATCH_TOKENS),
                     default=None, help="--fit: the server's token budget per step (default: "
                                        "vLLM's for the GPU)."),
        click.option("--overlay", type=OutputFile(), default=None,
                     help="--fit: write the fitted catalog overlay here."),
        click.option("--force", is_flag=True, help="--fit: replace --overlay if it exists."),
    ]):
        fn = option(fn)
    return fn


def _shown(name: str, value: float) -> str:
    return f"{value * 1e3:.3f} ms" if name == "host_step_s" else f"{value:.3f}"


def run_fit(*, fmt: str, fit_file: Path, gpu: str | None, model: str | None, tp: int,
            precision: str, fit_engine: str, max_num_seqs: int, fit_budget: int | None,
            overlay: Path | None, force: bool) -> None:
    from gpuscale.calibration.fit import PARAMS, dumps, fit, read_points
    from gpuscale.catalog import Precision, get_gpu, get_model
    from gpuscale.serving.engines import get_engine_profile

    if not gpu or not model:
        raise click.UsageError("--fit needs --gpu and --model (catalog names)")
    get_gpu(gpu), get_model(model)  # unknown names fail here, with a hint
    if overlay is not None:
        check_output_path(overlay, force=force)
    input_format, points, notes = read_points(fit_file, max_num_seqs, fit_budget)
    result = fit(points, gpu, model, tp, Precision(precision), fit_engine, input_format, notes)
    data = result.overlay(str(fit_file))
    if overlay is not None:
        from gpuscale.outputs import write_atomic  # a link there replaced, not written through

        write_atomic(overlay, f"# gpuscale calibrate --fit {fit_file} --gpu {gpu} --model "
                              f"{model} --tp {tp} --engine {fit_engine}\n"
                              + (yaml.safe_dump(data, sort_keys=False) if data else "{}\n"))
    if fmt == "json":
        click.echo(dumps(result, str(fit_file)))
        return
    was = {"hbm_efficiency": get_gpu(gpu).hbm_efficiency,
           "compute_efficiency": get_gpu(gpu).compute_efficiency,
           "host_step_s": get_engine_profile(fit_engine).host_step_s}
    click.echo(f"{gpu}, {model} tp={tp}, engine {fit_engine}: {len(points)} {input_format} "
               "point(s)")
    for name in PARAMS:
        how = f"fitted, {result.fitted[name]}" if name in result.fitted \
            else f"not fitted: {result.kept[name]}"
        click.echo(f"  {name:19} {_shown(name, result.values[name]):>10} (was "
                   f"{_shown(name, was[name])}; {how})")
    for note in result.notes:
        click.echo(f"  note: {note}")
    click.echo(f"{'point':44} {'batch':>6} {'metric':20} {'measured':>10} {'predicted':>10} "
               f"{'error':>8}")
    for row in result.points:
        for key, error in row["error_frac"].items():
            click.echo(f"{row['point'][:44]:44} {row['decode_batch']:>6.1f} {key:20} "
                       f"{row['measured'][key]:>10.4g} {row['predicted'][key]:>10.4g} "
                       f"{error:>+8.1%}")
    if overlay is not None:
        click.echo(f"catalog overlay written to {overlay} (use it with --catalog)")
