"""tools.platform's Kubernetes side: whose log a job-log file is, and what evacuating a node means."""

from __future__ import annotations

from datetime import datetime, timezone

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.facts import build_facts
from tools.platform import evacuate, log_owner, node_ref, evict_hurt
from tools.sources.base import RawArtifact

NOW = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)


def _facts():
    arts = [RawArtifact(format="k8s-json", data=api_list("NodeList", [node("g1")]).encode(), path="k8s/nodes.json",
                        captured_at=NOW),
            RawArtifact(format="k8s-json", data=api_list("PodList", [pod("tts-0", "voice", node_name="g1")]).encode(),
                        path="k8s/pods.json", captured_at=NOW)]
    return build_facts(arts, captured_at=NOW)


def test_a_pod_log_names_the_pod_and_a_slurm_job_id_stays_a_job():
    facts = _facts()
    culprit, notify = log_owner(facts, "voice/tts-0", "CUDA out of memory")
    assert culprit == "pod:voice/tts-0" and (notify.pod, notify.namespace, notify.job) == ("tts-0", "voice", None)
    culprit, notify = log_owner(facts, "4242", "CUDA out of memory")
    assert culprit == "job:4242" and notify.job == "4242"
    # A namespace/name nobody read stays what the manifest called it.
    assert log_owner(facts, "voice/gone-0", "x")[0] == "job:voice/gone-0"


def test_evacuating_drains_a_kubernetes_node_and_adds_nothing_on_slurm():
    facts = _facts()
    assert [(a.type, a.node) for a in evacuate(facts, node_ref(facts, "g1"), "reboot")] == [("drain_k8s_node", "g1")]
    slurm = build_facts([], captured_at=NOW)
    assert evacuate(slurm, node_ref(slurm, "gpu017"), "reboot") == []


def test_evict_hurt_names_only_owned_pods_the_node_keeps_failing():
    from tests.unit.tools.checks._k8s_api import pod
    from tools.models.k8s import K8sPod
    from tools.parsers.k8s.k8s_json import parse_k8s_json
    import json
    restarted = pod("w-0", node_name="g3", owner=("PyTorchJob", "ft"), containers=[
        {"name": "main", "ready": True, "restartCount": 1, "state": {"running": {}},
         "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}])
    looping = pod("w-1", node_name="g3", owner=("ReplicaSet", "ev"), containers=[
        {"name": "main", "ready": False, "restartCount": 18, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])
    fine = pod("w-2", node_name="g3", owner=("ReplicaSet", "ev"))
    bare = pod("dbg", node_name="g3", containers=[
        {"name": "main", "ready": False, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])
    text = json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [restarted, looping, fine, bare]})
    pods = [p for p in parse_k8s_json(text, path="k8s/pods.json") if isinstance(p, K8sPod)]
    evicted = [(a.type, a.pod) for a in evict_hurt(pods, "g3", "GPU fault")]
    assert evicted == [("evict_pod", "w-0"), ("evict_pod", "w-1")]  # not the healthy one, not the unowned one


def test_a_pod_key_given_as_a_job_names_the_pod():
    from tools.models.findings import ActionSpec
    spec = ActionSpec(type="notify_owner", job="nlp/bert-large-pt-master-0", reason="x")
    assert (spec.job, spec.namespace, spec.pod) == (None, "nlp", "bert-large-pt-master-0")
    assert ActionSpec(type="notify_owner", job="4242_7").job == "4242_7"  # Slurm ids are left alone
