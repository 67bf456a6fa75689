"""GPU027: Cluster Autoscaler gives up on a new node before a GPU node can be ready."""

from gpuscale.audit.rules.nodes.ca_flag_template import ca_flag_rule

RULE = ca_flag_rule(
    id="GPU027",
    name="cluster-autoscaler-gives-up-before-gpu-node-ready",
    flag="max-node-provision-time",
    minimum_s=15 * 60,  # the CA default, already tight for GPUs
    summary="Cluster Autoscaler's --max-node-provision-time is shorter than its 15m default.",
    why="A GPU node needs boot, driver installation and device-plugin registration before it "
    "counts as ready: 4-10 min is common. Past `--max-node-provision-time` CA deletes the "
    "half-booted node, backs the node group off (5 min, up to 30 min) and tries elsewhere, so "
    "a short value turns slow GPU boots into a loop of paid, discarded nodes.",
    fix="Keep `--max-node-provision-time` at 15m or more for GPU node groups; shorten boot instead "
    "(pre-installed drivers, pre-pulled images).",
    references=(
        "layer1-node-provisioning.md section 2.2 (max-node-provision-time 15m, backoff)",
        "layer1-node-provisioning.md section 2.4 (driver install counts against the timeouts)",
        "calibration.md A18 (new GPU node to schedulable: 3-10 min)",
    ),
)
