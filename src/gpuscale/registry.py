"""One registry shape for every pluggable part: layer policies (autoscalers, node providers,
schedulers) and the audit rules.

As kube-linter's `pkg/templates/registry.go`: `register` refuses a duplicate name (a
programming error, so it fails at import), lookups by name, and a list sorted by name. An
unknown name is bad input and lists the known ones with the closest match (click's "did you
mean"). A layer's pydantic union of params models is derived from its registry
(`params_union`), so the list of kinds is written once; `register` checks that a params model's
`kind` default is the name it is registered under.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, Union

from gpuscale.errors import UserInputError

T = TypeVar("T")
P = TypeVar("P")
B = TypeVar("B")


@dataclass(frozen=True)
class PolicySpec(Generic[P, B]):
    """One layer registry entry: the `kind:` written in scenario YAML and how to build it."""

    name: str  # the `kind:` written in scenario YAML
    params: type[P]  # pydantic model: frozen, extra="forbid", with `kind: Literal[name]`
    build: Callable[..., B]  # params -> an object satisfying the layer's Protocol
    summary: str  # one line, shown by `gpuscale policies`


class Registry(Mapping[str, T]):
    """name -> entry. Iterates in registration order; `list()` is sorted by name."""

    def __init__(self, what: str) -> None:
        self.what = what  # "autoscaler kind", "rule id": used in messages
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"duplicate {self.what} {name!r}")
        kind = _kind_default(getattr(entry, "params", None))
        if kind is not None and kind != name:
            raise ValueError(f"{self.what} {name!r}: its params model says kind {kind!r}")
        self._entries[name] = entry
        return entry

    def require(self, name: Any, field: str | None = None) -> T:
        """The entry for `name`; an unknown one is bad input naming the known ones."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UserInputError(f"unknown {self.what} {name!r}; {self.hint(name)}",
                                 field=field) from None

    def hint(self, name: Any, extra: list[str] | None = None) -> str:
        """'did you mean 'x'? known: a, b' for an unknown name."""
        known = self.names() + sorted(extra or [])
        close = difflib.get_close_matches(str(name), known, n=1)
        mean = f"did you mean {close[0]!r}? " if close else ""
        return f"{mean}known: {', '.join(known)}"

    def names(self) -> list[str]:
        return sorted(self._entries)

    def list(self) -> list[T]:
        """Entries sorted by name (kube-linter's List)."""
        return [self._entries[name] for name in self.names()]

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def lazy_build(module: str, name: str = "build") -> Callable[..., Any]:
    """A `build` that imports `module` on its first call and calls its `name`.

    A registry entry's params model must be importable with the layer (the scenario's union
    validates every kind), its controller code need not: a run imports only the policies it
    builds (`simulate` of a KEDA scenario skips the planners', KPA's and WVA's modules)."""

    def build(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    build.__qualname__ = build.__name__ = f"lazy_build({module!r})"
    return build


def params_union(registry: Registry[Any], discriminator: str = "kind") -> Any:
    """The pydantic discriminated union of the registered params models, in registration
    order (which fixes the order of the generated scenario reference). pydantic is imported
    here, not at module level: `audit` uses the registry and must start without it."""
    from pydantic import Field

    models = tuple(entry.params for entry in registry.values())
    return Annotated[Union[models], Field(discriminator=discriminator)]  # noqa: UP007 (a tuple of types)


def _kind_default(params: Any) -> str | None:
    fields = getattr(params, "model_fields", None)
    if not fields or "kind" not in fields:
        return None
    default = fields["kind"].default
    return default if isinstance(default, str) else None
