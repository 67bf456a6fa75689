"""`gpuscale calibrate --fit BENCH.json --gpu G --model M --tp N [--overlay FILE]`.

Fits the GPU's efficiency factors to the user's own vLLM bench-serve results
(calibration/fit.py), prints the fit with its error per point, and writes a catalog overlay
that `--catalog` takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from gpuscale.cli.io import check_output_path


def fit_options(fn):
    for option in reversed([
        click.option("--fit", "fit_file", type=click.Path(path_type=Path), default=None,
                     help="Fit efficiencies to this vLLM bench serve result JSON instead."),
        click.option("--gpu", default=None, help="--fit: the GPU measured (catalog name)."),
        click.option("--model", default=None, help="--fit: the model measured (catalog name)."),
        click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
                     help="--fit: tensor-parallel size of the measured server."),
        click.option("--precision", type=click.Choice(["bf16", "fp8"]), default="bf16",
                     show_default=True, help="--fit: weight precision of the measured server."),
        click.option("--max-num-seqs", type=click.IntRange(min=1), default=256,
                     show_default=True, help="--fit: the server's --max-num-seqs."),
        click.option("--overlay", type=click.Path(path_type=Path), default=None,
                     help="--fit: write the fitted catalog overlay here."),
        click.option("--force", is_flag=True, help="--fit: replace --overlay if it exists."),
    ]):
        fn = option(fn)
    return fn


def run_fit(*, fmt: str, fit_file: Path, gpu: str | None, model: str | None, tp: int,
            precision: str, max_num_seqs: int, overlay: Path | None, force: bool) -> None:
    from gpuscale.calibration.fit import fit, read_bench_results
    from gpuscale.catalog import Precision, get_gpu, get_model

    if not gpu or not model:
        raise click.UsageError("--fit needs --gpu and --model (catalog names)")
    get_gpu(gpu), get_model(model)  # unknown names fail here, with a hint
    if overlay is not None:
        check_output_path(overlay, force=force)
    points = read_bench_results(fit_file, max_num_seqs)
    result = fit(points, gpu, model, tp, Precision(precision))
    data = result.overlay(str(fit_file))
    if overlay is not None:
        overlay.write_text(f"# gpuscale calibrate --fit {fit_file} --gpu {gpu} --model {model} "
                           f"--tp {tp}\n" + yaml.safe_dump(data, sort_keys=False))
    if fmt == "json":
        click.echo(json.dumps({"gpu": gpu, "hbm_efficiency": result.hbm_efficiency,
                               "compute_efficiency": result.compute_efficiency,
                               "points": result.points, "overlay": data}, indent=2))
        return
    click.echo(f"{gpu}: hbm_efficiency {result.hbm_efficiency:.3f}, compute_efficiency "
               f"{result.compute_efficiency:.3f} (catalog: {get_gpu(gpu).hbm_efficiency:.3f}, "
               f"{get_gpu(gpu).compute_efficiency:.3f}); host time per step not fitted "
               "(not separable from the efficiencies on bench points)")
    click.echo(f"{'rate/s':>8} {'metric':22} {'measured':>11} {'predicted':>11} {'error':>8}")
    for row in result.points:
        for key in ("mean_ttft_s", "mean_tpot_s", "output_tokens_per_s"):
            click.echo(f"{row['request_rate_per_s']:>8g} {key:22} {row['measured'][key]:>11.4g} "
                       f"{row['predicted'][key]:>11.4g} {row['error_frac'][key]:>+8.1%}")
    if overlay is not None:
        click.echo(f"catalog overlay written to {overlay} (use it with --catalog)")
