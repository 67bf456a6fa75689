"""Load a scenario file with errors a person can act on: file, field, what was expected."""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpuscale import inputs
from gpuscale.errors import UserInputError
from gpuscale.scenario.kinds import input_kind
from gpuscale.scenario.models import Scenario
from gpuscale.workloads import limits


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _user_path(loc: tuple, data: Any) -> tuple:
    """Drop the union tags pydantic inserts into a location ("keda", "FixedSeconds"), keeping
    only the steps that exist in the user's own data (unknown keys are kept: they are the error).
    """
    out = []
    node = data
    for index, part in enumerate(loc):
        if isinstance(node, dict):
            if part in node:
                out.append(part)
                node = node[part]
            elif index == len(loc) - 1:
                out.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif index == len(loc) - 1 and isinstance(node, (dict, list)):
            # A missing key or item is the error itself; past a scalar the user wrote, the
            # remaining steps are union tags ("tp.int"), not places in the file.
            out.append(part)
    return tuple(out)


def _first_error(exc: ValidationError, data: Any) -> tuple[str, str]:
    """The most specific error: pydantic reports one per union member; keep the deepest."""
    errors = exc.errors(include_url=False)
    error = max(errors, key=lambda e: len(e["loc"]))
    loc = _user_path(tuple(error["loc"]), data)
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key (check the spelling; see docs/scenario.md)"
    elif error["type"] == "union_tag_invalid":
        # pydantic's "Input tag 'kedda' found using 'kind' does not match any of the expected
        # tags: ..." names neither the field the user wrote nor the nearest valid value.
        ctx = error.get("ctx", {})
        tag, field = ctx.get("tag"), str(ctx.get("discriminator", "kind")).strip("'")
        expected = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        close = difflib.get_close_matches(str(tag), expected, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        loc = loc + (field,)
        message = f"unknown {field} {tag!r}{hint} (expected one of: {', '.join(expected)})"
    elif error["type"].startswith("datetime") or error["type"] == "timezone_aware":
        # start_time: pydantic names what failed, not the form it wants
        message = (f"expected an RFC 3339 date and time with its zone offset, e.g. "
                   f"2026-01-01T00:00:00Z ({message[0].lower() + message[1:]}), "
                   f"got {str(error.get('input'))[:60]!r}")
    elif error["type"] == "value_error":
        # Our own validators' messages already say what was wrong; pydantic's prefix and a
        # repeated input only lengthen the line.
        message = message.removeprefix("Value error, ")
    elif "input" in error and error["type"] not in ("missing",):
        shown = repr(error["input"])
        if len(shown) <= 60:
            message = f"{message}, got {shown}"
    return _field_path(loc), message


M = TypeVar("M", bound=BaseModel)

_INT64 = (-(2**63), 2**63 - 1)


def _means_never(model: BaseModel, name: str) -> bool:
    """A field whose default is +inf ("inf = never", e.g. empty_node_ttl_s) accepts +inf."""
    field = type(model).model_fields.get(name)
    default = getattr(field, "default", None)
    return isinstance(default, float) and default == math.inf


def _unbounded_number(value: Any, loc: tuple = ()) -> tuple[tuple, Any] | None:
    """The first number the user set that is not finite (NaN, inf, a "1e400" string pydantic
    turned into inf) or an integer past 64 bits, with its place; defaults are not checked.

    One walk over every validated input instead of a `finite` flag on each of the ~40 models:
    no simulated quantity is meaningfully infinite, and a NaN rate or an infinite duration
    otherwise runs into the time limit or yields zero requests and "SLO met". A field whose
    default is +inf means "never" and accepts +inf."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (loc, value)
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else (loc, value)
    if isinstance(value, BaseModel):
        for name in value.model_fields_set:
            item = getattr(value, name, None)
            if item == math.inf and _means_never(value, name):
                continue
            found = _unbounded_number(item, loc + (name,))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _unbounded_number(item, loc + (index,))
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _unbounded_number(item, loc + (key,))
            if found:
                return found
    return None


def check_finite(model: BaseModel, *, source: str) -> None:
    """Refuse a non-finite number or an integer past 64 bits anywhere in `model`."""
    found = _unbounded_number(model)
    if found:
        loc, value = found
        shown = (
            repr(value) if isinstance(value, float) else f"an integer of {len(str(value))} digits"
        )
        raise UserInputError(f"expected a finite number (see docs/input-limits.md), got {shown}",
                             source=source, field=_field_path(loc))


def validate_mapping(model: type[M], data: Any, *, source: str) -> M:
    """Validate user data into `model`, turning pydantic's report into one UserInputError line
    (file, field path as the user wrote it, what was expected). Shared by every input file."""
    if not isinstance(data, dict):
        raise UserInputError("expected a mapping at the top level", source=source)
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        field, message = _first_error(exc, data)
        raise UserInputError(message, source=source, field=field) from None
    except UserInputError as exc:  # catalog lookups inside validators
        raise UserInputError(str(exc), source=source) from None
    check_finite(validated, source=source)
    return validated


def check_scenario_size(scenario: Scenario, *, source: str) -> None:
    """Refuse, at load, a scenario no run can finish: more requests than a run holds or a
    horizon past the limit (workloads/limits.py, docs/input-limits.md), with the figure."""
    horizon_s = scenario.duration_s + scenario.drain_s
    if horizon_s > limits.MAX_HORIZON_S:
        raise UserInputError(
            f"the run spans {horizon_s:,.0f} s ({horizon_s / 86_400:,.1f} days) with drain_s, more "
            f"than the {limits.MAX_HORIZON_S / 86_400:.0f}-day horizon of one run "
            "(docs/input-limits.md); simulate a representative window and scale the result",
            source=source, field="duration_s")
    try:
        limits.check_planned(scenario.workload)
    except UserInputError as exc:
        raise UserInputError(str(exc), source=source, field="workload") from None


def scenario_from_dict(data: Any, *, source: str = "<scenario>") -> Scenario:
    scenario = validate_mapping(Scenario, data, source=source)
    check_scenario_size(scenario, source=source)
    return scenario


def load_yaml(path: Path) -> Any:
    """One YAML document, read through the hardened loader (gpuscale/inputs.py: size, depth,
    aliases, duplicate keys, tags, 64-bit integers; docs/input-limits.md)."""
    return inputs.load_yaml(path, what="YAML file")


def load_scenario(path: Path) -> Scenario:
    data = load_yaml(path)
    kind = input_kind(data)
    if kind == "schedule":
        raise UserInputError("no `model`: this is a scheduling-only scenario; run "
                             "`gpuscale schedule` on it", source=str(path), field="model")
    if kind == "plan":
        # A plan input (plan/inputs.py) would otherwise fail on its first field that differs.
        raise UserInputError("a plan input (it has `workloads`); run `gpuscale plan` on it",
                             source=str(path), field="workloads")
    return scenario_from_dict(data, source=str(path))
