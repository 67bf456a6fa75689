"""Evaluating a formula's syntax tree as expr-lang's VM does (Go semantics).

Values are Python `int` (Go int64: `+ - *` and negation wrap around), `float` (float64),
`bool`, `None` (nil) and `list` (arrays). Rules from expr-lang `vm/runtime` and `builtin/lib.go`:
`/` and `**` always give floats and never fail (a float division by zero is +-Inf or NaN, as in
Go); `%` takes integers and fails on zero; `==` compares numbers across int and float and is
false between nil and a value; `<` and arithmetic on nil or bool fail; `and`/`or` and `??`
evaluate their right side only when needed; `round` halves away from zero (Go `math.Round`);
`max`/`min` keep the first of equal extremes and the element's own type; `mean`/`median` of
nothing are 0. A failure raises FormulaError, which KEDA logs and reports as a failed metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gpuscale.autoscaling.formula_syntax import (
    Array,
    Binary,
    Call,
    Cond,
    Const,
    FormulaError,
    Name,
    Node,
    Num,
    Pointer,
    Predicate,
    ScopedVisitor,
    Unary,
)

_INT64 = 2**64


def wrap_int64(value: int) -> int:
    """Go's int64 arithmetic wraps around."""
    return (value + 2**63) % _INT64 - 2**63


def is_number(value: Any) -> bool:
    return type(value) in (int, float)  # bool is an int subclass in Python, not in Go


def _kind(value: Any) -> str:
    return {bool: "bool", int: "int", float: "float", list: "array"}.get(type(value), "nil")


def evaluate(tree: Node, values: Mapping[str, float | None]) -> Any:
    """The value of `tree` with the triggers' `values` (None = nil)."""
    return _Eval(values).visit(tree)


class _Eval(ScopedVisitor):
    def __init__(self, values: Mapping[str, float | None]):
        super().__init__()
        self.values = values
        self.element: list[tuple[Any, int]] = []  # predicate `#` and `#index`, innermost last

    def _num(self, node: Num) -> Any:
        return node.value

    def _const(self, node: Const) -> Any:
        return node.value

    def _name(self, node: Name) -> Any:
        found, value = self.bound(node.name)
        return value if found else self.values.get(node.name)

    def _pointer(self, node: Pointer) -> Any:
        value, index = self.element[-1]
        return index if node.name == "index" else value

    def _unary(self, node: Unary) -> Any:
        value = self.visit(node.node)
        if node.op in ("!", "not"):
            if type(value) is not bool:
                raise FormulaError(f"invalid operation: ! {_kind(value)}")
            return not value
        if not is_number(value):
            raise FormulaError(f"invalid operation: {node.op} {_kind(value)}")
        if node.op == "+":
            return value
        return wrap_int64(-value) if type(value) is int else -value

    def _binary(self, node: Binary) -> Any:
        op = node.op
        if op in ("and", "&&", "or", "||"):
            return self._logical(op, node)
        left = self.visit(node.left)
        if op == "??":
            return self.visit(node.right) if left is None else left
        return binary(op, left, self.visit(node.right))

    def _logical(self, op: str, node: Binary) -> bool:
        left = self.visit(node.left)
        if type(left) is not bool:
            raise FormulaError(f"invalid operation: {op} on {_kind(left)}")
        if left == (op in ("or", "||")):  # short circuit
            return left
        right = self.visit(node.right)
        if type(right) is not bool:
            raise FormulaError(f"invalid operation: {op} on {_kind(right)}")
        return right

    def _cond(self, node: Cond) -> Any:
        cond = self.visit(node.cond)
        if type(cond) is not bool:
            raise FormulaError(f"non-bool value ({_kind(cond)}) used as condition")
        return self.visit(node.then if cond else node.other)

    def _array(self, node: Array) -> list:
        return [self.visit(item) for item in node.items]

    def _predicate(self, node: Predicate) -> Any:
        return self.visit(node.node)

    def _call(self, node: Call) -> Any:
        if node.args and isinstance(node.args[-1], Predicate) and len(node.args) == 2:
            items = self.visit(node.args[0])
            if type(items) is not list:
                raise FormulaError(f"builtin {node.name} takes an array, got {_kind(items)}")
            mapped = [self._apply(node.args[1], item, i) for i, item in enumerate(items)]
            return PREDICATED[node.name](items, mapped)
        args = [self.visit(arg) for arg in node.args]
        if node.name in ("count", "sum"):  # without a predicate
            if len(args) != 1 or type(args[0]) is not list:
                raise FormulaError(f"builtin {node.name} takes an array")
            return PREDICATED[node.name](args[0], args[0])
        return BUILTINS[node.name](node.name, args)

    def _apply(self, predicate: Node, item: Any, index: int) -> Any:
        self.element.append((item, index))
        try:
            return self.visit(predicate)
        finally:
            self.element.pop()


