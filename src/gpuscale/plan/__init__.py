"""Plan inputs, decision rules and warm-pool sizing by simulation -> `Plan`.

Belongs here: reading a plan-input file, choosing hardware, parallelism, signals, thresholds,
NodePools and queues with reasons, and simulating candidate warm pools on the engine. Must not
render YAML or write files (manifests/ renders, cli/ writes).
"""

from gpuscale.plan.build import make_plan
from gpuscale.plan.inputs import PlanInput, load_plan_input, plan_input_from_dict
from gpuscale.plan.model import Decision, Plan, Refusal, Role, plan_to_json

__all__ = ["Decision", "Plan", "PlanInput", "Refusal", "Role", "load_plan_input", "make_plan",
           "plan_input_from_dict", "plan_to_json"]
