"""The one hardened reader for every file gpuscale reads (scenarios, plan inputs, manifests,
snapshots, sweep grids, calibration rows, result files, traces).

Bottom layer: no gpuscale imports but `errors`, no I/O beyond reading the input it is given.
Every limit is documented in docs/input-limits.md; each refusal is one `UserInputError` line
naming the file, the line and the figure.

- Bytes: a regular file's size is checked before a byte is read, and every read is capped
  (`/dev/zero`, a growing file); a named pipe with no writer would block `open`, so only `-`
  and process substitution (`/dev/fd/N`) may be pipes.
- YAML is parsed from libyaml's event stream by an iterative builder (no recursion, so no
  RecursionError at any depth), which enforces: nesting depth, document count, nodes added by
  aliases ("billion laughs"), duplicate keys (kubectl refuses them: sigs.k8s.io/yaml is strict
  since Kubernetes 1.30; before, the last one silently won), merge keys that merge mappings,
  integers within 64 bits (the Kubernetes API's int64) and only the plain YAML tags
  (`!!str !!int !!float !!bool !!null !!map !!seq !!merge !!timestamp`). A timestamp stays the
  text the user wrote, as Kubernetes reads it (a string), not a `datetime`.
- JSON: nesting depth checked without recursion; `NaN`/`Infinity` are refused (not JSON).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from gpuscale.errors import UserInputError

MAX_BYTES = 16 * 2**20  # per input: far above any real scenario, manifest bundle or result
MAX_DEPTH = 100  # nesting levels: manifests nest ~20, scenarios ~8
MAX_DOCUMENTS = 10_000  # YAML documents per stream (`---`); one object per document
MAX_ALIAS_NODES = 500_000  # nodes added by following aliases, per stream (billion laughs)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MAX_INT_CHARS = 40  # an int64 in any YAML notation (0b..., 1_000_000) fits in 40 characters

_Parser = getattr(yaml, "CParser", None)
_T = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = _T + "str", _T + "int", _T + "float", _T + "bool", _T + "null"
MAP, SEQ, MERGE, TIMESTAMP = _T + "map", _T + "seq", _T + "merge", _T + "timestamp"
ACCEPTED_TAGS = (STR, INT, FLOAT, BOOL, NULL, MAP, SEQ, MERGE, TIMESTAMP)
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = SafeConstructor.bool_values  # YAML 1.1, as go-yaml v2 behind sigs.k8s.io/yaml reads them
_TIMESTAMP = SafeConstructor.timestamp_regexp
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class _MergeKey:
    """The `<<` key: its value is merged, it is not a key of the mapping."""


_MERGE_KEY = _MergeKey()


def _short(text: str, limit: int = 40) -> str:
    """User text safe for one terminal line: control characters escaped, length capped."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return text if len(text) <= limit else text[:limit] + "..."


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_T):] if tag.startswith(_T) else tag


# -- bytes ---------------------------------------------------------------------------------


def _capped(handle: BinaryIO, limit: int, source: str) -> bytes:
    data = handle.read(limit + 1)  # never more than the limit plus one byte
    if len(data) > limit:
        raise UserInputError(f"input is larger than the {limit}-byte limit; see "
                             "docs/input-limits.md", source=source)
    return data


def read_bytes(path: str | Path, *, max_bytes: int = MAX_BYTES, what: str = "file",
               stdin: BinaryIO | None = None) -> bytes:
    """The bytes of `path` (`-` is stdin), refusing past `max_bytes` before reading them."""
    name = os.fspath(path)  # cli.options.StdinPath stands for `-`
    source = "<stdin>" if name == "-" else str(path)
    if name == "-":
        if stdin is None and (sys.stdin is None or sys.stdin.closed):
            raise UserInputError("standard input is closed; pipe the input in, or give a file",
                                 source=source)
        try:
            return _capped(stdin if stdin is not None else sys.stdin.buffer, max_bytes, source)
        except OSError as exc:  # a stdin that cannot be read (a directory, a bad descriptor)
            raise UserInputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UserInputError("file not found", source=source) from None
    except OSError as exc:
        raise UserInputError(f"cannot read: {exc.strerror}", source=source) from None
    if stat.S_ISDIR(info.st_mode):
        raise UserInputError(f"is a directory, expected a {what}", source=source)
    if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        # Process substitution (`<(cmd)`) is a pipe with a writer; a named FIFO may have none,
        # and opening it would block forever.
        if not re.fullmatch(r"/(dev|proc/self)/fd/\d+", str(path)):
            raise UserInputError(f"is a named pipe, expected a {what} (pipe it to `-` instead)",
                                 source=source)
    elif stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
        raise UserInputError(f"file is {info.st_size} bytes, over the {max_bytes}-byte limit; "
                             "see docs/input-limits.md", source=source)
    try:
        with open(path, "rb") as handle:
            return _capped(handle, max_bytes, source)
    except OSError as exc:
        raise UserInputError(f"cannot read: {exc.strerror}", source=source) from None


