"""tools.read.subject_k8s and the coverage tool's Kubernetes subjects: a named workload's pods and nodes, and the
node whose DCGM exporter is down; decide() turning that gap into `inconclusive`."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from gateway.builtin.decide import decide
from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.facts import build_facts
from tools.read.coverage import _subject
from tools.read.subject_k8s import unmonitored_nodes, workload_pods
from tools.sources.base import RawArtifact

NOW = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)
PROM = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"%s\"} 97\n"
MOUNT_FAILED = ('MountVolume.SetUp failed for volume "pod-gpu-resources" : hostPath type check failed: '
                "/var/lib/kubelet/pod-resources is not a directory")


def _facts(exporter_phase: str = "Pending", up: list[tuple[str, str]] | None = None):
    owner = ("MPIJob", "bert-l")
    pods = [pod(f"bert-l-worker-{i}", "nlp", node_name=f"g{i}", gpus=8, owner=owner) for i in range(3)]
    creating = [{"name": "exporter", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]
    pods.append(pod("dcgm-exporter-7k2", "monitoring", node_name="g2", phase=exporter_phase, owner=("DaemonSet", "dcgm-exporter"),
                    image="nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04",
                    containers=creating if exporter_phase == "Pending" else None))
    arts = [RawArtifact(format="k8s-json", data=api_list("NodeList", [node(f"g{i}") for i in range(3)]).encode(),
                        path="k8s/nodes.json", captured_at=NOW),
            RawArtifact(format="k8s-json", data=api_list("PodList", pods).encode(), path="k8s/pods.json", captured_at=NOW),
            RawArtifact(format="k8s-json", data=api_list("EventList", [core_event(
                "FailedMount", MOUNT_FAILED, name="dcgm-exporter-7k2", namespace="monitoring")]).encode(),
                path="k8s/events.json", captured_at=NOW)]
    arts += [RawArtifact(format="dcgm-prometheus-text", data=(PROM % f"g{i}").encode(), path=f"gpu/g{i}.prom",
                         node=f"g{i}", captured_at=NOW) for i in (0, 1)]
    if up is not None:
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"__name__": "up", "instance": f"{h}:9400", "job": "dcgm"}, "value": [1772619300, v]} for h, v in up]}})
        arts.append(RawArtifact(format="prometheus-query-json", data=body.encode(), path="gpu/up.json", captured_at=NOW))
    return build_facts(arts, captured_at=NOW)


def test_a_named_workload_lists_its_nodes_and_the_one_whose_exporter_pod_is_down():
    facts = _facts()
    assert [p.name for p in workload_pods(facts, "bert-l")] == ["bert-l-worker-0", "bert-l-worker-1", "bert-l-worker-2"]
    s = _subject(facts, "bert-l")
    assert (s.kind, s.known, s.nodes, s.unread_nodes) == ("workload", True, ["g0", "g1", "g2"], ["g2"])
    assert s.state == "3 pod(s): 3 Running"
    # A pod named directly carries its node too.
    assert _subject(facts, "bert-l-worker-2").unread_nodes == ["g2"]


def test_a_running_exporter_or_a_node_nobody_collected_is_not_a_gap():
    assert unmonitored_nodes(_facts(exporter_phase="Running"), ["g0", "g1", "g2"]) == []


def test_up_0_for_the_node_also_counts_as_its_exporter_down():
    facts = _facts(exporter_phase="Running", up=[("g0", "1"), ("g1", "1"), ("g2", "0")])
    assert unmonitored_nodes(facts, ["g2"]) == ["g2"]


def test_decide_answers_inconclusive_naming_the_unread_node_of_the_workload():
    s = _subject(_facts(), "bert-l").model_dump()
    out = decide("bert-l got 30% slower since noon. Which node?", [], coverage={
        "read": {"kubernetes": 7, "gpu_metrics": 2}, "subjects": [s], "unreadable_total": 0, "nothing_read": False})
    assert out["root_cause"] == "inconclusive" and out["proposed_actions"] == []
    assert "g2 (node(s) of workload bert-l)" in out["summary"]


def test_a_workload_subject_lists_its_crashed_pods_but_not_evicted_ones():
    import json

    from tools.facts import build_facts
    from tools.read.coverage import _subject
    from tools.sources.base import RawArtifact
    from datetime import datetime, timezone
    pods = {"kind": "PodList", "items": [
        {"metadata": {"name": "idx-0-a", "namespace": "search", "ownerReferences": [{"kind": "Job", "name": "idx", "controller": True}]},
         "spec": {"nodeName": "g21"}, "status": {"phase": "Failed", "containerStatuses": [
             {"name": "w", "state": {"terminated": {"exitCode": 139, "reason": "Error"}}}]}},
        {"metadata": {"name": "idx-0-b", "namespace": "search", "ownerReferences": [{"kind": "Job", "name": "idx", "controller": True}]},
         "spec": {"nodeName": "g22"}, "status": {"phase": "Failed", "reason": "Evicted", "containerStatuses": [
             {"name": "w", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}]}
    now = datetime(2026, 3, 4, tzinfo=timezone.utc)
    facts = build_facts([RawArtifact(format="k8s-json", data=json.dumps(pods).encode(), path="k8s/pods.json",
                                     captured_at=now)], captured_at=now)
    s = _subject(facts, "idx")
    assert s.kind == "workload" and s.crashed == ["search/idx-0-a exit 139 (Error)"]
