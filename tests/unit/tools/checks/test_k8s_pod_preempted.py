"""check_k8s_pod_preempted on kube-scheduler Preempted events (core/v1 shape; the uid and the older
namespace/name forms of the preemptor) and the recreated pod Pending on GPUs, through the registry."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.checks import run_checks
from tools.checks.k8s_pod_preempted import K8sPodPreemptedConfig, check_k8s_pod_preempted

WAIT = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."


def _facts(make_facts, message: str):
    events = [core_event("Preempted", message, name="pretrain-worker-3", component="default-scheduler", etype="Normal")]
    pods = [pod("pretrain-worker-3", phase="Pending", gpus=8, owner=("PyTorchJob", "pretrain"), scheduled_message=WAIT),
            pod("pretrain-worker-0", node_name="h1", gpus=8, owner=("PyTorchJob", "pretrain"))]
    return make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("h1"), node("h2")])),
                      ("k8s/pods.json", "k8s-json", api_list("PodList", pods)),
                      ("k8s/events.json", "k8s-json", api_list("EventList", events)))


def test_a_preempted_worker_whose_replacement_waits_for_gpus_is_preemption_not_a_shortage(make_facts):
    for msg in ("Preempted by pod 84175aa2-8159-82ca-9818-fa24e0a0cd89 on node h2", "Preempted by serving/chat-70b-x8h2f on node h2"):
        facts = _facts(make_facts, msg)
        (f,) = check_k8s_pod_preempted(facts, K8sPodPreemptedConfig())
        assert f.root_cause == "job_preempted" and f.culprits == ["pod:ml/pretrain-worker-3"] and f.suggested_actions == []
        assert "on h2" in f.message and "Pending while the preemptors hold the GPUs" in f.message
    causes = {g.root_cause for g in run_checks(facts).findings}
    assert "job_preempted" in causes


def test_no_preempted_event_no_finding(make_facts):
    facts = make_facts(("k8s/pods.json", "k8s-json", api_list("PodList", [pod("a", node_name="h1")])))
    assert check_k8s_pod_preempted(facts, K8sPodPreemptedConfig()) == []


def test_a_job_kueue_preempted_is_job_preempted_and_its_owner_told(make_facts):
    # kubectl get events -A (1.29 table): Kueue evicts a borrowing RayJob; its pods are deleted.
    events = """NAMESPACE   LAST SEEN   TYPE     REASON                OBJECT                        MESSAGE
vision      12m         Normal   Preempted             workload/rayjob-seg-7c2e1     Preempted to accommodate a workload (UID: 4f1c) due to reclamation within the cohort
vision      12m         Normal   Stopped               rayjob/seg                    Preempted to accommodate a workload (UID: 4f1c) due to reclamation within the cohort
vision      12m         Normal   SuccessfulDeletePod   rayjob/seg                    Deleted pod: seg-head-x2k9d
vision      12m         Normal   SuccessfulDeletePod   rayjob/seg                    Deleted pod: seg-worker-0
"""
    (f,) = check_k8s_pod_preempted(make_facts(("k8s/events.txt", "k8s-events-text", events)), K8sPodPreemptedConfig())
    assert f.root_cause == "job_preempted" and f.culprits == ["job:vision/seg"]
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [("notify_owner", "seg-head-x2k9d", "vision")]
