"""Outputs never follow a symlink out of the output directory, never fail with a traceback on
a full disk, and survive user names as file names (gpuscale/outputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.outputs import MAX_NAME_CHARS, safe_filename, write_atomic

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLAN_INPUT = EXAMPLES / "plans" / "llama70b-fp8-h100-chat.yaml"
SCENARIO = EXAMPLES / "midnight-spike" / "scenario.yaml"


def _plan(tmp_path: Path, out: Path, input_file: Path = PLAN_INPUT):
    return CliRunner().invoke(cli, ["plan", str(input_file), "--out", str(out), "--force",
                                    "--no-simulate"])


@pytest.mark.parametrize("folder", ["manifests", "scenarios"])
def test_plan_force_never_deletes_through_a_folder_symlink_and_writes_nothing(tmp_path, folder):
    # DIR/scenarios was not held to DIR/manifests' rule: its stale *.yaml were deleted
    # through a planted link, in the folder it pointed to (issue 30's "harm" class).
    outside = tmp_path / "outside"
    outside.mkdir()
    keep = outside / "precious.yaml"
    keep.write_text("keep: me\n")
    out = tmp_path / "plan"
    out.mkdir()
    (out / folder).symlink_to(outside)
    result = _plan(tmp_path, out)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output
    assert keep.read_text() == "keep: me\n"
    assert sorted(p.name for p in out.iterdir()) == [folder]  # checked before any write


def test_plan_force_replaces_a_plan_md_symlink_not_its_target(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("untouched")
    out = tmp_path / "plan"
    out.mkdir()
    (out / "plan.md").symlink_to(target)
    result = _plan(tmp_path, out)
    assert result.exit_code == 0, result.output
    assert target.read_text() == "untouched"
    assert not (out / "plan.md").is_symlink()


def test_a_dangling_out_symlink_does_not_create_its_target(tmp_path):
    link = tmp_path / "result.json"
    elsewhere = tmp_path / "elsewhere" / "x.json"
    elsewhere.parent.mkdir()
    link.symlink_to(elsewhere)
    result = CliRunner().invoke(cli, ["simulate", str(SCENARIO), "--out", str(link),
                                      "--strategy", "karpenter"])
    assert result.exit_code == 0, result.output
    assert not elsewhere.exists() and link.is_file() and not link.is_symlink()


def test_disk_full_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(SCENARIO), "--out", "/dev/full",
                                      "--strategy", "karpenter"])
    assert result.exit_code == 2, result.output
    assert "cannot write /dev/full: No space left on device" in result.output


def test_a_planted_tmp_symlink_is_never_written_through(tmp_path):
    target = tmp_path / "victim"
    target.write_text("untouched")
    out = tmp_path / "table.parquet"
    (tmp_path / "table.parquet.tmp").symlink_to(target)
    write_atomic(out, b"data")
    assert target.read_text() == "untouched" and out.read_bytes() == b"data"


def test_long_workload_names_make_bounded_distinct_file_names(tmp_path):
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    assert len(safe_filename(long_a, ".yaml")) <= MAX_NAME_CHARS + 5
    assert safe_filename(long_a) != safe_filename(long_b)
    assert safe_filename("chat-scaler", ".yaml") == "chat-scaler.yaml"
    assert "/" not in safe_filename("../../etc/passwd")


def test_plan_tenant_and_workload_names_are_dns1123_labels(tmp_path):
    import yaml

    data = yaml.safe_load(PLAN_INPUT.read_text())
    for edit, field in [
        (lambda d: d.update(tenants=[{"name": 'prod"} or vector(1000)'}]), "tenants[0].name"),
        (lambda d: d["workloads"][0].update(tenant='x"} or vector(1)'), "workloads[0].tenant"),
        (lambda d: d["workloads"][0].update(name="c" * 300), "workloads[0].name"),
    ]:
        copy = yaml.safe_load(yaml.safe_dump(data))
        edit(copy)
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(copy))
        result = CliRunner().invoke(cli, ["plan", str(path), "--no-simulate"])
        assert result.exit_code == 2, result.output
        assert field in result.output and len(result.output.strip().splitlines()) == 1


def test_markup_and_escapes_in_names_never_reach_the_terminal(tmp_path):
    import yaml

    data = yaml.safe_load(SCENARIO.read_text())
    evil = "[/] [bold red]x\x1b]8;;http://evil\x07\x1b[2J"
    data["name"] = "n[/]\x1b[31m"
    data["strategies"][0]["name"] = evil
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(cli, ["simulate", str(path), "--strategy", evil])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "[/]" in result.output  # shown as written, not read as markup
    result = CliRunner().invoke(cli, ["simulate", str(path), "--strategy", "no\x1b[2Jsuch"])
    assert result.exit_code == 2 and "\x1b" not in result.output


def test_chart_files_replace_a_planted_link_not_its_target(tmp_path):
    # report --charts-dir wrote each chart with Path.write_text, through a link in the folder
    charts = tmp_path / "charts"
    charts.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("untouched")
    (charts / "replicas.svg").symlink_to(target)
    result = CliRunner().invoke(cli, ["report", str(SCENARIO), "--out", str(tmp_path / "r.html"),
                                      "--charts-dir", str(charts), "--force"])
    assert result.exit_code == 0, result.output
    assert target.read_text() == "untouched"
    assert not (charts / "replicas.svg").is_symlink()
    assert "<svg" in (charts / "replicas.svg").read_text()


def test_a_calibration_overlay_replaces_a_link_not_its_target(tmp_path):
    from tests.calibration.test_fit import synthetic_bench

    bench, overlay, target = tmp_path / "b.jsonl", tmp_path / "o.yaml", tmp_path / "t.yaml"
    synthetic_bench(bench)
    target.write_text("mine: true\n")
    overlay.symlink_to(target)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--overlay", str(overlay),
                                      "--force"])
    assert result.exit_code == 0, result.output
    assert target.read_text() == "mine: true\n"
    assert not overlay.is_symlink() and overlay.read_text().startswith("# gpuscale calibrate")
