"""`.gpuscale.yaml` defaults: flag > environment > file > built-in default."""

import json

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from ..sim.scenarios import small_scenario


def _run(args, **kwargs):
    return CliRunner().invoke(cli, args, auto_envvar_prefix="GPUSCALE", **kwargs)


def test_flag_beats_env_beats_file(tmp_path, monkeypatch):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(small_scenario(duration_s=60.0).model_dump(mode="json")))
    (tmp_path / ".gpuscale.yaml").write_text("compare:\n  seeds: 2\n  output: json\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUSCALE_CONFIG", raising=False)
    from_file = json.loads(_run(["compare", str(scenario)]).output)
    assert len(from_file["seeds"]) == 2
    monkeypatch.setenv("GPUSCALE_COMPARE_SEEDS", "3")
    from_env = json.loads(_run(["compare", str(scenario)]).output)
    assert len(from_env["seeds"]) == 3
    from_flag = json.loads(_run(["compare", str(scenario), "--seeds", "1"]).output)
    assert "seeds" not in from_flag


def test_an_unknown_option_in_the_file_is_bad_input(tmp_path, monkeypatch):
    (tmp_path / ".gpuscale.yaml").write_text("audit:\n  fail-onn: error\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUSCALE_CONFIG", raising=False)
    result = _run(["audit", "--list-rules"])
    assert result.exit_code == 2
    assert ".gpuscale.yaml" in result.output and "fail-onn" in result.output


def test_shell_completion_lists_subcommands_and_output_choices():
    # What `_GPUSCALE_COMPLETE=bash_complete` answers (docs/cli.md documents the setup).
    env = {"_GPUSCALE_COMPLETE": "bash_complete", "COMP_WORDS": "gpuscale com", "COMP_CWORD": "1"}
    result = CliRunner().invoke(cli, [], prog_name="gpuscale", env=env)
    assert "compare" in result.output
    env = {"_GPUSCALE_COMPLETE": "bash_complete", "COMP_WORDS": "gpuscale audit -o ",
           "COMP_CWORD": "3"}
    result = CliRunner().invoke(cli, [], prog_name="gpuscale", env=env)
    for choice in ("table", "json", "yaml", "sarif"):
        assert choice in result.output
