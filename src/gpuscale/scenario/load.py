"""Load a scenario file with errors a person can act on: file, field, what was expected."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpuscale import inputs
from gpuscale.errors import UserInputError
from gpuscale.scenario.models import Scenario


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


def validate_mapping(model: type[M], data: Any, *, source: str) -> M:
    """Validate user data into `model`, turning pydantic's report into one UserInputError line
    (file, field path as the user wrote it, what was expected). Shared by every input file."""
    if not isinstance(data, dict):
        raise UserInputError("expected a mapping at the top level", source=source)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = _first_error(exc, data)
        raise UserInputError(message, source=source, field=field) from None
    except UserInputError as exc:  # catalog lookups inside validators
        raise UserInputError(str(exc), source=source) from None


def scenario_from_dict(data: Any, *, source: str = "<scenario>") -> Scenario:
    return validate_mapping(Scenario, data, source=source)


def load_yaml(path: Path) -> Any:
    """One YAML document, read through the hardened loader (gpuscale/inputs.py: size, depth,
    aliases, duplicate keys, tags, 64-bit integers; docs/input-limits.md)."""
    return inputs.load_yaml(path, what="YAML file")


# Keys only a scheduling-only scenario (scenario/schedule.py) has.
_SCHEDULE_ONLY_KEYS = frozenset({"jobs", "replicas", "schedulers", "initial_nodes"})


def input_kind(data: Any) -> str | None:
    """Which gpuscale input a parsed YAML document is, by its top-level keys: "plan" (a plan
    input), "schedule" (a scheduling-only scenario), "scenario" (a serving scenario) or None.
    Each command uses it to point a file given to the wrong command at the right one."""
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "workloads" in keys and "strategies" not in keys:
        return "plan"
    if "model" not in keys and _SCHEDULE_ONLY_KEYS & keys:
        return "schedule"
    if "workloads" not in keys and keys & {"strategies", "model"}:
        return "scenario"
    return None


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
