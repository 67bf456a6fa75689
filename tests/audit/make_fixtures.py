"""One-off writer of tests/audit/fixtures/<ID>/{fires,passes}.yaml (kept for review; not a test)."""

from pathlib import Path

VLLM = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: serve
spec:
  replicas: 2
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
        resources:
          limits: {{nvidia.com/gpu: 1}}
        readinessProbe:
          httpGet: {{path: /health, port: 8000}}
"""


def hpa(name, target, metrics, extra=""):
    return f"""apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
  namespace: serve
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {target}}}
  minReplicas: 1
  maxReplicas: 8
  metrics:
{metrics}{extra}"""


def so(name, target, query, extra="  minReplicaCount: 1\n", mt=""):
    return f"""apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {name}
  namespace: serve
spec:
  scaleTargetRef: {{name: {target}}}
{extra}  triggers:
  - type: prometheus
{mt}    metadata:
      serverAddress: http://prometheus.monitoring:9090
      query: '{query}'
      threshold: "5"
"""


def EXT(metric: str) -> str:
    return f"""  - type: External
    external:
      metric: {{name: {metric}}}
      target: {{type: AverageValue, averageValue: "5"}}
"""


GOOD_Q = 'sum(vllm:num_requests_waiting{model_name="llama"})'

NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements:
      - key: node.kubernetes.io/instance-type
        operator: In
        values: ["p5.48xlarge"]
{taints}  disruption:
{disruption}{limits}"""
TAINT = """      taints:
      - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
"""
GOOD_DISRUPTION = """    consolidationPolicy: WhenEmpty
    consolidateAfter: 30m
    budgets:
    - nodes: "1"
"""
LIMITS = """  limits:
    nvidia.com/gpu: 64
"""


def nodepool(name, taints=TAINT, disruption=GOOD_DISRUPTION, limits=LIMITS):
    return NODEPOOL.format(name=name, taints=taints, disruption=disruption, limits=limits)


def job(name, parallelism, gpus=8, sched="", annotations="", pod_ann=""):
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: train
{annotations}spec:
  parallelism: {parallelism}
  completions: {parallelism}
  template:
    metadata:
{pod_ann or '      labels: {app: trainer}'}
    spec:
{sched}      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.01-py3
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
"""


PDB = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {name}
  namespace: serve
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {{app: {app}}}
"""

F = {}
F["GPU001"] = (
    VLLM.format(name="llama") + "---\n" + hpa("fire-util", "llama", EXT("DCGM_FI_DEV_GPU_UTIL")),
    VLLM.format(name="llama")
    + "---\n"
    + hpa("dont-fire", "llama", EXT("vllm:num_requests_waiting")),
)
F["GPU002"] = (
    VLLM.format(name="llama") + "---\n" + so("fire-fb", "llama", "sum(DCGM_FI_DEV_FB_USED)"),
    VLLM.format(name="llama") + "---\n" + so("dont-fire", "llama", "sum(vllm:kv_cache_usage_perc)"),
)
F["GPU003"] = (
    VLLM.format(name="llama")
    + "---\n"
    + hpa(
        "fire-cpu",
        "llama",
        """  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 70}
""",
    ),
    VLLM.format(name="llama")
    + "---\n"
    + hpa("dont-fire", "llama", EXT("vllm:num_requests_waiting")),
)
F["GPU004"] = (so("fire-old-metric", "llama", 'sum(vllm:gpu_cache_usage_perc{model_name="llama"})'),
               so("dont-fire", "llama", 'sum(vllm:kv_cache_usage_perc{model_name="llama"})')
               + """---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: dont-fire, namespace: serve}
spec:
  groups:
  - name: vllm
    rules:
    - record: llama:itl:p90
      expr: histogram_quantile(0.9, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[5m])))
""")
F["GPU005"] = (so("fire-label", "llama", 'sum(vllm:num_requests_waiting{model="llama"})'),
               so("dont-fire", "llama", GOOD_Q))
F["GPU006"] = (so("fire-per-pod", "llama", 'vllm:num_requests_waiting{model_name="llama"}'),
               so("dont-fire", "llama", GOOD_Q))
F["GPU007"] = (so("fire-avg", "llama", 'avg(vllm:kv_cache_usage_perc{model_name="llama"})'),
               so("dont-fire", "llama", 'avg(vllm:kv_cache_usage_perc{model_name="llama"})',
                  mt="    metricType: Value\n"))
F["GPU008"] = (
    so("fire-counter", "llama", 'sum(vllm:prompt_tokens_total{model_name="llama"})'),
    so("dont-fire", "llama", 'sum(rate(vllm:prompt_tokens_total{model_name="llama"}[1m]))'),
)
PD = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: serve
  labels: {{llm-d.ai/role: {role}}}