def decode_text(data: bytes, source: str, what: str = "text file") -> str:
    """UTF-8 (a leading byte-order mark dropped), or one line naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserInputError(f"byte {exc.start}: not UTF-8 text (expected a {what})",
                             source=source) from None


def read_text(path: str | Path, *, max_bytes: int = MAX_BYTES, what: str = "text file",
              stdin: BinaryIO | None = None) -> str:
    source = "<stdin>" if str(path) == "-" else str(path)
    return decode_text(read_bytes(path, max_bytes=max_bytes, what=what, stdin=stdin), source, what)


# -- YAML ----------------------------------------------------------------------------------


@dataclass
class Document:
    """One YAML document: its data, the (line, column) of each path in it (1-based; only when
    asked for), and the line it starts on."""

    data: Any
    line: int
    marks: dict = field(default_factory=dict, repr=False)


class _Frame:
    __slots__ = (
        "anchor",
        "height",
        "is_map",
        "key",
        "key_mark",
        "line",
        "merges",
        "path",
        "size",
        "value",
    )

    def __init__(self, is_map: bool, path: tuple, anchor: str | None, line: int) -> None:
        self.is_map = is_map
        self.value: Any = {} if is_map else []
        self.path = path
        self.anchor = anchor
        self.size = 1
        self.height = 1
        self.key: Any = None  # the key waiting for its value (mappings)
        self.key_mark: tuple[int, int] | None = None
        self.merges: list[dict] = []
        self.line = line


_NO_KEY = object()


class _Builder:
    """Plain data from libyaml events, iteratively, with every limit checked as it goes."""

    def __init__(self, source: str, *, marks: bool, max_depth: int, max_documents: int,
                 max_alias_nodes: int, json_numbers: bool = False) -> None:
        self.source = source
        self.json_numbers = json_numbers
        self.keep_marks = marks
        self.max_depth, self.max_documents = max_depth, max_documents
        self.max_alias_nodes = max_alias_nodes
        self.alias_nodes = 0
        self.documents: list[Document] = []
        self._resolver = Resolver()
        self._constructor = SafeConstructor()

    def fail(self, mark, problem: str):
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise UserInputError(f"{where}{problem}", source=self.source)

    # scalars
    def scalar(self, event) -> Any:
        value, tag = event.value, event.tag
        if tag is None:
            tag = self._resolver.resolve(yaml.ScalarNode, value, event.implicit)
        elif tag == "!":
            tag = STR
        if tag == STR:
            return value
        if tag == MERGE:
            return _MERGE_KEY
        if tag == TIMESTAMP:
            if not _TIMESTAMP.match(value):
                self.fail(event.start_mark, f"!!timestamp {_short(value)!r} is not a timestamp "
                          "(expected e.g. 2026-01-31T12:00:00Z)")
            return value  # Kubernetes reads a timestamp as the string written
        if tag == NULL:
            if value not in _NULLS:
                self.fail(event.start_mark, f"!!null {_short(value)!r} is not null")
            return None
        if tag == BOOL:
            if value.lower() not in _BOOLS:
                self.fail(event.start_mark, f"!!bool {_short(value)!r} is not a boolean "
                          "(expected true or false)")
            return _BOOLS[value.lower()]
        if tag == INT:
            return self._int(event)
        if tag == FLOAT:
            return self._float(event)
        self.fail(event.start_mark, f"tag {_short(_tag_name(tag))} is not accepted (gpuscale reads "
                  "plain YAML: !!str !!int !!float !!bool !!null !!map !!seq !!merge !!timestamp)")

    def _int(self, event) -> int:
        text = event.value
        if len(text) > _MAX_INT_CHARS:
            self.fail(event.start_mark, f"integer of {len(text)} characters is out of range "
                      "(64-bit integers, as the Kubernetes API reads them)")
        try:
            number = self._constructor.construct_yaml_int(yaml.ScalarNode(INT, text))
        except ValueError:
            self.fail(event.start_mark, f"!!int {_short(text)!r} is not an integer")
        if not INT64_MIN <= number <= INT64_MAX:
            self.fail(event.start_mark, f"integer {_short(text)} is out of range (64-bit "
                      "integers, as the Kubernetes API reads them)")
        return number

    def _float(self, event) -> float:
        text = event.value
        try:
            number = self._constructor.construct_yaml_float(yaml.ScalarNode(FLOAT, text))
        except ValueError:
            self.fail(event.start_mark, f"!!float {_short(text)!r} is not a number")
        if self.json_numbers and not math.isfinite(number):
            self.fail(event.start_mark, f"{_short(text)} is not a number the Kubernetes API "
                      "accepts (JSON has no infinity or NaN)")
        if math.isinf(number) and "inf" not in text.lower():
            # 1.0e400 overflows to infinity; `.inf` written as such is left to the field.
            self.fail(event.start_mark, f"number {_short(text)} is out of range (larger than "
                      "a 64-bit float)")
        return number

    # containers
    def build(self, events) -> list[Document]:
        stack: list[_Frame] = []
        anchors: dict[str, tuple[Any, int, int]] = {}
        doc_marks: dict = {}
        doc_line = 0
        for event in events:
            kind = type(event)
            if kind is yaml.ScalarEvent:
                value = self.scalar(event)
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1, 1)
                self.add(stack, value, 1, 1, event.start_mark, doc_marks)
            elif kind is yaml.AliasEvent:
                if event.anchor not in anchors:
                    inside = any(f.anchor == event.anchor for f in stack)
                    self.fail(event.start_mark, f"alias *{_short(event.anchor)} refers to "
                              + ("the node that contains it" if inside else "no anchor"))
                value, size, height = anchors[event.anchor]
                self.alias_nodes += size
                if self.alias_nodes > self.max_alias_nodes:
                    self.fail(event.start_mark, "the document expands to more than "
                              f"{self.max_alias_nodes} nodes through YAML aliases (alias bomb?); "
                              "refusing it")
                self.add(stack, value, size, height, event.start_mark, doc_marks)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                is_map = kind is yaml.MappingStartEvent
                if event.tag not in (None, "!", MAP if is_map else SEQ):
                    self.fail(event.start_mark, f"tag {_short(_tag_name(event.tag))} is not "
                              "accepted (gpuscale reads plain YAML mappings and lists)")
                if len(stack) >= self.max_depth:
                    self.fail(event.start_mark, f"nested deeper than {self.max_depth} levels; "
                              "see docs/input-limits.md")
                path: tuple = ()
                if stack:
                    parent = stack[-1]
                    if parent.is_map and parent.key is _NO_KEY:
                        self.fail(event.start_mark, "a mapping key must be a string or a number")
                    path = parent.path + ((parent.key,) if parent.is_map else (len(parent.value),))
                    if not parent.is_map and self.keep_marks:
                        doc_marks[path] = (event.start_mark.line + 1, event.start_mark.column + 1)
                frame = _Frame(is_map, path, event.anchor, event.start_mark.line + 1)
                frame.key = _NO_KEY
                stack.append(frame)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                frame = stack.pop()
                value = frame.value
                if frame.is_map and frame.merges:
                    for merged in frame.merges:  # explicit keys win, then the first merged
                        for key, item in merged.items():
                            value.setdefault(key, item)
                if frame.height + len(stack) > self.max_depth:
                    self.fail(event.start_mark, f"nested deeper than {self.max_depth} levels "
                              "through YAML aliases; see docs/input-limits.md")
                if frame.anchor is not None:
                    anchors[frame.anchor] = (value, frame.size, frame.height)
                self.add(stack, value, frame.size, frame.height, event.start_mark, doc_marks,
                         nested=True)
            elif kind is yaml.DocumentStartEvent:
                if len(self.documents) >= self.max_documents:
                    self.fail(event.start_mark, f"more than {self.max_documents} YAML documents; "
                              "see docs/input-limits.md")
                anchors, doc_marks = {}, {}
                doc_line = event.start_mark.line + 1
                self._root: Any = None
            elif kind is yaml.DocumentEndEvent:
                self.documents.append(Document(self._root, doc_line, doc_marks))
        return self.documents

    def add(self, stack: list[_Frame], value: Any, size: int, height: int, mark, marks: dict,
            nested: bool = False) -> None:
        if not stack:
            self._root = value
            return
        parent = stack[-1]
        parent.size += size
        parent.height = max(parent.height, height + 1)
        if not parent.is_map:
            if self.keep_marks and not nested:
                marks[parent.path + (len(parent.value),)] = (mark.line + 1, mark.column + 1)
            parent.value.append(value)
            return
        if parent.key is _NO_KEY:
            if nested or not (value is None or isinstance(value, (str, int, float, _MergeKey))):
                self.fail(mark, "a mapping key must be a string or a number")
            parent.key, parent.key_mark = value, (mark.line + 1, mark.column + 1)
            return
        key, key_mark = parent.key, parent.key_mark
        parent.key = _NO_KEY
        if key is _MERGE_KEY:
            items = value if isinstance(value, list) else [value]
            if not items or not all(isinstance(item, dict) for item in items):
                self.fail(mark, "a merge key `<<` takes a mapping or a list of mappings "
                          f"(an alias such as *defaults), found {_short(repr(value))}")
            parent.merges.extend(items)
            return
        if key in parent.value:
            first = marks.get(parent.path + (key,))
            at = f" (first at line {first[0]})" if first else ""
            self.fail(_Mark(key_mark or (1, 1)),
                      f"duplicate key {_short(repr(key))}{at}; kubectl refuses duplicate keys too")
        parent.value[key] = value
        marks[parent.path + (key,)] = key_mark


class _Mark:
    """A (line, column) pair, 1-based, shaped like libyaml's 0-based mark."""

    def __init__(self, line_col: tuple[int, int]) -> None:
        self.line, self.column = line_col[0] - 1, line_col[1] - 1


