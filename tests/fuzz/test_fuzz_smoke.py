"""A short run of the fuzz script keeps it working; run it longer by hand (docs/input-limits.md)."""

from __future__ import annotations

from tests.fuzz.fuzz_inputs import main, mutate


def test_a_short_fuzz_run_of_audit_and_plan_finds_nothing(capsys):
    assert main(["--cases", "40", "--seed", "7", "--commands", "audit,plan"]) == 0
    assert "40 cases, 0 failures" in capsys.readouterr().out


def test_mutations_are_deterministic_per_seed():
    import random

    text = "a: 1\nb: [1, 2]\nc: x\n"
    assert mutate(text, random.Random(3)) == mutate(text, random.Random(3))
