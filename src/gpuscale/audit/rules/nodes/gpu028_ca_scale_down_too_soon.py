"""GPU028: Cluster Autoscaler removes unneeded GPU nodes sooner than they take to come back."""

from gpuscale.audit.rules.nodes.ca_flag_template import ca_flag_rule

RULE = ca_flag_rule(
    id="GPU028",
    name="cluster-autoscaler-removes-gpu-nodes-too-soon",
    flag="scale-down-unneeded-time",
    minimum_s=10 * 60,  # CA default; A18's GPU boot upper bound
    summary=(
        "Cluster Autoscaler's --scale-down-unneeded-time is "
        "shorter than a GPU node's start-up."
    ),
    why="A node unneeded for `--scale-down-unneeded-time` is drained and deleted. For GPU nodes "
    "that take up to 10 min to be schedulable again, a shorter value removes capacity in a "
    "lull that the next burst then waits for.",
    fix="Keep `--scale-down-unneeded-time` at 10m or more (the default) on clusters with GPU node "
    "groups.",
    references=(
        "layer1-node-provisioning.md section 2.3 (scale-down-unneeded-time 10m)",
        "calibration.md A18 (new GPU node to schedulable: 3-10 min)",
    ),
)