def parse_yaml_documents(text: str, source: str, *, marks: bool = False,
                         max_depth: int = MAX_DEPTH, max_documents: int = MAX_DOCUMENTS,
                         max_alias_nodes: int = MAX_ALIAS_NODES,
                         json_numbers: bool = False) -> list[Document]:
    """Every document of a YAML (or JSON) stream, with the limits above. `json_numbers`
    (Kubernetes manifests) also refuses `.inf` and `.nan`, which JSON cannot carry."""
    builder = _Builder(source, marks=marks, max_depth=max_depth, max_documents=max_documents,
                       max_alias_nodes=max_alias_nodes, json_numbers=json_numbers)
    # libyaml refuses nesting past 1000 levels itself (ScannerError); our limit is lower.
    try:
        return builder.build(yaml.parse(text, Loader=_loader_class()))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = " ".join((exc.problem or exc.context or "").split()) or "syntax error"
        raise UserInputError(f"{where}invalid YAML: {problem}", source=source) from None
    except yaml.YAMLError as exc:
        raise UserInputError(f"invalid YAML: {_short(str(exc).splitlines()[0], 120)}",
                             source=source) from None


def _loader_class():
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, source: str, **limits: Any) -> Any:
    """One YAML document's data (None for an empty stream); a second document is refused."""
    docs = parse_yaml_documents(text, source, **limits)
    if len(docs) > 1:
        raise UserInputError(f"line {docs[1].line}: a second YAML document (`---`); expected one",
                             source=source)
    return docs[0].data if docs else None


