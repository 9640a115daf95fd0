"""The Kubernetes actions executed with the official client against a loopback API server that
serves and records real API JSON (tests/emulators/kube_api.py), each verified by reading back."""

from __future__ import annotations

import json

import pytest

from tests.emulators.kube_api import KubeApi
from tools.actions import Authorization
from tools.actions.kubernetes import CORDON_ANNOTATION, CordonNode, DrainK8sNode, EvictPod, UncordonNode
from tools.errors import ActionError


def allow(action) -> Authorization:
    return Authorization(plan_hash=action.plan().plan_hash, decision="allow")


@pytest.fixture
def api():
    with KubeApi(pdb_protected={"serving/infer-api-6f7d8c9b5-pp7sd"}) as a:
        yield a


def test_cordon_patches_with_warden_annotation_and_verifies(api):
    a = CordonNode(node="gpu-a100-01", reason="GPU hardware fault (Xid 79)")
    res = a.execute(allow(a), api.client())
    assert res.ok
    (patch,) = api.mutations()
    assert patch["method"] == "PATCH" and patch["path"] == "/api/v1/nodes/gpu-a100-01"
    assert patch["content_type"] == "application/merge-patch+json"
    assert patch["body"] == {"metadata": {"annotations": {CORDON_ANNOTATION: "warden",
                                                          "warden.io/cordon-reason": "GPU hardware fault (Xid 79)"}},
                             "spec": {"unschedulable": True}}
    assert json.loads(a.plan().commands[0][2]) == patch["body"]  # the plan shows exactly what was sent
    v = a.verify(api.client())
    assert v.ok and "unschedulable=True" in v.observed
    again = a.execute(allow(a), api.client())  # Warden's own cordon: nothing to do
    assert again.ok and again.commands == [] and len(api.mutations()) == 1


def test_someone_elses_cordon_is_never_taken_over_or_uncordoned(api):
    api.nodes["gpu-a100-02"]["spec"]["unschedulable"] = True  # `kubectl cordon` by a person
    for action in (CordonNode(node="gpu-a100-02"), UncordonNode(node="gpu-a100-02"), DrainK8sNode(node="gpu-a100-02")):
        with pytest.raises(ActionError, match="someone else"):
            action.execute(allow(action), api.client())
    api.nodes["gpu-a100-03"]["metadata"]["annotations"]["quarantineHealthEvent"] = '{"checkName":"GpuXid"}'
    with pytest.raises(ActionError, match="external remediation system"):
        c = CordonNode(node="gpu-a100-03")
        c.execute(allow(c), api.client())
    assert api.mutations() == []


def test_uncordon_undoes_only_wardens_cordon(api):
    c = CordonNode(node="gpu-a100-01")
    c.execute(allow(c), api.client())
    u = UncordonNode(node="gpu-a100-01")
    assert u.execute(allow(u), api.client()).ok
    assert api.mutations()[-1]["body"] == {"metadata": {"annotations": {CORDON_ANNOTATION: None,
                                                                        "warden.io/cordon-reason": None}},
                                           "spec": {"unschedulable": None}}
    node = api.nodes["gpu-a100-01"]
    assert "unschedulable" not in node["spec"] and CORDON_ANNOTATION not in node["metadata"]["annotations"]
    assert u.verify(api.client()).ok


def test_drain_evicts_with_eviction_bodies_and_respects_pdbs(api):
    d = DrainK8sNode(node="gpu-a100-02")
    res = d.execute(allow(d), api.client())
    posts = [r for r in api.mutations() if r["method"] == "POST"]
    # the DaemonSet's device-plugin pod is left; both serving pods are asked for, one is protected
    assert sorted(r["path"] for r in posts) == [
        "/api/v1/namespaces/serving/pods/infer-api-6f7d8c9b5-lm4zp/eviction",
        "/api/v1/namespaces/serving/pods/infer-api-6f7d8c9b5-pp7sd/eviction"]
    assert posts[0]["body"] == {"apiVersion": "policy/v1", "kind": "Eviction",
                                "metadata": {"name": posts[0]["path"].split("/")[6], "namespace": "serving"}}
    assert not res.ok and "PodDisruptionBudget" in (res.error or "") and "pp7sd" in res.error
    assert "serving/infer-api-6f7d8c9b5-pp7sd" in api.pods  # blocked: still running, never deleted
    v = d.verify(api.client())
    assert not v.ok and "pp7sd" in v.observed and "device-plugin" not in v.observed
    api.pdb_protected.clear()
    assert d.execute(allow(d), api.client()).ok and d.verify(api.client()).ok


def test_evict_pod_posts_a_real_eviction_and_verifies_it_gone(api):
    e = EvictPod(pod="dataprep-5b8f9d7c6-qw8rt", namespace="ml-team")
    assert e.execute(allow(e), api.client()).ok
    (post,) = api.mutations()
    assert post["path"] == "/api/v1/namespaces/ml-team/pods/dataprep-5b8f9d7c6-qw8rt/eviction"
    assert post["body"] == {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": "dataprep-5b8f9d7c6-qw8rt", "namespace": "ml-team"}}
    assert e.verify(api.client()).ok
    again = e.execute(allow(e), api.client())
    assert again.ok and again.commands == []  # already gone: nothing sent twice
    blocked = EvictPod(pod="infer-api-6f7d8c9b5-pp7sd", namespace="serving")
    r = blocked.execute(allow(blocked), api.client())
    assert not r.ok and "PodDisruptionBudget" in (r.error or "")
    assert not blocked.verify(api.client()).ok


def test_unknown_node_is_a_clear_error(api):
    c = CordonNode(node="nope")
    with pytest.raises(ActionError, match="cannot read Kubernetes node nope: HTTP 404"):
        c.execute(allow(c), api.client())


def test_kubernetes_targets_must_be_in_the_evidence():
    from pathlib import Path

    from agent.blast import check_targets
    from tools.models.findings import ActionSpec
    from tools.read.context import ReadContext

    snap = Path(__file__).parents[4] / "evals" / "incidents" / "k8s-pod-requests-16-gpus-on-8-gpu-nodes" / "snapshot"
    facts = ReadContext.from_snapshot(snap).facts
    known = facts.k8s_nodes[0].name
    assert check_targets(ActionSpec(type="cordon_node", node=known), facts) == []
    assert check_targets(ActionSpec(type="drain_k8s_node", node="not-a-node"), facts) == [
        "Kubernetes node 'not-a-node' is not in the evidence"]
