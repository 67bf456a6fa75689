"""The one entry point: `WorkloadSpec` (a tagged union of every workload kind) and
`build_requests(spec, rng, base_dir)`.

`mix` nests other specs and merges their tables; each part gets its own child random stream
spawned from the parent, so adding a part at the end does not change the parts before it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gpuscale.workloads.base import Requests
from gpuscale.workloads.generators import (
    BurstyWorkload,
    DiurnalWorkload,
    LongPromptSpikeWorkload,
    PiecewiseWorkload,
    PoissonWorkload,
)
from gpuscale.workloads.limits import check_planned
from gpuscale.workloads.replay import TraceWorkload


class MixWorkload(BaseModel):
    """Several workloads merged into one table, e.g. a diurnal base plus a long-prompt spike."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["mix"] = "mix"
    parts: list[WorkloadSpec] = Field(
        ..., min_length=1, description="Workloads to merge; ties in arrival keep this order."
    )

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        # One draw from the parent seeds a SeedSequence whose i-th child depends only on i:
        # stable when parts are appended, and independent streams per part.
        root = np.random.SeedSequence(int(rng.integers(0, 2**63)))
        children = root.spawn(len(self.parts))
        return Requests.concat(
            [
                build_requests(part, np.random.Generator(np.random.PCG64(seq)), base_dir)
                for part, seq in zip(self.parts, children, strict=True)
            ]
        )


WorkloadSpec = Annotated[
    PoissonWorkload
    | BurstyWorkload
    | PiecewiseWorkload
    | DiurnalWorkload
    | LongPromptSpikeWorkload
    | MixWorkload
    | TraceWorkload,
    Field(discriminator="kind"),
]
MixWorkload.model_rebuild()


@cache
def _adapter() -> TypeAdapter[Any]:
    # Built on first use: a scenario validates its workload as a field of `Scenario`, so
    # `simulate` never needs this one (0.5-1 ms of its import).
    return TypeAdapter(cast(Any, WorkloadSpec))


def parse_workload(data: object) -> WorkloadSpec:
    """Validate a plain mapping (as loaded from YAML) into a workload spec.

    Raises pydantic's ValidationError; the scenario loader turns it into a UserInputError.
    """
    return _adapter().validate_python(data)


def build_requests(spec: WorkloadSpec, rng: np.random.Generator, base_dir: Path) -> Requests:
    """Generate or read the request table of `spec`.

    `rng` is the workload's own stream (e.g. `RandomStreams(seed).get("workloads")`);
    `base_dir` resolves relative trace paths (the scenario file's folder). Errors in trace
    files are `UserInputError`s; a generator that would exceed the memory guard is one too.
    """
    check_planned(spec)  # before any array is drawn: the size follows from the fields
    return spec.generate(rng, Path(base_dir))
