"""Data shipped in the package: GPUs, models and cloud instance types, each with its source.

Belongs here: frozen specs and the arithmetic that follows from them (parameter counts, KV
bytes per token). Must not import simulation state.
"""

from gpuscale.catalog.specs import (
    GpuSpec,
    InstanceType,
    ModelSpec,
    Precision,
    get_gpu,
    get_instance_type,
    get_model,
    gpus,
    instance_types,
    models,
)

__all__ = [
    "GpuSpec", "InstanceType", "ModelSpec", "Precision", "get_gpu", "get_instance_type",
    "get_model", "gpus", "instance_types", "models",
]
