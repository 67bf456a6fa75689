"""Read Kubernetes manifests safely, keeping the line of every field.

Files, directories (``*.yaml``, ``*.yml``, ``*.json``, sorted) and ``-`` for stdin. JSON is read
with the same YAML composer (JSON is YAML), so JSON findings also carry lines. Multi-document
streams, Helm-rendered output and ``kubectl get -o yaml|json`` ``List`` output are flattened
into one :class:`Manifest` per object.

Two guards keep hostile input from exhausting memory: a size limit checked *before* a file is
read (``max_bytes``), and a limit on the number of nodes a document expands to once its YAML
aliases are followed (``max_nodes``), which refuses "billion laughs" after composing only the
few hundred nodes actually written down.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpuscale import inputs as _inputs
from gpuscale.audit.sources import (
    HELM_HINT,
    KUSTOMIZATION_FILES,
    is_helm_template,
    kustomization_of,
    kustomize_resources,
)
from gpuscale.errors import UserInputError
from gpuscale.scenario.kinds import input_kind

DEFAULT_MAX_BYTES = _inputs.MAX_BYTES  # 16 MiB per input: far above any real manifest bundle
DEFAULT_MAX_NODES = _inputs.MAX_ALIAS_NODES  # nodes added through YAML aliases per stream
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


PathKey = tuple  # of str (mapping key) and int (sequence index)


def format_path(path: PathKey) -> str:
    """("spec", "metrics", 0, "type") -> "spec.metrics[0].type"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object with the source position of each of its fields.

    `marks` maps a path inside the object to its (line, column), both 1-based; `base_path` is
    where the object sits in its document (``("items", 3)`` inside a List, else empty).
    """

    kind: str
    api_version: str
    name: str
    namespace: str
    data: dict
    source: str
    line: int
    base_path: PathKey = ()
    marks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def ref(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"

    @property
    def annotations(self) -> dict:
        value = self.get("metadata", "annotations")
        return value if isinstance(value, dict) else {}  # any kind, misshapen or not

    @property
    def labels(self) -> dict:
        value = self.get("metadata", "labels")
        return value if isinstance(value, dict) else {}

    def position(self, path: PathKey) -> tuple[int, int]:
        """Line and column of `path`, or of its nearest existing parent (a missing field)."""
        path = tuple(path)
        while path and path not in self.marks:
            path = path[:-1]
        return self.marks.get(path, (self.line, 1))

    def get(self, *path, default=None):
        node = self.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    return default
            elif not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


def _is_list(doc: dict) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list)


def _objects_of(doc: dict, marks: dict, source: str, line: int,
                base: PathKey = ()) -> Iterator[Manifest]:
    """The objects of one document; a `List` (also one nested in a List, as `kubectl get`
    output concatenated by hand gives) yields its items."""
    if not _is_list(doc):
        yield from _one_object(doc, marks, source, line, base)
        return
    # Group the marks by item once: a per-item scan of every mark made a 5,000-item List
    # quadratic.
    by_item: dict[int, dict] = {}
    for path, mark in marks.items():
        if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
            by_item.setdefault(path[1], {})[path[2:]] = mark
    for index, item in enumerate(doc["items"]):
        if isinstance(item, dict):
            sub = by_item.get(index, {})
            item_line = marks.get(("items", index), (line, 1))[0]
            yield from _objects_of(item, sub, source, item_line, base + ("items", index))


# Kinds the rules read whose name other projects reuse under another API group. An object of
# such a kind from another group (a `ScaledObject` of example.com) is not what the rules
# model: it keeps its group in its kind ("ScaledObject.example.com", as kubectl names a
# resource by kind.group), so no rule reads it as KEDA's.
KIND_GROUPS = {"ScaledObject": "keda.sh", "NodePool": "karpenter.sh", "NodeClaim": "karpenter.sh",
               "EC2NodeClass": "karpenter.k8s.aws", "HorizontalPodAutoscaler": "autoscaling",
               # Knative's internal PodAutoscaler shares AIBrix's kind name.
               "PodAutoscaler": "autoscaling.aibrix.ai",
               "LLMInferenceService": "serving.kserve.io"}


def _audited_kind(kind: str, api_version: str) -> str:
    group = api_version.rpartition("/")[0]
    expected = KIND_GROUPS.get(kind)
    return kind if expected is None or group == expected else f"{kind}.{group or 'core'}"


def _one_object(
    doc: dict, marks: dict, source: str, line: int, base: PathKey
) -> Iterator[Manifest]:
    if "kind" not in doc and "apiVersion" not in doc:
        return  # a values file or other non-object document: nothing to audit
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        missing = "kind" if not isinstance(kind, str) else "apiVersion"
        raise UserInputError(f"line {line}: object has no string `{missing}`", source=source)
    raw_meta = doc.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
    yield Manifest(
        kind=_audited_kind(kind, api_version),
        api_version=api_version,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "") or ""),
        data=doc,
        source=source,
        line=line,
        base_path=base,
        marks=marks,
    )


def parse_text(text: str, source: str, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Manifest]:
    """All objects in one YAML/JSON text; a syntax error names the file, line and column.

    Read through the hardened loader (gpuscale/inputs.py): depth, document count, alias
    expansion (`max_nodes`), duplicate keys, tags and 64-bit integers are checked there."""
    out: list[Manifest] = []
    for doc in _inputs.parse_yaml_documents(text, source, marks=True, max_alias_nodes=max_nodes,
                                            json_numbers=True):
        data = doc.data
        if data is None:
            continue
        if not isinstance(data, dict):
            raise UserInputError(
                f"line {doc.line}: expected a Kubernetes object (a mapping), "
                f"found a {type(data).__name__}", source=source)
        out.extend(_objects_of(data, doc.marks, source, doc.line))
    return out


def expand_inputs(inputs: Iterable[str],
                  skipped: list[tuple[str, str]] | None = None) -> list[str]:
    """Files as given, directories walked (sorted, manifest suffixes only), `-` kept.
    Files a directory holds but cannot be audited (Helm templates) go to `skipped` as
    (file, why), for the caller to report."""
    out: list[str] = []
    for item in inputs:
        if item == "-":
            out.append(item)
            continue
        path = Path(item)
        if path.is_dir():
            out.extend(_directory_files(path, skipped))
        elif path.is_file():
            if is_helm_template(path):
                raise UserInputError(HELM_HINT, source=item)
            out.append(item)
        else:
            raise UserInputError("no such file or directory", source=item)
    return out


def _directory_files(path: Path, skipped: list[tuple[str, str]] | None) -> list[str]:
    """A directory's manifests: through its kustomization when it has one (audit/sources.py),
    else every manifest file below it; Helm templates and nested kustomizations skipped."""
    kustomization = kustomization_of(path)
    if kustomization is not None:
        candidates = kustomize_resources(kustomization)
    else:
        candidates = [p for p in sorted(path.rglob("*"))
                      if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
                      and p.name not in KUSTOMIZATION_FILES]
    out = []
    for p in candidates:
        if is_helm_template(p):
            if skipped is not None:
                skipped.append((str(p), HELM_HINT))
        else:
            out.append(str(p))
    return out


# What to say when a file given to audit/diagnose is one of gpuscale's own inputs.
_WRONG_COMMAND = {
    "plan": "this is a gpuscale plan input: run `gpuscale plan` on it",
    "scenario": "this is a gpuscale scenario: run `gpuscale simulate` or `gpuscale compare` on it",
    "schedule": "this is a scheduling-only scenario: run `gpuscale schedule` on it",
}


def why_no_objects(inputs: Iterable[str]) -> tuple[str, str, str] | None:
    """(source, reason, hint) when the inputs hold no Kubernetes document at all, else None.

    `hint` names the command for a gpuscale input file given by mistake ("" otherwise).

    An empty `List` from `kubectl get -o yaml` is a Kubernetes document with no objects, a
    legitimate "nothing to audit"; a scenario, a values file or an empty file is not.
    """
    items = list(inputs)
    files = expand_inputs(items)
    if "-" in files:
        return None  # stdin is read once; an empty stream is the caller's choice
    if not files:
        return items[0], f"no {', '.join(MANIFEST_SUFFIXES)} files to read", ""
    hint = ""
    for path in files:
        try:
            docs = [d.data for d in _inputs.parse_yaml_documents(_inputs.read_text(path), path)]
        except UserInputError:
            return None  # load_inputs reports those with their line
        for doc in docs:
            if isinstance(doc, dict) and ("kind" in doc or "apiVersion" in doc):
                return None
            kind = input_kind(doc)
            if not hint and kind is not None:
                hint = _WRONG_COMMAND.get(kind, "")
    source = files[0] if len(files) == 1 else items[0]
    return source, "no Kubernetes objects (a document needs `apiVersion` and `kind`)", hint


def load_inputs(inputs: Iterable[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                max_nodes: int = DEFAULT_MAX_NODES, stdin=None,
                skipped: list[tuple[str, str]] | None = None,
                errors: list[UserInputError] | None = None) -> list[Manifest]:
    """Every object in every input, in input order (files left out go to `skipped`).

    With `errors` given, a file that cannot be read (a duplicate key, a syntax error, over the
    size limit) is recorded there and the rest are read (`audit DIR` over a repository where one
    file of 116 is broken); without it the first such file is the error."""
    objects: list[Manifest] = []
    for item in expand_inputs(inputs, skipped):
        source = "<stdin>" if item == "-" else item
        try:
            text = _inputs.read_text(item, max_bytes=max_bytes, what="manifest file",
                                     stdin=stdin)
            objects.extend(parse_text(text, source, max_nodes=max_nodes))
        except UserInputError as exc:
            if errors is None:
                raise
            errors.append(exc if exc.source else UserInputError(str(exc), source=source))
    return objects