def binary(op: str, a: Any, b: Any) -> Any:
    """One of `== != < > <= >= + - * / % ** ^` on two values."""
    if op in ("==", "!="):
        return (op == "==") == equal(a, b)
    if not (is_number(a) and is_number(b)):
        raise FormulaError(f"invalid operation: {_kind(a)} {op} {_kind(b)}")
    if op in ("<", ">", "<=", ">="):
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op in ("+", "-", "*"):
        if type(a) is int and type(b) is int:
            return wrap_int64({"+": a + b, "-": a - b, "*": a * b}[op])
        a, b = float(a), float(b)
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op == "/":
        return divide(float(a), float(b))
    if op == "%":
        return modulo(a, b)
    return power(float(a), float(b))


def equal(a: Any, b: Any) -> bool:
    """runtime.Equal: numbers by value across int and float; otherwise same kind and value."""
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b):
        return False
    return bool(a == b)


def divide(a: float, b: float) -> float:
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def modulo(a: Any, b: Any) -> int:
    if type(a) is not int or type(b) is not int:
        raise FormulaError(f"invalid operation: {_kind(a)} % {_kind(b)}")
    if b == 0:
        raise FormulaError("integer divide by zero")
    remainder = abs(a) % abs(b)  # Go truncates toward zero: the sign follows the dividend
    return -remainder if a < 0 else remainder


def power(a: float, b: float) -> float:
    """math.Pow: overflow is +-Inf, a negative base to a fractional power NaN."""
    try:
        return math.pow(a, b)
    except OverflowError:
        odd = b == int(b) and int(b) % 2 == 1
        return -math.inf if a < 0 and odd else math.inf
    except (ValueError, ZeroDivisionError):
        return math.inf if a == 0.0 and b < 0 else math.nan


def go_round(x: float) -> float:
    """math.Round: half away from zero (Python's round is half to even)."""
    if not math.isfinite(x) or abs(x) >= 2.0**52:
        return x
    whole = float(math.trunc(x))
    if abs(x - whole) >= 0.5:
        whole += math.copysign(1.0, x)
    return whole


def _one_number(fn: Callable[[Any], Any]) -> Callable[[str, list], Any]:
    def call(name: str, args: list) -> Any:
        if len(args) != 1 or not is_number(args[0]):
            raise FormulaError(f"invalid argument for {name} "
                               f"(type {_kind(args[0]) if args else 'none'})")
        return fn(args[0])
    return call


def _float_op(fn: Callable[[float], float]) -> Callable[[Any], float]:
    def call(x: Any) -> float:
        x = float(x)
        return x if not math.isfinite(x) else float(fn(x))
    return call


def _to_int(x: Any) -> int:
    if type(x) is float and not math.isfinite(x):
        raise FormulaError(f"cannot convert {x} to int")
    return wrap_int64(int(x))  # Go's int(float64) truncates toward zero


def _flatten(name: str, args: list) -> list:
    out: list = []
    for arg in args:
        if type(arg) is list:
            out.extend(_flatten(name, arg))
        elif is_number(arg):
            out.append(arg)
        else:
            raise FormulaError(f"invalid argument for {name} (type {_kind(arg)})")
    return out


def _extreme(name: str, args: list) -> Any:
    """`minMax`: the first element no other beats (Less for max, More for min)."""
    if len(args) == 1 and type(args[0]) is not list and not is_number(args[0]):
        return args[0]
    best = None
    for value in _flatten(name, args):
        if best is None or (best < value if name == "max" else best > value):
            best = value
    return best


def _mean(name: str, args: list) -> float:
    values = _flatten(name, args)
    return float(sum(float(v) for v in values)) / len(values) if values else 0.0


def _median(name: str, args: list) -> float:
    values = sorted(float(v) for v in _flatten(name, args))
    n = len(values)
    if n == 0:
        return 0.0
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def _len(name: str, args: list) -> int:
    if len(args) != 1 or type(args[0]) is not list:
        raise FormulaError("invalid argument for len")
    return len(args[0])


def _bools(name: str, mapped: list) -> list[bool]:
    for value in mapped:
        if type(value) is not bool:
            raise FormulaError(f"predicate of {name} returned {_kind(value)}, not bool")
    return mapped


def _sum(items: list, mapped: list) -> Any:
    total: Any = 0
    for value in mapped:
        total = binary("+", total, value)
    return total


BUILTINS: dict[str, Callable[[str, list], Any]] = {
    "abs": _one_number(lambda x: wrap_int64(abs(x)) if type(x) is int else abs(x)),
    "ceil": _one_number(_float_op(math.ceil)), "floor": _one_number(_float_op(math.floor)),
    "round": _one_number(go_round), "int": _one_number(_to_int), "float": _one_number(float),
    "max": _extreme, "min": _extreme, "mean": _mean, "median": _median, "len": _len,
}
# Builtins over (array, its elements mapped by the predicate).
PREDICATED: dict[str, Callable[[list, list], Any]] = {
    "count": lambda items, mapped: sum(_bools("count", mapped)),
    "sum": _sum,
    "all": lambda items, mapped: all(_bools("all", mapped)),
    "any": lambda items, mapped: any(_bools("any", mapped)),
    "none": lambda items, mapped: not any(_bools("none", mapped)),
    "one": lambda items, mapped: sum(_bools("one", mapped)) == 1,
    "filter": lambda items, mapped: [i for i, keep in zip(items, _bools("filter", mapped),
                                                          strict=True) if keep],
    "map": lambda items, mapped: mapped,
}
