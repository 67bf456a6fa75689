"""`gpuscale schedule SCENARIO`: run a scheduling-only scenario under each scheduler."""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.io import OutputFile, check_output_path, dump_json, write_new_file
from gpuscale.cli.options import input_path, json_text_as, output_option


def _text(result: dict) -> str:
    lines = [f"scenario {result['scenario']}"]
    for run in result["runs"]:
        s, j, n = run["scheduling"], run["jobs"], run["nodes"]
        lines.append(f"  {run['scheduler']}")
        lines.append(
            f"    idle GPU-minutes held by incomplete gangs  {s['gang_idle_gpu_minutes']:.2f}"
            f"  (${s['gang_idle_usd']:.2f})"
        )
        lines.append(f"    free GPU-minutes while a gang was blocked  "
                     f"{s['free_gpu_minutes_while_gang_blocked']:.2f}"
                     f"  (${s['free_usd_while_gang_blocked']:.2f})")
        lines.append(f"    empty nodes billing while a gang was blocked "
                     f"{s['empty_node_gpu_minutes_while_gang_blocked']:.2f} GPU-min"
                     f"  (${s['empty_node_usd_while_gang_blocked']:.2f})")
        lines.append(f"    mean fragmented GPUs                       "
                     f"{s['fragmentation']['mean_fragmented_gpus']:.2f}")
        lines.append(f"    preemptions {s['preemptions']}  reclaims {s['reclaims']}  "
                     f"stale-gang evictions {s['stale_gang_evictions']}  "
                     f"topology crossings {s['topology_crossings'] or 0}")
        for q, w in s["queue_wait_s"].items():
            share = s["share"].get(q, {})
            fair = share.get("mean_fair_share_gpus")
            fair_txt = f"  fair share {fair:.2f}" if fair is not None else ""
            wait = (f"wait p50 {w['p50_s']:.1f} s p99 {w['p99_s']:.1f} s" if w["count"]
                    else "nothing bound")
            lines.append(f"    queue {q}: {wait}, {w['pending_at_end']} pending at end"
                         f"  mean GPUs {share.get('mean_allocated_gpus', 0):.2f}{fair_txt}")
        lines.append(f"    jobs started {j['started']}/{j['submitted']}, finished {j['finished']}, "
                     f"restarts {j['restarts']}; nodes added {n['launched_by_provider']}, "
                     f"billed {n['gpu_hours_billed']:.2f} GPU-h ${n['usd_billed']:.2f}")
        for node in n["launched"]:
            ready = "never" if node["ready_s"] is None else f"{node['ready_s']:.1f} s"
            lines.append(f"    node {node['name']} ({node['instance_type']}): launched "
                         f"{node['created_s']:.1f} s, ready {ready}")
    return "\n".join(lines) + "\n"


@click.command()
@catalog_option
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False, allow_dash=True,
                                           path_type=Path))
@output_option()
@click.option("--out", type=OutputFile(dir_okay=False), default=None,
              help="Write the output here instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario: Path, fmt: str, out: Path | None, force: bool) -> None:
    """Run SCENARIO (scheduling-only YAML; - for stdin) under each of its schedulers; report
    `scheduling`."""
    from gpuscale.scenario.schedule import load_schedule_scenario
    from gpuscale.sim.schedule import run_scenario

    if out is not None:
        check_output_path(out, force=force)
    result = run_scenario(load_schedule_scenario(input_path(scenario)))
    text = json_text_as(fmt, dump_json(result)) if fmt in ("json", "yaml") else _text(result)
    if out is None:
        click.echo(text, nl=False)
    else:
        write_new_file(out, text, force=force)
