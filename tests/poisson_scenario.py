"""One small scenario as YAML text, for the tests that drive the command line as a user does
(adversarial inputs, interrupts, the command-line fuzzer): an 8B model on one-GPU L40S nodes
under a Poisson load, with a fixed strategy and a KEDA one unless told otherwise."""

from __future__ import annotations

FIXED_ONE = """  - name: fixed1
    autoscaler: {kind: fixed, replicas: 1}
"""
KEDA_QUEUE = """  - name: keda
    autoscaler:
      kind: keda
      min_replica_count: 1
      max_replica_count: 2
      triggers:
        - query: {metric: "vllm:num_requests_waiting", aggregation: sum}
          threshold: 4
"""


def poisson_scenario(name: str, *, duration_s: int, rate_per_s: float,
                     prompt_tokens: int = 500, output_tokens: int = 50,
                     strategies: str = FIXED_ONE + KEDA_QUEUE, drain_s: int = 30) -> str:
    """The scenario's YAML; `strategies`: the list's items as YAML lines."""
    return f"""name: {name}
seed: 1
duration_s: {duration_s}
drain_s: {drain_s}
model: {{name: Llama-3.1-8B, precision: bf16, tp: 1}}
cluster: {{instance_type: g6e.2xlarge, ready_nodes: 1, max_nodes: 2}}
initial_replicas: 1
slo: {{ttft_s: 2.0, tpot_s: 0.1}}
workload:
  kind: poisson
  duration_s: {duration_s}
  rate_per_s: {rate_per_s}
  prompt_tokens: {{kind: fixed, value: {prompt_tokens}}}
  output_tokens: {{kind: fixed, value: {output_tokens}}}
strategies:
{strategies}"""
