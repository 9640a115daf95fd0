"""check_k8s_node_pressure on API-shaped nodes (conditions, taints), Evicted pods and kubelet events."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.checks.k8s_node_pressure import K8sNodePressureConfig, check_k8s_node_pressure

CFG = K8sNodePressureConfig()
MEM = [{"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory",
        "message": "kubelet has insufficient memory available", "lastTransitionTime": "2026-03-04T09:50:00Z"}]
DISK_CLEARED = [{"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
                 "lastTransitionTime": "2026-03-04T10:05:00Z"}]


def test_memory_pressure_and_its_evictions_are_host_oom_on_the_node(make_facts):
    # Fires host_oom: MemoryPressure=True with its taint, the kubelet evicted a pod "low on resource: memory",
    # and a pending pod does not tolerate the memory-pressure taint. Cordon while it holds.
    taint = [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]
    pods = [pod("prep-0", node_name="cpu-big-1", phase="Failed", reason="Evicted", containers=[],
                message="The node was low on resource: memory. Threshold quantity: 100Mi, available: 52340Ki. "
                        "Container prep was using 401Gi, request is 64Gi, has larger consumption of memory."),
            pod("prep-1", phase="Pending", scheduled_message="0/1 nodes are available: 1 node(s) had untolerated taint "
                "{node.kubernetes.io/memory-pressure: }.")]
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("cpu-big-1", gpus=None, taints=taint,
                                                                              conditions=MEM)])),
                       ("k8s/pods.json", "k8s-json", api_list("PodList", pods)))
    (f,) = check_k8s_node_pressure(facts, CFG)
    assert f.root_cause == "host_oom" and f.confidence == 0.85
    assert f.culprits == ["k8snode:cpu-big-1", "pod:ml/prep-0", "pod:ml/prep-1"]
    assert "MemoryPressure" in f.message and "evicted 1 pod(s)" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "cpu-big-1")]


def test_evictions_after_disk_pressure_cleared_are_reported_without_action(make_facts):
    # Fires at symptom strength: DiskPressure is False again, but the kubelet's Evicted events (ephemeral-storage)
    # and its reclaim events say what happened; nothing to cordon any more.
    events = [core_event("Evicted", "The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 3%.",
                         name="etl-0", host="gpu-3"),
              core_event("FreeDiskSpaceFailed", "Failed to garbage collect required amount of images. Attempted to free "
                         "82000000000 bytes, but only found 0 bytes eligible to free.", kind="Node", name="gpu-3",
                         namespace=None, host="gpu-3")]
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("gpu-3", conditions=DISK_CLEARED)])),
                       ("k8s/events.json", "k8s-json", api_list("EventList", events)))
    (f,) = check_k8s_node_pressure(facts, CFG)
    assert f.root_cause == "storage_full" and f.strength == "state" and f.suggested_actions == []
    assert "was under" in f.message and "image garbage collection found nothing" in f.message


def test_a_pods_own_ephemeral_storage_limit_is_about_the_pod_not_the_node(make_facts):
    # The pod was evicted for exceeding its own limit (its own spec and writes): storage_full about the pod and its
    # Pending replacement, the node is fine and is not cordoned; the event shape ("exceeded its local ephemeral
    # storage limit") reads the same.
    pods = [pod("scratch-0", node_name="gpu-3", phase="Failed", reason="Evicted", containers=[], owner=("Job", "scratch"),
                message="Pod ephemeral local storage usage exceeds the total limit of containers 1Gi."),
            pod("scratch-1", phase="Pending", owner=("Job", "scratch"),
                scheduled_message="0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")]
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("gpu-3", conditions=DISK_CLEARED)])),
                       ("k8s/pods.json", "k8s-json", api_list("PodList", pods)))
    (f,) = check_k8s_node_pressure(facts, CFG)
    assert f.root_cause == "storage_full" and f.culprits == ["pod:ml/scratch-0", "pod:ml/scratch-1"]
    assert [(a.type, a.pod, a.node) for a in f.suggested_actions] == [("notify_owner", "scratch-0", None)]
    events = [core_event("Evicted", 'Container trainer exceeded its local ephemeral storage limit "20Gi". ',
                         name="etl-0", host="gpu-3")]
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("gpu-3", conditions=DISK_CLEARED)])),
                       ("k8s/events.json", "k8s-json", api_list("EventList", events)))
    (f,) = check_k8s_node_pressure(facts, CFG)
    assert f.culprits == ["pod:ml/etl-0"] and f.root_cause == "storage_full"


def test_evictions_whose_pressure_cleared_days_ago_are_leftover_records(make_facts):
    # Healthy, with the reason: DiskPressure cleared four days before the capture (NOW 2026-03-04T10:15Z); the
    # Failed/Evicted pods are the kubelet's records, their replacements run. Recent evictions stay a fault.
    old = [{"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
            "lastTransitionTime": "2026-02-28T04:51:10Z"}]
    pods = [pod(f"sd-ft-{i}", node_name="dgx-02", phase="Failed", reason="Evicted", containers=[],
                message="The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 4%.")
            for i in range(3)] + [pod("sd-ft-9", node_name="dgx-01")]
    for cond, cause in ((old, "healthy"), (DISK_CLEARED, "storage_full")):
        facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("dgx-02", conditions=cond), node("dgx-01")])),
                           ("k8s/pods.json", "k8s-json", api_list("PodList", pods)))
        (f,) = check_k8s_node_pressure(facts, CFG)
        assert f.root_cause == cause and f.suggested_actions == []
    assert f.culprits[0] == "k8snode:dgx-02"
