"""Workloads: request generators and trace readers, all returning columnar `Requests`.

Belongs here: arrival processes and token-length distributions, trace parsing. Must not know
about replicas, routing or Kubernetes.

Public names for the engine: `WorkloadSpec` (tagged union, field `kind`), `build_requests`,
`parse_workload`, the readers `read_azure_llm_csv`, `read_generic_csv`, `read_mooncake_jsonl`,
`read_burstgpt_csv` and `TRACE_READERS` (format name -> reader).
"""

from gpuscale.workloads.base import Requests
from gpuscale.workloads.distributions import TokenDistribution, sample_tokens
from gpuscale.workloads.spec import WorkloadSpec, build_requests, parse_workload
from gpuscale.workloads.traces import (
    TRACE_READERS,
    read_azure_llm_csv,
    read_burstgpt_csv,
    read_generic_csv,
    read_mooncake_jsonl,
)

__all__ = [
    "TRACE_READERS",
    "Requests",
    "TokenDistribution",
    "WorkloadSpec",
    "build_requests",
    "parse_workload",
    "read_azure_llm_csv",
    "read_burstgpt_csv",
    "read_generic_csv",
    "read_mooncake_jsonl",
    "sample_tokens",
]