spec:
  replicas: 2
  template:
    metadata:
      labels: {{app: {name}, llm-d.ai/role: {role}}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        resources:
          limits: {{nvidia.com/gpu: 1}}
"""
F["GPU010"] = (
    PD.format(name="llama-prefill", role="prefill")
    + "---\n"
    + PD.format(name="llama-decode", role="decode")
    + "---\n"
    + so("fire-both-roles", "llama-decode", GOOD_Q),
    PD.format(name="llama-prefill", role="prefill")
    + "---\n"
    + PD.format(name="llama-decode", role="decode")
    + "---\n"
    + so(
        "dont-fire",
        "llama-decode",
        'sum(vllm:num_requests_waiting{model_name="llama", llm_d_ai_role="decode"})',
    ),
)
F["GPU011"] = (
    VLLM.format(name="llama")
    + "---\n"
    + so("fire-zero", "llama", GOOD_Q, extra="  cooldownPeriod: 1800\n"),
    VLLM.format(name="llama") + "---\n" + so("dont-fire", "llama", GOOD_Q),
)
F["GPU012"] = (
    VLLM.format(name="llama")
    + "---\n"
    + hpa(
        "fire-window",
        "llama",
        EXT("vllm:num_requests_waiting"),
        """  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
""",
    ),
    VLLM.format(name="llama")
    + "---\n"
    + hpa(
        "dont-fire",
        "llama",
        EXT("vllm:num_requests_waiting"),
        """  behavior:
    scaleDown:
      stabilizationWindowSeconds: 600
""",
    ),
)
F["GPU013"] = (
    VLLM.format(name="llama")
    + "---\n"
    + so("fire-cooldown", "llama", GOOD_Q, extra="  minReplicaCount: 0\n  cooldownPeriod: 30\n"),
    VLLM.format(name="llama")
    + "---\n"
    + so("dont-fire", "llama", GOOD_Q, extra="  minReplicaCount: 0\n  cooldownPeriod: 1800\n"),
)
F["GPU014"] = (
    VLLM.format(name="fire-two-scalers")
    + "---\n"
    + so("keda", "fire-two-scalers", GOOD_Q)
    + "---\n"
    + hpa("hpa", "fire-two-scalers", EXT("vllm:num_requests_waiting")),
    VLLM.format(name="dont-fire") + "---\n" + so("keda", "dont-fire", GOOD_Q),
)
F["GPU020"] = (nodepool("fire-underutilized", disruption="""    consolidateAfter: 30m
    budgets:
    - nodes: "1"
"""), nodepool("dont-fire"))
F["GPU021"] = (nodepool("fire-soon", disruption="""    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
"""), nodepool("dont-fire"))
F["GPU022"] = (nodepool("fire-no-limit", limits=""), nodepool("dont-fire"))
F["GPU023"] = (nodepool("fire-no-taint", taints=""), nodepool("dont-fire"))
F["GPU024"] = (nodepool("fire-budget", disruption="""    consolidationPolicy: WhenEmpty
    consolidateAfter: 30m
    budgets:
    - nodes: "100%"
"""), nodepool("dont-fire", disruption="""    consolidationPolicy: WhenEmpty
    consolidateAfter: 30m
    budgets:
    - nodes: "100%"
      schedule: "0 3 * * sun"
      duration: 2h
    - nodes: "1"
"""))
F["GPU025"] = (job("fire-disruptable", 1, sched="      schedulerName: kai-scheduler\n"),
               job("dont-fire", 1, sched="      schedulerName: kai-scheduler\n",
                   pod_ann='      annotations: {karpenter.sh/do-not-disrupt: "true"}'))
F["GPU030"] = ("""apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: fire-no-gang
  namespace: serve
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      metadata:
        labels: {app: deepseek}
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args: ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
          resources:
            limits: {nvidia.com/gpu: 8}
""", """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: dont-fire
  namespace: serve
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      metadata:
        labels: {app: deepseek, kai.scheduler/queue: inference}
      spec:
        schedulerName: kai-scheduler
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args: ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
          resources:
            limits: {nvidia.com/gpu: 8}
""")
PG = """apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: {name}
  namespace: train
spec:
  minMember: {min}
  queue: research
---
"""
F["GPU031"] = (
    PG.format(name="fire-small-gang", min=2)
    + job(
        "trainer",
        4,
        sched="      schedulerName: kai-scheduler\n",
        pod_ann="      annotations: {pod-group-name: fire-small-gang}",
    ),
    PG.format(name="dont-fire", min=4)
    + job(
        "trainer",
        4,
        sched="      schedulerName: kai-scheduler\n",
        pod_ann="      annotations: {pod-group-name: dont-fire}",
    ),
)
F["GPU032"] = (
    nodepool("gpu")
    + "---\n"
    + job(
        "fire-too-big",
        1,
        gpus=16,
        pod_ann='      annotations: {karpenter.sh/do-not-disrupt: "true"}',
    ),
    nodepool("gpu")
    + "---\n"
    + job(
        "dont-fire", 1, gpus=8, pod_ann='      annotations: {karpenter.sh/do-not-disrupt: "true"}'
    ),
)
TP = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  namespace: serve
spec:
  replicas: 1
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      schedulerName: kai-scheduler
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--tensor-parallel-size", "{tp}"{pp}]
        resources:
          limits: {{nvidia.com/gpu: 8}}
"""
F["GPU033"] = (
    nodepool("gpu") + "---\n" + TP.format(name="fire-wide-tp", tp=16, pp=""),
    nodepool("gpu")
    + "---\n"
    + TP.format(name="dont-fire", tp=8, pp=', "--pipeline-parallel-size", "2"'),
)
Q = """apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: {name}
spec:
  resources:
    gpu: {{quota: 8, limit: {gpu_limit}, overQuotaWeight: 1}}
    cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
    memory: {{quota: -1{mem_limit}, overQuotaWeight: 1}}
"""
F["GPU040"] = (Q.format(name="fire-zero-limit", gpu_limit=0, mem_limit=""),
               Q.format(name="dont-fire", gpu_limit=-1, mem_limit=", limit: -1"))
KAI_INF = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: serve
spec:
  replicas: 2
  template:
    metadata:
      labels: {{app: {name}, kai.scheduler/queue: {queue}}}
    spec:
      schedulerName: kai-scheduler
      priorityClassName: {pc}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        resources:
          limits: {{nvidia.com/gpu: 1}}
"""
F["GPU041"] = (KAI_INF.format(name="fire-preemptible", queue="shared", pc="train"),
               Q.format(name="serving", gpu_limit=-1, mem_limit=", limit: -1") + "---\n"
               + KAI_INF.format(name="dont-fire", queue="serving", pc="inference"))
F["GPU050"] = (VLLM.format(name="fire-no-probe").replace("""        readinessProbe:
          httpGet: {path: /health, port: 8000}
""", """        readinessProbe:
          tcpSocket: {port: 8000}
"""), VLLM.format(name="dont-fire"))
F["GPU051"] = (
    VLLM.format(name="fire-no-pdb"),
    VLLM.format(name="dont-fire") + "---\n" + PDB.format(name="dont-fire", app="dont-fire"),
)

root = Path(__file__).parent / "fixtures"
for rule_id, (fires, passes) in F.items():
    (root / rule_id).mkdir(parents=True, exist_ok=True)
    (root / rule_id / "fires.yaml").write_text(fires)
    (root / rule_id / "passes.yaml").write_text(passes)

# --- added with GPU026-GPU028 ---
NODECLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  amiSelectorTerms:
  - alias: al2023@latest
  role: KarpenterNodeRole
  subnetSelectorTerms:
  - tags: {{karpenter.sh/discovery: demo}}
  securityGroupSelectorTerms:
  - tags: {{karpenter.sh/discovery: demo}}
  blockDeviceMappings:
  - deviceName: /dev/xvda
    rootVolume: true
    ebs: {{volumeSize: {size}, volumeType: gp3}}
"""
CA = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: kube-system
spec:
  replicas: 1
  template:
    metadata:
      labels: {{app: cluster-autoscaler}}
    spec:
      containers:
      - name: cluster-autoscaler
        image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.0
        command:
        - ./cluster-autoscaler
        - --cloud-provider=aws
        - --max-node-provision-time={provision}
        - --scale-down-unneeded-time={unneeded}
"""
EXTRA = {
    "GPU026": (
        nodepool("gpu") + "---\n" + NODECLASS.format(size="50Gi"),
        nodepool("gpu").replace("EC2NodeClass, name: gpu}", "EC2NodeClass, name: dont-fire}")
        + "---\n"
        + NODECLASS.format(size="200Gi").replace("name: gpu\nspec:", "name: dont-fire\nspec:"),
    ),
    "GPU027": (
        CA.format(name="fire-ca", provision="5m", unneeded="10m"),
        CA.format(name="dont-fire", provision="20m", unneeded="10m"),
    ),
    "GPU028": (
        CA.format(name="fire-ca", provision="15m", unneeded="2m"),
        CA.format(name="dont-fire", provision="15m", unneeded="15m"),
    ),
}
for rule_id, (fires, passes) in EXTRA.items():
    (root / rule_id).mkdir(parents=True, exist_ok=True)
    (root / rule_id / "fires.yaml").write_text(fires)
    (root / rule_id / "passes.yaml").write_text(passes)
