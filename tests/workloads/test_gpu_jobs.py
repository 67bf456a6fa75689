from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from gpuscale.workloads.gpu_jobs import GpuJobSpec, MultiNodeReplicaSpec, expand_jobs


def test_expand_jobs_names_arrivals_and_gangs():
    jobs = expand_jobs([
        GpuJobSpec(name="t", count=2, interval_s=60, num_pods=4, gpus_per_pod=8, min_member=3),
        MultiNodeReplicaSpec(name="lws", replicas=2, pods_per_replica=2, gpus_per_pod=4,
                             arrival_s=30),
    ])
    assert [(j.name, j.arrival_s) for j in jobs] == [("t-0", 0), ("lws-r0", 30), ("lws-r1", 30),
                                                      ("t-1", 60)]
    assert jobs[0].group.min_member == 3 and jobs[0].group.is_preemptible
    lws = jobs[1]
    assert lws.group.min_member == 2 and not lws.group.is_preemptible
    assert math.isinf(lws.duration_s)


def test_min_member_cannot_exceed_pods():
    with pytest.raises(ValidationError):
        GpuJobSpec(name="x", num_pods=2, min_member=3)
