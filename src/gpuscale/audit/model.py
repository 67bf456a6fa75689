"""What a rule is and what it reports: `Rule`, `Hit` (from a check), `Finding` (to the user)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from gpuscale.audit.loader import Manifest, PathKey, format_path

if TYPE_CHECKING:
    from gpuscale.audit.context import AuditContext

RULE_ID_RE = re.compile(r"^GPU\d{3}$")
RULE_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")
REFERENCE_DIR = "../shared/reference"  # where every rule's sources are written up


class Severity(IntEnum):
    """Ordered so `--fail-on warning` means warning or worse."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r}; expected info, warning or error"
            ) from None


@dataclass(frozen=True)
class Hit:
    """One problem a check found: where (path inside the object) and the numbers to report."""

    path: PathKey
    values: dict = field(default_factory=dict)


Check = Callable[[Manifest, "AuditContext"], Iterator[Hit]]


@dataclass(frozen=True)
class Rule:
    """Metadata and check of one audit rule; the docs page is generated from these fields.

    `message` is a ``str.format`` template filled from each `Hit.values`; it states the fact
    with the numbers found. `why` and `fix` are plain prose (Markdown allowed). `references`
    are ``file.md section`` strings under ../shared/reference plus upstream sources.
    """

    id: str
    name: str
    severity: Severity
    kinds: tuple[str, ...]
    summary: str
    message: str
    why: str
    fix: str
    references: tuple[str, ...]
    check: Check = field(repr=False, compare=False)
    family: str = ""

    def __post_init__(self) -> None:
        if not RULE_ID_RE.match(self.id):
            raise ValueError(f"rule id {self.id!r} must look like GPU001")
        if not RULE_NAME_RE.match(self.name):
            raise ValueError(f"rule name {self.name!r} must be kebab-case naming the problem")

    def run(self, obj: Manifest, ctx: AuditContext) -> Iterator[Finding]:
        for hit in self.check(obj, ctx):
            line, column = obj.position(hit.path)
            yield Finding(
                rule_id=self.id, rule_name=self.name, severity=self.severity,
                message=self.message.format(**hit.values), source=obj.source, line=line,
                column=column, yaml_path=format_path(obj.base_path + tuple(hit.path)),
                object_ref=obj.ref)


@dataclass(frozen=True, order=True)
class Finding:
    """A rule's report on one object, positioned in its file."""

    source: str
    line: int
    column: int
    rule_id: str
    rule_name: str = field(compare=False)
    severity: Severity = field(compare=False)
    message: str = field(compare=False)
    yaml_path: str = field(compare=False)
    object_ref: str = field(compare=False)

    def as_dict(self) -> dict:
        return {"rule": self.rule_id, "name": self.rule_name, "severity": self.severity.label,
                "message": self.message, "file": self.source, "line": self.line,
                "column": self.column, "path": self.yaml_path, "object": self.object_ref}
