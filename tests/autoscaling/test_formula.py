"""KEDA scalingModifiers formulas: expr-lang's grammar, types and Go runtime, the examples of
KEDA's docs with the values they state, published llm-d and KEDA formulas, and the refusals."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpuscale.autoscaling.formula import Formula, FormulaError, FormulaRefused


def value(text: str, **values: float | None) -> float | None:
    return Formula.compile(text, values).evaluate(values)


# --- kedacore/keda-docs content/docs/2.21/concepts/scaling-deployments.md, "Scaling Modifiers"
def test_docs_compose_average_value():
    # "composes 2 given metrics ... together as an average value"
    assert value("(trig_one + trig_two)/2", trig_one=3, trig_two=6) == 4.5


@pytest.mark.parametrize("one, two, expected", [(3, 4, 7.0), (2, 4, 1.0), (0, 9, 1.0)])
def test_docs_ternary(one, two, expected):
    # "If metric value of trigger trig_one is more than 2, then return trig_one + trig_two
    # otherwise return 1"
    assert value("trig_one > 2 ? trig_one + trig_two : 1", trig_one=one, trig_two=two) \
        == expected


@pytest.mark.parametrize("values, expected", [((2, 3, 0), 5.0), ((2, 0, 0), 0.0),
                                              ((1, 1, 1), 0.0), ((5, 5, 5), 5.0)])
def test_docs_count_function(values, expected):
    # "If at least 2 metrics (from the list trig_one, trig_two, trig_three) have value of more
    # than 1, then return 5, otherwise return 0"
    one, two, three = values
    assert value("count([trig_one,trig_two,trig_three],{#>1}) > 1 ? 5 : 0",
                 trig_one=one, trig_two=two, trig_three=three) == expected


@pytest.mark.parametrize("one, two, expected", [(1, 1, 5.0), (1, 0.5, 10.0), (2, 9, 0.0)])
def test_docs_nested_conditions(one, two, expected):
    # "If value of trig_one is less than 2 AND trig_one+trig_two is at least 2 then return 5,
    # if only the first is true return 10, if the first condition is false then return 0"
    assert value("trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0",
                 trig_one=one, trig_two=two) == expected


@pytest.mark.parametrize("best, slower, backup, expected", [
    (4, 6, 7, 4.0), (None, 6, 7, 6.0), (None, None, 7, 7.0), (None, None, None, 8.0)])
def test_docs_per_trigger_failover(best, slower, backup, expected):
    # "prefers best_metric; if it has been failing ... uses slower_metric instead; ... falls
    # through to metric_backup, and ultimately to the literal 8 when every trigger is failing"
    assert value("best_metric ?? slower_metric ?? metric_backup ?? 8", best_metric=best,
                 slower_metric=slower, metric_backup=backup) == expected


def test_docs_failover_without_a_literal_is_nil():
    # "If the trailing literal is omitted ... the formula evaluates to nil"
    assert value("best_metric ?? slower_metric", best_metric=None, slower_metric=None) is None


# --- published formulas -------------------------------------------------------------------
# llm-d/llm-d guides/workload-autoscaling/keda-epp/optimized-baseline/overlays/k8s/
# queue-guard/scaledobject.yaml
QUEUE_GUARD = """let queue_per_replica = 1;
let running_per_replica = 16;
let demand = max(queue / queue_per_replica, running / running_per_replica);
demand <= replicas
? demand
: max(demand - (pending ?? 0), replicas)"""


@pytest.mark.parametrize("queue, running, pending, replicas, expected", [
    (10, 20, 3, 2, 7.0),      # demand 10 > 2 replicas: discounted by 3 pending pods
    (10, 20, None, 2, 10.0),  # pending's scaler failing past the threshold: nil -> 0
    (1, 2, 3, 2, 1.0),        # demand 1 within the 2 replicas
    (0, 64, 9, 3, 3.0),       # demand 4, minus 9 pending, floored at the 3 replicas
])
def test_llm_d_queue_guard(queue, running, pending, replicas, expected):
    assert value(QUEUE_GUARD, queue=queue, running=running, pending=pending,
                 replicas=replicas) == expected


def test_keda_e2e_if_else_over_an_array():
    # kedacore/keda tests/internals/scaling_modifiers (soMultiTriggerFormulaTemplate)
    text = """if (max([cron_trigger_morning, cron_trigger_afternoon, cron_trigger_evening]) > 0) {
      max([cron_trigger_morning, cron_trigger_afternoon, cron_trigger_evening])
    } else {
      metrics_api_trigger
    }"""
    names = dict(cron_trigger_morning=0, cron_trigger_afternoon=5, cron_trigger_evening=0)
    assert value(text, **names, metrics_api_trigger=2) == 5.0
    assert value(text, **dict.fromkeys(names, 0.0), metrics_api_trigger=2) == 2.0


# --- expr-lang's grammar and Go's arithmetic ------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("-2 ** 2", -4.0),            # unary minus binds looser than ** (operator.go 90 < 100)
    ("2 ** 3 ** 2", 512.0),       # ** is right-associative
    ("2 ^ 3", 8.0),
    ("7 % 3 + -7 % 3", 0.0),      # Go's % truncates toward zero: 1 + -1
    ("7 / 2", 3.5),               # / always divides as floats
    ("1 / 0", math.inf), ("-1 / 0", -math.inf),
    ("round(2.5) + round(-2.5)", 0.0), ("round(0.5)", 1.0), ("round(0.49999999999999994)", 0.0),
    ("ceil(1.2) + floor(-1.2)", 0.0), ("abs(-3) + int(2.9) + int(-2.9)", 3.0),
    ("max(1, 5.5, 3)", 5.5), ("min([4, 2], 3)", 2.0), ("mean([1, 2, 6])", 3.0),
    ("median([5, 1, 3, 9])", 4.0), ("sum([1, 2, 3])", 6.0), ("sum([1, 2, 3], {# * 2})", 12.0),
    ("len(filter([1, 5, 9], {# > 2}))", 2.0), ("sum(map([1, 2], {# + #index}))", 4.0),
    ("all([2, 3], {# > 1}) && !none([1], {# > 0}) ? 1 : 0", 1.0),
    ("1 < 2 < 3 ? 1 : 0", 1.0), ("3 > 2 > 1 ? 1 : 0", 1.0),  # 3 > 2 && 2 > 1, not (3 > 2) > 1
    ("1 == 1.0 ? 1 : 0", 1.0), ("nil == 0 ? 1 : 0", 0.0),
    ("true or 1 / 0 > 0 ? 1 : 0", 1.0),  # or short-circuits
    ("(nil ?? 3) + 1", 4.0), ("0 ?: 2", None),  # ?: needs a bool: checked below
    ("let x = 2; let y = x * 3; x + y", 8.0), ("1; 2; 3", 3.0), ("1_000 + 0x10 + 0b11", 1019.0),
    (".5 + 1e1", 10.5),
])
def test_grammar_and_runtime(text, expected):
    if expected is None:
        with pytest.raises(FormulaError, match="non-bool"):
            value(text, a=1.0)
        return
    assert value(text, a=1.0) == expected


def test_int64_wraps_as_in_go():
    assert value("9223372036854775807 + 1") == float(-(2**63))


def test_nan_comes_out_of_zero_over_zero():
    assert math.isnan(value("0 / 0"))


@pytest.mark.parametrize("text, message", [
    ("a % 2", "mismatched types float and int"),  # triggers are float64; % wants integers
    ("a && b", "mismatched types float and float"),
    ("a ?? b + 1", "cannot be mixed"),
    ("a > 1", "must give a number"),              # float(bool) does not compile
    ("unknown + 1", "unknown name unknown"),
    ("foo(1)", "unknown func foo"),
    ("a ? 1 : 2", "non-bool expression"),
    ("(a", "unexpected token end of formula"),
    ("1 $ 2", "unexpected token"),
    ("1a", "bad number syntax"),
    ("5 % 0", "integer divide by zero"),          # KEDA's validation run fails too
    ("float(a) > 1 ? 2 : 3", "non-float result int"),  # starts with float(: not wrapped
])
def test_keda_refuses_what_expr_lang_refuses(text, message):
    with pytest.raises(FormulaError, match=message):
        Formula.compile(text, ["a", "b"])


@pytest.mark.parametrize("text, construct", [
    ("'x' == 'y' ? 1 : 0", "string literal"), ("a.b", "member access"),
    ("a in [1, 2] ? 1 : 0", "`in` operator"), ("now()", "builtin now()"),
    ("[1, 2][0]", "indexing"), ("{a: 1}", "map literal"), ("1..3", "range operator"),
    ("a | abs()", "pipe operator"), ("reduce([1], {#acc})", "builtin reduce()"),
    ("a not in [1] ? 1 : 0", "negated operator"),
])
def test_constructs_outside_the_subset_are_refused_by_name(text, construct):
    with pytest.raises(FormulaRefused, match=construct):
        Formula.compile(text, ["a"])


def test_a_runtime_failure_is_an_error_not_a_number():
    # nil arithmetic fails at run time (the HPA then gets no composite metric).
    formula = Formula.compile("a + b", ["a", "b"])
    with pytest.raises(FormulaError, match="invalid operation"):
        formula.evaluate({"a": None, "b": 1.0})


# --- properties -----------------------------------------------------------------------------
OPS = ("+", "-", "*", "/")


@st.composite
def arithmetic(draw, depth: int = 0) -> str:
    """An expression over float literals, `+ - * /`, unary minus and parentheses: Python and
    expr-lang give these the same precedence and associativity."""
    if depth > 3 or draw(st.booleans()):
        number = draw(st.floats(min_value=0.125, max_value=64, allow_nan=False))
        return repr(number)
    left, right = draw(arithmetic(depth + 1)), draw(arithmetic(depth + 1))
    text = f"{left} {draw(st.sampled_from(OPS))} {right}"
    if draw(st.booleans()):
        text = f"({text})"
    return f"-{text}" if draw(st.integers(0, 4)) == 0 else text


@given(arithmetic())
def test_arithmetic_agrees_with_python(text):
    try:
        expected = float(eval(text))  # the same grammar for this subset
    except ZeroDivisionError:
        assume(False)
    assert value(text) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1,
                max_size=6))
def test_max_min_mean_of_triggers(values):
    names = {f"t{i}": v for i, v in enumerate(values)}
    items = ", ".join(names)
    assert value(f"max([{items}])", **names) == max(values)
    assert value(f"min({items})", **names) == min(values)
    assert value(f"mean([{items}])", **names) == pytest.approx(sum(values) / len(values))
