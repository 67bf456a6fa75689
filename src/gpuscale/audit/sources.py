"""What a directory given to audit holds besides plain manifests: Helm templates and kustomize.

- A file with Go template actions (`{{ ... }}`) is a Helm template: YAML cannot read it as the
  chart renders it, so a directory walk skips it with a note (the rest is audited), and a file
  given by name is refused; either way the note says to render it:
  `helm template RELEASE CHART | gpuscale audit -`.
- A directory with a `kustomization.yaml` is read the way `kubectl kustomize` would start: the
  files and directories listed under `resources:`. A kustomization that transforms them
  (patches, generators, a namespace or name prefix, components, remote bases) is refused with
  the hint to build it first, since auditing the untransformed files would check objects that
  never reach the cluster.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from gpuscale.errors import UserInputError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
HELM_HINT = "this is a Helm template: run `helm template RELEASE CHART | gpuscale audit -`"
_TEMPLATE_ACTION = re.compile(r"\{\{-?\s*[^}]*\}\}")
_HELM_WORDS = re.compile(
    r"\{\{-|-\}\}|\{\{\s*(?:\.Values|\.Release|\.Chart|\.Capabilities|include\s|"
    r"template\s|toYaml|if\s|range\s|with\s|end\s*\}\}|define\s)|\.Values\."
)
# Keys of a kustomization that only list or describe; any other key changes the objects.
_PLAIN_KEYS = {"apiVersion", "kind", "resources", "metadata"}


def is_helm_template(path: Path) -> bool:
    """Helm's own words in template actions (`.Values`, `.Release`, `include`, `{{-` ...), or
    template actions in a file YAML cannot read. Prometheus alert annotations such as
    `"{{ $labels.pod }}"` are quoted strings in valid YAML, so a PrometheusRule is no template."""
    try:  # the head only: size limits are the loader's, and a huge file must cost nothing here
        with open(path, "rb") as handle:
            head = handle.read(200_000).decode("utf-8", errors="replace")
    except OSError:
        return False
    if not _TEMPLATE_ACTION.search(head):
        return False
    if _HELM_WORDS.search(head):
        return True
    try:
        list(yaml.safe_load_all(head))
    except yaml.YAMLError:
        return True
    return False


def kustomization_of(directory: Path) -> Path | None:
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return directory / name
    return None


def kustomize_resources(kustomization: Path, depth: int = 0) -> list[Path]:
    """The manifest files a plain kustomization lists, in its order (nested ones followed)."""
    hint = f"run `kubectl kustomize {kustomization.parent} | gpuscale audit -`"
    try:
        data = yaml.safe_load(kustomization.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UserInputError(f"cannot read the kustomization ({str(exc).splitlines()[0]}); "
                             f"{hint}", source=str(kustomization)) from None
    if not isinstance(data, dict):
        raise UserInputError(f"not a kustomization (expected a mapping); {hint}",
                             source=str(kustomization))
    extra = sorted(set(data) - _PLAIN_KEYS)
    if extra:
        raise UserInputError(f"this kustomization transforms its resources ({', '.join(extra)}); "
                             f"{hint}", source=str(kustomization), field=extra[0])
    resources = data.get("resources") or []
    if not isinstance(resources, list):
        raise UserInputError(f"`resources` must be a list of paths; {hint}",
                             source=str(kustomization), field="resources")
    out: list[Path] = []
    for entry in resources:
        if not isinstance(entry, str) or "://" in entry or entry.startswith("github.com/"):
            raise UserInputError(f"resource {entry!r} is remote or not a path; {hint}",
                                 source=str(kustomization), field="resources")
        path = (kustomization.parent / entry)
        if path.is_dir():
            nested = kustomization_of(path)
            if nested is None or depth > 8:
                raise UserInputError(f"resource {entry!r} is a directory without a "
                                     f"kustomization; {hint}", source=str(kustomization))
            out.extend(kustomize_resources(nested, depth + 1))
        elif path.is_file():
            out.append(path)
        else:
            raise UserInputError(f"resource {entry!r} does not exist",
                                 source=str(kustomization), field="resources")
    return out
