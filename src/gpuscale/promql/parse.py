"""The parse adapter: PromQL text -> a small tree of frozen nodes the engine evaluates.

Parsing is `promql-parser`'s (the Python binding of GreptimeTeam's Rust parser, which follows
Prometheus's grammar); this module only copies its tree into plain dataclasses with durations
in integer milliseconds, so the engine never touches the binding's objects, and refuses what
the engine does not evaluate (native histograms' functions, Prometheus 3's newer functions)
with the name of the construct. Parsed trees are cached by text: autoscalers ask the same
queries every tick.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import NAME


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str  # "=", "!=", "=~", "!~"
    value: str
    pattern: re.Pattern | None = None  # anchored, for =~ and !~

    def matches(self, value: str) -> bool:
        if self.op == "=":
            return value == self.value
        if self.op == "!=":
            return value != self.value
        assert self.pattern is not None
        found = self.pattern.fullmatch(value) is not None
        return found if self.op == "=~" else not found


@dataclass(frozen=True)
class At:
    kind: str  # "at" (a fixed time), "start", "end"
    t_ms: int = 0


@dataclass(frozen=True)
class Node:
    pass


@dataclass(frozen=True)
class Num(Node):
    value: float


@dataclass(frozen=True)
class Str(Node):
    value: str


@dataclass(frozen=True)
class Selector(Node):
    name: str | None
    matchers: tuple[Matcher, ...]
    offset_ms: int = 0
    at: At | None = None


@dataclass(frozen=True)
class RangeSel(Node):
    selector: Selector
    range_ms: int


@dataclass(frozen=True)
class Subquery(Node):
    expr: Node
    range_ms: int
    step_ms: int | None
    offset_ms: int = 0


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Agg(Node):
    op: str
    expr: Node
    param: Node | None
    grouping: tuple[str, ...]
    without: bool


@dataclass(frozen=True)
class Binary(Node):
    op: str
    lhs: Node
    rhs: Node
    return_bool: bool = False
    card: str = "one-to-one"  # "one-to-one", "many-to-one", "one-to-many", "many-to-many"
    on: bool = False  # True: `on(labels)`; False: `ignoring(labels)` (or no modifier)
    matching: tuple[str, ...] = ()
    include: tuple[str, ...] = ()  # group_left/group_right labels


@dataclass(frozen=True)
class Neg(Node):
    expr: Node


# The functions the engine evaluates (Prometheus 2.42's list, less native-histogram ones).
INSTANT_FUNCTIONS = frozenset({
    "abs", "absent", "ceil", "clamp", "clamp_max", "clamp_min", "day_of_month", "day_of_week",
    "day_of_year", "days_in_month", "deg", "exp", "floor", "histogram_quantile", "hour",
    "label_join", "label_replace", "ln", "log10", "log2", "minute", "month", "pi", "rad",
    "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "time", "timestamp", "vector", "year",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh"})
RANGE_FUNCTIONS = frozenset({
    "rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "changes",
    "resets", "avg_over_time", "sum_over_time", "min_over_time", "max_over_time",
    "count_over_time", "last_over_time", "present_over_time", "quantile_over_time",
    "stddev_over_time", "stdvar_over_time", "absent_over_time"})
AGGREGATIONS = frozenset({"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar",
                          "topk", "bottomk", "quantile", "count_values"})

_OPS = {"EQL": "==", "EQLC": "=="}
_CARD = {"OneToOne": "one-to-one", "ManyToOne": "many-to-one", "OneToMany": "one-to-many",
         "ManyToMany": "many-to-many"}
_MATCH_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def _ms(delta: timedelta | None) -> int:
    if delta is None:
        return 0
    return (delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000)


def _enum_name(value: Any) -> str:
    return str(value).rsplit(".", 1)[-1]


def _binding():
    try:
        import promql_parser
    except ImportError:  # a declared dependency; only a broken install lacks it
        raise PromQLError("reading PromQL needs the `promql-parser` package") from None
    return promql_parser


def compile_regex(value: str) -> re.Pattern:
    """A matcher's regex, anchored as Prometheus anchors it (`^(?:re)$`)."""
    try:
        return re.compile(f"(?:{value})")
    except re.error as exc:
        raise PromQLError(f"invalid regular expression {value!r}: {exc}") from None


def _selector(vs: Any, p: Any) -> Selector:
    matchers = []
    if vs.matchers.or_matchers:
        raise PromQLError("`or` inside a selector (Prometheus 3.x syntax) is not evaluated")
    for m in vs.matchers.matchers:
        op = _MATCH_OPS[_enum_name(m.op)]
        matchers.append(Matcher(m.name, op, m.value,
                                compile_regex(m.value) if op in ("=~", "!~") else None))
    name = vs.name or None
    if name and not any(m.name == NAME for m in matchers):
        matchers.insert(0, Matcher(NAME, "=", name))
    at = None
    if vs.at is not None:
        kind = _enum_name(vs.at.type).lower()
        at = At(kind, round(vs.at.at.timestamp() * 1000) if kind == "at" else 0)
    return Selector(name, tuple(matchers), _ms(vs.offset), at)


