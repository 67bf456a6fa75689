"""KEDA `scalingModifiers.formula`: compile (type-check as expr-lang does) and evaluate.

KEDA validates a formula by compiling it with expr-lang against an environment of the named
triggers as float64 and running it once with every trigger at -1
(kedacore/keda `apis/keda/v1alpha1/scaledobject_webhook.go`, `validateScalingModifiersFormula`);
it first wraps it in a float cast (`castToFloatIfNecessary`: `float(...)`, a nil-preserving
cast when the text holds `??`, none when it already starts with `float(`). At each poll the
triggers' values go in by name and the result becomes the composite metric
(`pkg/scaling/modifiers/formula.go`). `Formula.compile` does the same; the checker's rules are
expr-lang's (`checker/checker.go`: `/` and `**` give float, `%` takes integers only, a ternary's
condition must be bool, `??` cannot mix with other operators unparenthesised) and the runtime is
Go's (int64 wrap-around, float division by zero gives +-Inf or NaN, `round` halves away from
zero, `%` truncates toward zero). Builtins: abs, ceil, floor, round, int, float, max, min, mean,
median, sum, count, all, any, none, one, filter, map, len; any other expr-lang builtin is refused
by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuscale.autoscaling.formula_eval import evaluate
from gpuscale.autoscaling.formula_syntax import (
    Array,
    Binary,
    Call,
    Cond,
    Const,
    FormulaError,
    FormulaRefused,
    Name,
    Node,
    Num,
    Pointer,
    Predicate,
    ScopedVisitor,
    Unary,
    parse,
)

__all__ = ["Formula", "FormulaError", "FormulaRefused"]

# expr-lang's builtin names (builtin/builtin.go) beyond the simulated ones: refused by name.
_OTHER_BUILTINS = frozenset({
    "find", "findIndex", "findLast", "findLastIndex", "groupBy", "sortBy", "reduce", "type",
    "string", "trim", "trimPrefix", "trimSuffix", "upper", "lower", "split", "splitAfter",
    "replace", "repeat", "join", "indexOf", "lastIndexOf", "hasPrefix", "hasSuffix", "toJSON",
    "fromJSON", "toBase64", "fromBase64", "now", "duration", "date", "timezone", "first",
    "last", "get", "take", "keys", "values", "toPairs", "fromPairs", "reverse", "uniq",
    "concat", "flatten", "sort", "bitnot", "bitand", "bitor", "bitxor", "bitnand", "bitshl",
    "bitshr", "bitushr",
})
_NUMBER = ("int", "float")
Cast = Literal["float", "nil-or-float", "none"]


def cast_of(text: str) -> Cast:
    """`castToFloatIfNecessary`: how KEDA wraps the formula before compiling it."""
    if "??" in text:
        return "nil-or-float"
    return "none" if text.startswith("float(") else "float"


@dataclass(frozen=True)
class Formula:
    """A compiled formula: its text, syntax tree, and the float cast KEDA wraps it in."""

    text: str
    tree: Node
    cast: Cast

    @classmethod
    def compile(cls, text: str, names: Iterable[str]) -> Formula:
        """Parse, type-check against `names` (float64 trigger values) and run once with every
        trigger at -1, as KEDA's validation does; FormulaError / FormulaRefused if it fails."""
        names = tuple(names)
        tree = parse(text)
        kind = _Checker(frozenset(names)).visit(tree)
        formula = cls(text, tree, cast_of(text))
        if formula.cast != "none" and kind in ("bool", "array"):
            raise FormulaError(f"invalid argument for float (type {kind}): the formula must "
                               "give a number")
        formula.evaluate({name: -1.0 for name in names})
        return formula

    def evaluate(self, values: Mapping[str, float | None]) -> float | None:
        """The composite value; None when the formula gives nil (only through `??`).
        A failing formula (nil arithmetic, `%` by zero, ...) raises FormulaError."""
        result = evaluate(self.tree, values)
        if self.cast == "nil-or-float" and result is None:
            return None
        if self.cast == "none":
            if type(result) is not float:
                raise FormulaError(f"formula returned non-float result {_type(result)}")
            return result
        if type(result) not in (int, float):
            raise FormulaError(f"invalid argument for float (type {_type(result)})")
        return float(result)


def _type(value: Any) -> str:
    return {bool: "bool", int: "int", float: "float", list: "array"}.get(type(value), "nil")


