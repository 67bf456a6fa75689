"""`gpuscale demo`: the embedded default scenario, comparing the autoscalers of the lesson."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from gpuscale.cli.run_common import RunUnit, report_options, run_and_report, run_options
from gpuscale.inputs import parse_yaml
from gpuscale.scenario import scenario_from_dict


def demo_scenario_text() -> str:
    return resources.files("gpuscale.scenario").joinpath("demo.yaml").read_text()


@click.command("demo")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override the demo's seed.")
@run_options
@click.option("--out", type=click.Path(path_type=Path), default=Path("gpuscale-demo.json"),
              show_default=True, help="Where the JSON summary goes.")
@report_options
@click.option("--force", is_flag=True, help="Overwrite --out even if it is not a gpuscale result.")
@click.option("--print-scenario", is_flag=True, help="Print the embedded scenario YAML and exit.")
def command(seed: int | None, fmt: str, out: Path, force: bool, print_scenario: bool,
            series: bool, report: Path | None, wide: bool, seeds: int,
            fail_under: float | None, decisions: Path | None) -> None:
    """Llama-3.3-70B FP8 on H100 nodes under bursty traffic: fixed replicas vs HPA on GPU duty
    cycle (target 70 and 95) vs KEDA on queue depth vs HPA on KV-cache usage."""
    text = demo_scenario_text()
    if print_scenario:
        click.echo(text, nl=False)
        return
    scenario = scenario_from_dict(parse_yaml(text, "demo.yaml"), source="demo.yaml")
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    run_and_report([RunUnit(scenario, Path("."))], fmt=fmt, out=out, force=force,
                   overwrite_own=True, series=series, report=report, wide=wide, seeds=seeds,
                   fail_under=fail_under, decisions=decisions)
