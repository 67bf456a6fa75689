"""Every rule fires on its fixture and stays quiet on its counter-example; registry invariants."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.audit import audit_objects, load_inputs
from gpuscale.audit.docs import generate
from gpuscale.audit.model import Rule, Severity
from gpuscale.audit.rules import RULES, build_registry, resolve

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
DOCS = HERE.parents[1] / "docs" / "rules"
REFERENCE = HERE.parents[1] / ".." / "shared" / "reference"


def findings_of(rule: Rule, path: Path):
    return audit_objects(load_inputs([str(path)]), [rule])


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_fires_on_its_fixture(rule_id):
    rule = RULES[rule_id]
    found = findings_of(rule, FIXTURES / rule_id / "fires.yaml")
    assert found, f"{rule_id} did not fire on fires.yaml"
    assert all(f.rule_id == rule_id and f.severity is rule.severity for f in found)
    # kube-linter convention: objects named dont-fire are quiet even inside fires.yaml
    assert not [f for f in found if f.object_ref.endswith("/dont-fire")]


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_quiet_on_passes_fixture(rule_id):
    found = findings_of(RULES[rule_id], FIXTURES / rule_id / "passes.yaml")
    assert found == [], [f.message for f in found]


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_finding_line_points_at_the_named_field(rule_id):
    """The reported line holds the last key of the YAML path (or its parent, for missing keys)."""
    path = FIXTURES / rule_id / "fires.yaml"
    lines = path.read_text().splitlines()
    for f in findings_of(RULES[rule_id], path):
        last = f.yaml_path.split(".")[-1].split("[")[0]
        assert last in lines[f.line - 1] or "- " in lines[f.line - 1], (
            f.yaml_path,
            lines[f.line - 1],
        )


def test_meta_every_rule_has_fixtures_and_docs():
    """Fails when a registered rule lacks fires.yaml, passes.yaml or an up-to-date docs page."""
    expected = generate(DOCS, FIXTURES)
    problems = []
    for rule_id in RULES:
        for name in ("fires.yaml", "passes.yaml"):
            if not (FIXTURES / rule_id / name).is_file():
                problems.append(f"{rule_id}: missing fixture {name}")
    for page, text in expected.items():
        if not page.is_file():
            problems.append(f"missing docs page {page.name}")
        elif page.read_text() != text:
            problems.append(
                f"stale docs page {page.name}: run python -m gpuscale.audit.docs docs/rules"
            )
    assert not problems, "\n".join(problems)


def test_no_fixture_dir_without_a_rule():
    orphans = [p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name not in RULES]
    assert not orphans


def test_rule_metadata_is_complete():
    names = set()
    for rule in RULES.values():
        assert rule.name not in names
        names.add(rule.name)
        assert rule.why and rule.fix and rule.summary and rule.references
        assert rule.family and rule.kinds
        # every rule cites at least one reference note from ../shared/reference
        assert any(r.split()[0].endswith(".md") for r in rule.references), rule.id


def test_reference_files_cited_exist():
    if not REFERENCE.is_dir():
        pytest.skip("../shared/reference not present")
    for rule in RULES.values():
        for ref in rule.references:
            first = ref.split()[0]
            if first.endswith(".md"):
                assert (REFERENCE / first).is_file(), (rule.id, first)


def test_duplicate_rule_id_fails_at_build():
    with pytest.raises(ValueError, match=r"duplicate rule id .GPU001."):
        build_registry(("signals.gpu001_gpu_duty_cycle", "signals.gpu001_gpu_duty_cycle"))


def test_resolve_by_id_name_and_redirect():
    assert resolve("gpu001").id == "GPU001"
    assert resolve("scales-on-gpu-duty-cycle").id == "GPU001"
    assert resolve("GPU900", redirects={"GPU900": "GPU012"}).id == "GPU012"
    with pytest.raises(KeyError, match="did you mean"):
        resolve("scales-on-gpu-duty-cycl")


def test_severity_parse_and_order():
    assert Severity.parse("Warning") is Severity.WARNING
    assert Severity.ERROR > Severity.WARNING > Severity.INFO
    with pytest.raises(ValueError):
        Severity.parse("fatal")
