"""Generate docs/scenario.md from the pydantic models (python -m gpuscale.scenario.docs OUT).

A test fails when the committed page differs from what this prints, so the reference can't
drift from the schema.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpuscale.scenario.models import Scenario

HEADER = """# Scenario reference

Generated from `src/gpuscale/scenario/models.py` by `python -m gpuscale.scenario.docs
docs/scenario.md`; do not edit by hand. Unknown keys are rejected. Units are in the names
(`_s` seconds, `_tokens`, `_gib`, `_frac` 0..1). The embedded demo scenario
(`gpuscale demo --print-scenario`) is a complete example.
"""


def _models_in(annotation) -> list[type[BaseModel]]:
    out = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    for arg in typing.get_args(annotation):
        out.extend(_models_in(arg))
    return out


def _type_name(annotation) -> str:
    models = _models_in(annotation)
    if len(models) > 1:
        return "one of " + ", ".join(f"[{m.__name__}](#{m.__name__.lower()})" for m in models)
    if len(models) == 1 and typing.get_origin(annotation) in (list, tuple):
        return f"list of [{models[0].__name__}](#{models[0].__name__.lower()})"
    if len(models) == 1:
        return f"[{models[0].__name__}](#{models[0].__name__.lower()})"
    text = str(annotation).replace("typing.", "")
    for prefix in ("gpuscale.scenario.models.", "gpuscale.catalog.specs.", "gpuscale.workloads.",
                   "gpuscale.autoscaling."):
        text = text.replace(prefix, "")
    if isinstance(annotation, type):
        text = annotation.__name__
    return text.replace("|", "or")


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        return "see below"
    value = info.default
    if hasattr(value, "value"):
        value = value.value
    return f"`{value}`"


def render() -> str:
    lines = [HEADER]
    seen: set[type] = set()
    queue: list[type[BaseModel]] = [Scenario]
    while queue:
        model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        doc = (model.__doc__ or "").strip().splitlines()
        lines.append(f"\n## {model.__name__}\n")
        if doc and not doc[0].startswith(model.__name__ + "("):
            lines.append(doc[0] + "\n")
        lines.append("| field | type | default | meaning |\n|---|---|---|---|")
        for name, info in model.model_fields.items():
            description = (info.description or "").replace("\n", " ").replace("|", "\\|")
            lines.append(f"| `{name}` | {_type_name(info.annotation)} | {_default(info)} | "
                         f"{description} |")
            queue.extend(m for m in _models_in(info.annotation) if m not in seen)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = render()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text)
    else:
        sys.stdout.write(text)
