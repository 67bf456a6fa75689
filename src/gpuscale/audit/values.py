"""Reading a manifest value a rule needs as a number, quantity or duration.

A field can have the right shape (check_shape passed) and still hold a value no rule can read:
a budget of "many", a quantity of "10%", a cooldown of "soon". That is bad input, said in one
line: these readers raise `BadValue` naming the field, and the audit engine adds the file, line,
object and rule. Any other exception out of a rule is a bug in the rule and surfaces as one.
"""

from __future__ import annotations

from typing import Any

from gpuscale.errors import UserInputError
from gpuscale.units import parse_duration_s, parse_quantity


class BadValue(UserInputError):
    """A value of the right shape that cannot be read as what the field means."""


def number(value: Any, field: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BadValue(f"{field}: expected a number, got {value!r}") from None


def integer(value: Any, field: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadValue(f"{field}: expected an integer, got {value!r}") from None


def quantity(value: Any, field: str) -> float:
    """A Kubernetes quantity ("8", "500m", "80Gi") as a number."""
    try:
        return parse_quantity(value)
    except (TypeError, ValueError) as exc:
        raise BadValue(f"{field}: {exc}") from None


def duration_s(value: Any, field: str) -> float:
    try:
        return parse_duration_s(value)
    except (TypeError, ValueError) as exc:
        raise BadValue(f"{field}: {exc}") from None
