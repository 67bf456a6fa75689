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

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gpuscale.audit.sources import (
    HELM_HINT,
    KUSTOMIZATION_FILES,
    is_helm_template,
    kustomization_of,
    kustomize_resources,
)
from gpuscale.errors import UserInputError
from gpuscale.scenario.load import input_kind

DEFAULT_MAX_BYTES = 16 * 2**20  # 16 MiB per input: far above any real manifest bundle
DEFAULT_MAX_NODES = 500_000  # expanded YAML nodes per document; a 16 MiB manifest has fewer
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"

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


def _expanded_size(root: yaml.Node, limit: int, where: str) -> None:
    """Count nodes as if every alias were copied; refuse past `limit` (alias bombs)."""
    memo: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in memo:  # an alias: its subtree counts again, but is not walked again
            return memo[key]
        memo[key] = 0  # recursive alias guard (a node reachable from itself counts once)
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in node.value)
        else:
            total = 1
        if total > limit:
            line = node.start_mark.line + 1
            raise UserInputError(
                f"line {line}: document expands to more than {limit} nodes through YAML "
                "aliases (alias bomb?); refusing it", source=where)
        memo[key] = total
        return total

    size(root)


class _Builder:
    """Turn a composed node tree into plain data plus a path -> (line, column) table."""

    def __init__(self) -> None:
        self._constructor = yaml.SafeLoader("")  # only its scalar constructors are used
        self.marks: dict[PathKey, tuple[int, int]] = {}

    def build(self, node: yaml.Node, path: PathKey = (), depth: int = 0):
        if depth > 200:
            raise ValueError("nesting deeper than 200 levels")
        if isinstance(node, yaml.ScalarNode):
            return self._constructor.construct_object(node)
        if isinstance(node, yaml.SequenceNode):
            out = []
            for index, item in enumerate(node.value):
                self.marks[path + (index,)] = (item.start_mark.line + 1, item.start_mark.column + 1)
                out.append(self.build(item, path + (index,), depth + 1))
            return out
        out: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:  # `<<: *defaults` merges, explicit keys win
                merged = self.build(value_node, path, depth + 1)
                for item in merged if isinstance(merged, list) else [merged]:
                    for k, v in (item or {}).items():
                        out.setdefault(k, v)
                continue
            key = self.build(key_node, path, depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ValueError(f"unsupported mapping key at line {key_node.start_mark.line + 1}")
            self.marks[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = self.build(value_node, path + (key,), depth + 1)
        return out


def _objects_of(doc: dict, marks: dict, source: str, line: int) -> Iterator[Manifest]:
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for index, item in enumerate(doc["items"]):
            if isinstance(item, dict):
                prefix = ("items", index)
                sub = {p[2:]: m for p, m in marks.items() if p[:2] == prefix}
                yield from _one_object(item, sub, source, marks.get(prefix, (line, 1))[0], prefix)
        return
    yield from _one_object(doc, marks, source, line, ())


def _one_object(doc: dict, marks: dict, source: str, line: int, base: PathKey) -> Iterator[Manifest]:
    if "kind" not in doc and "apiVersion" not in doc:
        return  # a values file or other non-object document: nothing to audit
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        missing = "kind" if not isinstance(kind, str) else "apiVersion"
        raise UserInputError(f"line {line}: object has no string `{missing}`", source=source)
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    yield Manifest(kind=kind, api_version=api_version, name=str(meta.get("name", "")),
                   namespace=str(meta.get("namespace", "") or ""), data=doc, source=source,
                   line=line, base_path=base, marks=marks)


def parse_text(text: str, source: str, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Manifest]:
    """All objects in one YAML/JSON text; a syntax error names the file, line and column."""
    out: list[Manifest] = []
    try:
        for root in yaml.compose_all(text, Loader=_Loader):
            if root is None:
                continue
            _expanded_size(root, max_nodes, source)
            builder = _Builder()
            data = builder.build(root)
            if data is None:
                continue
            if not isinstance(data, dict):
                raise UserInputError(
                    f"line {root.start_mark.line + 1}: expected a Kubernetes object (a mapping), "
                    f"found a {type(data).__name__}", source=source)
            out.extend(_objects_of(data, builder.marks, source, root.start_mark.line + 1))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        raise UserInputError(f"{where}{problem}", source=source) from None
    except yaml.YAMLError as exc:
        raise UserInputError(f"invalid YAML: {str(exc).splitlines()[0]}", source=source) from None
    except (ValueError, RecursionError) as exc:
        raise UserInputError(f"cannot read: {exc}", source=source) from None
    return out


def _read_limited(handle, limit: int, source: str) -> str:
    data = handle.read(limit + 1)  # never more than the limit plus one byte
    if len(data) > limit:
        raise UserInputError(f"input is larger than the {limit}-byte limit (--max-bytes)", source=source)
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserInputError(f"byte {exc.start}: not UTF-8 text", source=source) from None
    return data


def expand_inputs(inputs: Iterable[str]) -> list[str]:
    """Files as given, directories walked (sorted, manifest suffixes only), `-` kept."""
    SKIPPED.clear()
    out: list[str] = []
    for item in inputs:
        if item == "-":
            out.append(item)
            continue
        path = Path(item)
        if path.is_dir():
            out.extend(_directory_files(path))
        elif path.is_file():
            if is_helm_template(path):
                raise UserInputError(HELM_HINT, source=item)
            out.append(item)
        else:
            raise UserInputError("no such file or directory", source=item)
    return out


SKIPPED: list[tuple[str, str]] = []  # (file, why) of the last expand_inputs; the CLI notes them


def _directory_files(path: Path) -> list[str]:
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
            SKIPPED.append((str(p), HELM_HINT))
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
            docs = list(yaml.load_all(Path(path).read_text(encoding="utf-8"), Loader=_Loader))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return None  # load_inputs reports those with their line
        for doc in docs:
            if isinstance(doc, dict) and ("kind" in doc or "apiVersion" in doc):
                return None
            if not hint:
                hint = _WRONG_COMMAND.get(input_kind(doc), "")
    source = files[0] if len(files) == 1 else items[0]
    return source, "no Kubernetes objects (a document needs `apiVersion` and `kind`)", hint


def load_inputs(inputs: Iterable[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                max_nodes: int = DEFAULT_MAX_NODES, stdin=None) -> list[Manifest]:
    """Every object in every input, in input order."""
    objects: list[Manifest] = []
    for item in expand_inputs(inputs):
        if item == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            text = _read_limited(stream, max_bytes, "<stdin>")
            objects.extend(parse_text(text, "<stdin>", max_nodes=max_nodes))
            continue
        size = Path(item).stat().st_size
        if size > max_bytes:  # refuse before reading a byte
            raise UserInputError(f"file is {size} bytes, over the {max_bytes}-byte limit "
                                 "(--max-bytes)", source=item)
        with open(item, "rb") as handle:
            text = _read_limited(handle, max_bytes, item)
        objects.extend(parse_text(text, item, max_nodes=max_nodes))
    return objects