def load_yaml(path: str | Path, *, what: str = "YAML file", max_bytes: int = MAX_BYTES,
              stdin: BinaryIO | None = None) -> Any:
    """Read and parse one YAML document, with every limit of this module."""
    source = "<stdin>" if str(path) == "-" else str(path)
    return parse_yaml(read_text(path, max_bytes=max_bytes, what=what, stdin=stdin), source)


# -- JSON ----------------------------------------------------------------------------------


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _json_depth_ok(text: str, max_depth: int) -> int:
    """Offset where nesting first passes `max_depth` (strings skipped), or -1."""
    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return match.start()
        elif token in "]}":
            depth -= 1
    return -1


def check_json_depth(text: str, source: str, *, max_depth: int = MAX_DEPTH,
                     field: str | None = None) -> None:
    """Refuse JSON nested past `max_depth` before `json` recurses into it (RecursionError)."""
    if text.count("[") + text.count("{") > max_depth:  # cheap: most texts skip the scan
        offset = _json_depth_ok(text, max_depth)
        if offset >= 0:
            raise UserInputError(f"character {offset}: JSON nested deeper than {max_depth} levels; "
                                 "see docs/input-limits.md", source=source, field=field)


def parse_json(text: str, source: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """JSON data; too deep, NaN/Infinity or a syntax error is one line."""
    check_json_depth(text, source, max_depth=max_depth)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"line {exc.lineno}, column {exc.colno}: not JSON: {exc.msg}",
                             source=source) from None
    except (ValueError, RecursionError) as exc:
        raise UserInputError(f"not JSON: {_short(str(exc), 80)}", source=source) from None


def load_json(path: str | Path, *, what: str = "JSON file", max_bytes: int = MAX_BYTES) -> Any:
    source = "<stdin>" if str(path) == "-" else str(path)
    return parse_json(read_text(path, max_bytes=max_bytes, what=what), source)