class _Checker(ScopedVisitor):
    """expr-lang's checker for the subset: each node's static type, or a FormulaError."""

    def __init__(self, names: frozenset[str]):
        super().__init__()
        self.names = names
        self.depth = 0  # inside a predicate

    def _num(self, node: Num) -> str:
        return "int" if isinstance(node.value, int) else "float"

    def _const(self, node: Const) -> str:
        return "nil" if node.value is None else "bool"

    def _name(self, node: Name) -> str:
        found, kind = self.bound(node.name)
        if found:
            return kind
        if node.name in self.names:
            return "float"  # KEDA's environment: map[string]float64 of the named triggers
        raise FormulaError(f"unknown name {node.name} (the formula can use the triggers' "
                           f"names: {', '.join(sorted(self.names)) or 'none is named'})")

    def _pointer(self, node: Pointer) -> str:
        if node.name == "":
            return "any"
        if node.name == "index":
            return "int"
        raise FormulaRefused(f"predicate pointer #{node.name} is not simulated")

    def _unary(self, node: Unary) -> str:
        kind = self.visit(node.node)
        if node.op in ("-", "+") and kind in (*_NUMBER, "any"):
            return kind
        if node.op in ("!", "not") and kind in ("bool", "any"):
            return "bool"
        raise FormulaError(f"invalid operation: {node.op} (mismatched type {kind})")

    def _binary(self, node: Binary) -> str:
        left, right = self.visit(node.left), self.visit(node.right)
        result = _binary_type(node.op, left, right)
        if result is None:
            raise FormulaError(f"invalid operation: {node.op} (mismatched types {left} and "
                               f"{right})")
        return result

    def _cond(self, node: Cond) -> str:
        cond = self.visit(node.cond)
        if cond not in ("bool", "any"):
            raise FormulaError(f"non-bool expression (type {cond}) used as condition")
        return _either(self.visit(node.then), self.visit(node.other))

    def _array(self, node: Array) -> str:
        for item in node.items:
            self.visit(item)
        return "array"

    def _predicate(self, node: Predicate) -> str:
        self.depth += 1
        try:
            return self.visit(node.node)
        finally:
            self.depth -= 1

    def _call(self, node: Call) -> str:
        if node.name in _OTHER_BUILTINS:
            raise FormulaRefused(f"builtin {node.name}() is not simulated")
        check = _BUILTIN_TYPES.get(node.name)
        if check is None:
            raise FormulaError(f"unknown func {node.name}")
        kinds = [self.visit(arg) for arg in node.args]
        return check(node.name, kinds)


def _either(a: str, b: str) -> str:
    """The type of a value that is `a` or `b` (the ternary's and `??`'s rule)."""
    if a == "nil" or b == "nil":
        return b if a == "nil" else a
    return a if a == b else "any"


def _binary_type(op: str, left: str, right: str) -> str | None:
    """expr-lang's `binaryNode` for the simulated operators; None = mismatched types."""
    loose = "any" in (left, right)

    def fits(*allowed: str) -> bool:
        return all(k in (*allowed, "any") for k in (left, right))

    if op in ("==", "!="):
        comparable = loose or "nil" in (left, right) or left == right or fits(*_NUMBER)
        return "bool" if comparable else None
    if op in ("and", "&&", "or", "||"):
        return "bool" if fits("bool") else None
    if op in ("<", ">", "<=", ">="):
        return "bool" if fits(*_NUMBER) else None
    if op in ("+", "-", "*"):
        if not fits(*_NUMBER):
            return None
        return "any" if loose else ("int" if left == right == "int" else "float")
    if op in ("/", "**", "^"):
        return "float" if fits(*_NUMBER) else None
    if op == "%":
        return "int" if fits("int") else None
    if op == "??":
        return _either(left, right)
    return None


def _numeric_args(name: str, kinds: list[str]) -> str:
    """`validateAggregateFunc` (max, min, mean, median): numbers or arrays, at least one."""
    if not kinds:
        raise FormulaError(f"not enough arguments to call {name}")
    for kind in kinds:
        if kind in ("array", "any"):
            return "any"
        if kind not in _NUMBER:
            raise FormulaError(f"invalid argument for {name} (type {kind})")
    return kinds[0]


def _one_number(result: str | None):
    def check(name: str, kinds: list[str]) -> str:
        if len(kinds) != 1:
            raise FormulaError(f"invalid number of arguments to {name} (expected 1, got "
                               f"{len(kinds)})")
        if kinds[0] not in (*_NUMBER, "any"):
            raise FormulaError(f"invalid argument for {name} (type {kinds[0]})")
        return result or kinds[0]
    return check


_BOOL_PREDICATES = frozenset({"count", "all", "any", "none", "one", "filter"})


def _over_array(result: str):
    def check(name: str, kinds: list[str]) -> str:
        if kinds[0] not in ("array", "any"):
            raise FormulaError(f"builtin {name} takes an array (type {kinds[0]})")
        if name in _BOOL_PREDICATES and len(kinds) > 1 and kinds[1] not in ("bool", "any"):
            raise FormulaError(f"predicate of {name} should return boolean (got {kinds[1]})")
        return result
    return check


_BUILTIN_TYPES = {
    "abs": _one_number(None), "ceil": _one_number("float"), "floor": _one_number("float"),
    "round": _one_number("float"), "int": _one_number("int"), "float": _one_number("float"),
    "max": _numeric_args, "min": _numeric_args, "mean": _numeric_args,
    "median": _numeric_args, "len": _over_array("int"), "count": _over_array("int"),
    "sum": _over_array("any"), "all": _over_array("bool"), "any": _over_array("bool"),
    "none": _over_array("bool"), "one": _over_array("bool"), "filter": _over_array("array"),
    "map": _over_array("array"),
}