def convert(expr: Any, p: Any) -> Node:
    """The binding's node -> ours (parentheses dropped)."""
    if isinstance(expr, p.ParenExpr):
        return convert(expr.expr, p)
    if isinstance(expr, p.NumberLiteral):
        return Num(float(expr.val))
    if isinstance(expr, p.StringLiteral):
        return Str(expr.val)
    if isinstance(expr, p.VectorSelector):
        return _selector(expr, p)
    if isinstance(expr, p.MatrixSelector):
        selector = _selector(expr.vector_selector, p)
        if selector.at is not None:
            raise PromQLError("`@` on a range selector is not evaluated")
        return RangeSel(selector, _ms(expr.range))
    if isinstance(expr, p.SubqueryExpr):
        if expr.at is not None:
            raise PromQLError("`@` on a subquery is not evaluated")
        step = _ms(expr.step) if expr.step is not None else None
        return Subquery(convert(expr.expr, p), _ms(expr.range), step or None, _ms(expr.offset))
    if isinstance(expr, p.UnaryExpr):
        return Neg(convert(expr.expr, p))
    if isinstance(expr, p.Call):
        name = expr.func.name
        if name not in INSTANT_FUNCTIONS and name not in RANGE_FUNCTIONS:
            raise PromQLError(f"function {name}() is not evaluated by gpuscale")
        return Call(name, tuple(convert(a, p) for a in expr.args))
    if isinstance(expr, p.AggregateExpr):
        op = str(expr.op).lower()
        if op not in AGGREGATIONS:
            raise PromQLError(f"aggregation {op}() is not evaluated by gpuscale")
        modifier = expr.modifier
        grouping: tuple[str, ...] = ()
        without = False
        if modifier is not None:
            grouping = tuple(modifier.labels)
            without = _enum_name(modifier.type) == "Without"
        param = convert(expr.param, p) if expr.param is not None else None
        return Agg(op, convert(expr.expr, p), param, grouping, without)
    if isinstance(expr, p.BinaryExpr):
        return _binary(expr, p)
    raise PromQLError(f"expression {expr} is not evaluated by gpuscale")


def _binary(expr: Any, p: Any) -> Binary:
    op = str(expr.op).lower()
    op = _OPS.get(op, op)
    modifier = expr.modifier
    if modifier is None:
        card = "many-to-many" if op in ("and", "or", "unless") else "one-to-one"
        return Binary(op, convert(expr.lhs, p), convert(expr.rhs, p), card=card)
    card = _CARD[_enum_name(modifier.card)]
    on, matching = False, ()
    if modifier.matching is not None:
        on = _enum_name(modifier.matching.type) == "Include"
        matching = tuple(modifier.matching.labels)
    fill = getattr(modifier, "fill_values", None)
    if fill is not None and (getattr(fill, "lhs", None) is not None
                             or getattr(fill, "rhs", None) is not None):
        raise PromQLError("`fill` modifiers (Prometheus 3.x) are not evaluated")
    return Binary(op, convert(expr.lhs, p), convert(expr.rhs, p), bool(modifier.return_bool),
                  card, on, matching, tuple(modifier.group_labels or ()))


@lru_cache(maxsize=512)
def parse(query: str) -> Node:
    """Parse `query`; PromQLError for invalid syntax or what the engine cannot evaluate."""
    p = _binding()
    try:
        tree = p.parse(query)
    except (ValueError, RuntimeError) as exc:
        raise PromQLError(f"invalid PromQL: {exc}") from None
    return convert(tree, p)


def value_type(node: Node) -> str:
    """"scalar", "vector", "matrix" or "string": what `node` evaluates to."""
    if isinstance(node, Num):
        return "scalar"
    if isinstance(node, Str):
        return "string"
    if isinstance(node, (RangeSel, Subquery)):
        return "matrix"
    if isinstance(node, Call):
        return "scalar" if node.func in ("scalar", "time", "pi") else "vector"
    if isinstance(node, Neg):
        return value_type(node.expr)
    if isinstance(node, Binary):
        both = value_type(node.lhs) == "scalar" and value_type(node.rhs) == "scalar"
        return "scalar" if both else "vector"
    return "vector"


def metric_names(node: Node) -> set[str] | None:
    """The metric names `node` reads; None when a selector matches names by regex or
    negation (it may read any family)."""
    out: set[str] = set()
    for selector in selectors(node):
        names = [m for m in selector.matchers if m.name == NAME]
        if any(m.op != "=" for m in names) or not names:
            return None
        out.add(names[0].value)
    return out


def selectors(node: Node) -> list[Selector]:
    """Every vector selector in `node`, in order."""
    if isinstance(node, Selector):
        return [node]
    if isinstance(node, RangeSel):
        return [node.selector]
    children: tuple[Node, ...] = ()
    if isinstance(node, (Subquery, Neg)):
        children = (node.expr,)
    elif isinstance(node, Call):
        children = node.args
    elif isinstance(node, Agg):
        children = (node.expr,) if node.param is None else (node.param, node.expr)
    elif isinstance(node, Binary):
        children = (node.lhs, node.rhs)
    return [s for child in children for s in selectors(child)]
