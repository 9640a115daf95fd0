"""check_k8s_quota_exceeded on events.k8s.io/v1 and core/v1 FailedCreate events, ResourceQuota and workload objects."""

from __future__ import annotations

import json

import pytest

from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.checks.k8s_quota_exceeded import K8sQuotaConfig, check_k8s_quota_exceeded, read_quota_error

CFG = K8sQuotaConfig()
EXCEEDED = ('Error creating: pods "rerank-7f9c-abcde" is forbidden: exceeded quota: team-gpus, requested: '
            'requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8')


def _quota(ns: str, hard: str, used: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team-gpus", "namespace": ns},
                       "spec": {"hard": {"requests.nvidia.com/gpu": hard}},
                       "status": {"hard": {"requests.nvidia.com/gpu": hard}, "used": {"requests.nvidia.com/gpu": used}}})


def _events_v1(message: str) -> str:
    """events.k8s.io/v1: regarding / note / reportingController / series."""
    return json.dumps({"kind": "EventList", "apiVersion": "events.k8s.io/v1", "items": [{
        "metadata": {"name": "rerank-7f9c.17f9", "namespace": "search"}, "eventTime": "2026-03-04T10:10:00.000000Z",
        "reportingController": "replicaset-controller", "reportingInstance": "replicaset-controller",
        "action": "Create", "reason": "FailedCreate", "type": "Warning", "note": message,
        "regarding": {"kind": "ReplicaSet", "namespace": "search", "name": "rerank-7f9c", "apiVersion": "apps/v1"},
        "series": {"count": 14, "lastObservedTime": "2026-03-04T10:14:00.000000Z"}}]})


@pytest.mark.parametrize("message, expected", [
    (EXCEEDED, ("team-gpus", "exceeded", {"requested": "requests.nvidia.com/gpu=2", "used": "requests.nvidia.com/gpu=8",
                                          "limited": "requests.nvidia.com/gpu=8"})),
    ('pods "x" is forbidden: exceeded quota: compute, requested: limits.memory=64Gi,requests.nvidia.com/gpu=1, '
     'used: limits.memory=960Gi,requests.nvidia.com/gpu=7, limited: limits.memory=1Ti,requests.nvidia.com/gpu=8',
     ("compute", "exceeded", {"requested": "limits.memory=64Gi,requests.nvidia.com/gpu=1",
                              "used": "limits.memory=960Gi,requests.nvidia.com/gpu=7",
                              "limited": "limits.memory=1Ti,requests.nvidia.com/gpu=8"})),
    ('pods "x" is forbidden: failed quota: team-gpus: must specify requests.nvidia.com/gpu',
     ("team-gpus", "must_specify", {"resources": "requests.nvidia.com/gpu"})),
    ("Created pod: rerank-7f9c-abcde", None),
])
def test_admission_errors_are_read(message, expected):
    assert read_quota_error(message) == expected


def test_replicaset_creates_rejected_by_the_quota_are_a_scheduling_wait(make_facts):
    # Fires: the replicaset controller's creates are rejected (events.k8s.io/v1 event, 14 in the series); the quota
    # object confirms 8 of 8 used; the cluster has free GPUs.
    facts = make_facts(("k8s/events.json", "k8s-json", _events_v1(EXCEEDED)),
                       ("k8s/quota.json", "k8s-json", _quota("search", "8", "8")),
                       ("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("g1"), node("g2")])))
    (f,) = check_k8s_quota_exceeded(facts, CFG)
    assert f.root_cause == "scheduler_wait" and f.culprits == ["job:search/rerank-7f9c"] and f.confidence == 0.85
    assert "14 rejected create(s)" in f.message and "16 GPU(s) free" in f.message and f.suggested_actions == []
    assert any("used 8 of 8" in e.text for e in f.evidence)


def test_job_with_no_pod_and_no_events_left_against_the_quota_headroom(make_facts):
    # Fires: events expired; the PyTorchJob has no pod, needs 8 GPUs per pod, and the quota has 4 left.
    job = json.dumps({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "ft", "namespace": "nlp"},
                      "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
                          {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}},
                      "status": {"conditions": [{"type": "Created", "status": "True"}]}})
    holders = api_list("PodList", [pod(f"hpo-{i}", "nlp", node_name="g1", gpus=4, owner=("Job", f"hpo-{i}")) for i in range(7)])
    facts = make_facts(("k8s/job.json", "k8s-json", job), ("k8s/quota.json", "k8s-json", _quota("nlp", "32", "28")),
                       ("k8s/pods.json", "k8s-json", holders))
    (f,) = check_k8s_quota_exceeded(facts, CFG)
    assert f.culprits == ["job:nlp/ft"] and "4 of 32 requests.nvidia.com/gpu left" in f.message
    assert "28 GPU(s) of it held by 7 pod(s)" in f.message and f.confidence == 0.8


def test_must_specify_is_the_templates_mistake(make_facts):
    # Fires user_code_error: the quota tracks requests.nvidia.com/gpu and the Job's template does not request it.
    ev = api_list("EventList", [core_event("FailedCreate", 'Error creating: pods "prep-x" is forbidden: failed quota: '
                                           "team-gpus: must specify requests.nvidia.com/gpu", kind="Job", name="prep",
                                           namespace="nlp", component="job-controller")])
    (f,) = check_k8s_quota_exceeded(make_facts(("k8s/events.json", "k8s-json", ev)), CFG)
    assert f.root_cause == "user_code_error" and f.culprits == ["job:nlp/prep"]


def test_a_job_with_room_in_its_quota_or_running_pods_is_not_blocked(make_facts):
    # Does not fire: 8 of 32 used (room for the Job's 8) and no FailedCreate event.
    job = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ev", "namespace": "nlp"},
                      "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
                      "status": {"active": 0}})
    facts = make_facts(("k8s/job.json", "k8s-json", job), ("k8s/quota.json", "k8s-json", _quota("nlp", "32", "8")))
    assert check_k8s_quota_exceeded(facts, CFG) == []
