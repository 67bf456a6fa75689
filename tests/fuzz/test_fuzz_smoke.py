"""A short run of the fuzz script keeps it working; run it longer by hand (docs/input-limits.md)."""

from __future__ import annotations

import pytest

from tests.fuzz.fuzz_inputs import main, mutate


def test_a_short_fuzz_run_of_audit_and_plan_finds_nothing(capsys):
    assert main(["--cases", "40", "--seed", "7", "--commands", "audit,plan"]) == 0
    assert "40 cases, 0 failures" in capsys.readouterr().out


def test_mutations_are_deterministic_per_seed():
    import random

    text = "a: 1\nb: [1, 2]\nc: x\n"
    assert mutate(text, random.Random(3)) == mutate(text, random.Random(3))


def test_a_short_fuzz_run_of_the_manifest_and_calibration_inputs_finds_nothing(capsys):
    # simulate --manifests bundles, calibrate --rows and --fit (bench-serve and Prometheus).
    assert main(["--cases", "30", "--seed", "2", "--commands", "manifests,rows,fit"]) == 0
    assert "30 cases, 0 failures" in capsys.readouterr().out


def test_json_mutations_are_deterministic_per_seed():
    import random

    from tests.fuzz.fuzz_inputs import mutate_json

    text = '{"a": 1, "b": [1, 2, {"c": "x"}]}'
    assert mutate_json(text, random.Random(3)) == mutate_json(text, random.Random(3))
    lines = '{"a": 1}\n{"a": 2}\n'
    assert mutate_json(lines, random.Random(5)) == mutate_json(lines, random.Random(5))


def test_a_short_fuzz_run_of_the_command_line_finds_nothing(capsys):
    # Odd environment values, huge numbers in numeric options, unusual file kinds for inputs
    # and outputs (tests/fuzz/fuzz_cli.py; run it longer by hand).
    from tests.fuzz.fuzz_cli import main as fuzz_cli

    assert fuzz_cli(["--cases", "12", "--seed", "5", "--classes", "env,numbers,files"]) == 0
    assert "12 cases, 0 failures" in capsys.readouterr().out


def test_a_short_fuzz_run_of_signals_mid_run_finds_nothing(capsys):
    from tests.fuzz.fuzz_cli import main as fuzz_cli

    assert fuzz_cli(["--cases", "2", "--seed", "4", "--classes", "signals"]) == 0
    assert "2 cases, 0 failures" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["names", "config", "stdin", "argv", "traces", "race",
                                  "determinism"])
def test_one_case_of_each_class_beyond_the_issue_finds_nothing(kind, capsys):
    from tests.fuzz.fuzz_cli import main as fuzz_cli

    assert fuzz_cli(["--cases", "1", "--seed", "3", "--classes", kind]) == 0
    assert "1 cases, 0 failures" in capsys.readouterr().out
