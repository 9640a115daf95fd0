"""check_k8s_device_plugin on API node/pod JSON (tests/fixtures/k8s-json)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.checks.k8s_device_plugin import K8sDevicePluginConfig, check_k8s_device_plugin

FIX = Path(__file__).parents[3] / "fixtures"
NODES = (FIX / "k8s-json" / "1.29-nodelist-gpu.json").read_text()
NODE001 = (FIX / "k8s-json" / "1.29-node-allocatable-zero.json").read_text()  # capacity 16, allocatable 0
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
EVENTS_A = (FIX / "k8s-events-text" / "1.29-all-namespaces.txt").read_text()
XID79 = "[Wed Mar  4 09:30:21 2026] NVRM: Xid (PCI:0000:b3:00): 79, pid=0, name=python, GPU has fallen off the bus.\n"
DP = "nvidia-device-plugin-daemonset-7xk2p"


def _dp_pod(mutate=None) -> str:
    doc = json.loads(PODS)
    doc["items"] = [p for p in doc["items"] if p["metadata"]["name"] == DP]
    if mutate:
        mutate(doc["items"][0])
    return json.dumps(doc)


def test_crash_looping_device_plugin_pod_fires_on_its_node(make_facts):
    # Fires: the device-plugin daemonset pod on gpu-a100-02 is in CrashLoopBackOff (9 restarts); the
    # node is Ready, so new GPU pods would land on a node whose GPUs nobody serves.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", PODS),
                       ("k8s/events.txt", "k8s-events-text", EVENTS_A))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.root_cause == "device_plugin_failure" and f.strength == "state"
    assert f.culprits == ["k8snode:gpu-a100-02", f"pod:kube-system/{DP}"]
    assert "CrashLoopBackOff, 9 restarts" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "gpu-a100-02")]
    assert ("k8s/events.txt", 3) in [(e.file, e.line) for e in f.evidence]


def test_gpu_node_with_zero_allocatable_fires(make_facts):
    # Fires: node001 has 16 GPUs in capacity and 0 allocatable, no Xid seen: the plugin is not serving.
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.culprits == ["k8snode:node001"]
    assert "allocatable nvidia.com/gpu 0 of capacity 16 (threshold: > 0 on a GPU node)" in f.message
    assert f.evidence[0].file == "k8s/node001.json"


def test_gpu_labelled_node_without_any_gpu_resource_fires(make_facts):
    # Fires: GPU feature discovery labels the node as having GPUs, but nvidia.com/gpu is not advertised at all.
    doc = json.loads(NODE001)
    del doc["status"]["capacity"]["nvidia.com/gpu"], doc["status"]["allocatable"]["nvidia.com/gpu"]
    facts = make_facts(("k8s/node001.json", "k8s-json", json.dumps(doc)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert "no nvidia.com/gpu advertised" in f.message and "Tesla-V100-SXM2-32GB" in f.message


def test_zero_allocatable_after_hardware_xid_is_left_to_the_gpu_checks(make_facts):
    # Does not fire: Xid 79 on node001 — the plugin marked the GPUs unhealthy because they are.
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("kernel/node001.log", "kernel-log", XID79),
                       **{"kernel/node001.log": {"node": "node001"}})
    assert check_k8s_device_plugin(facts, K8sDevicePluginConfig()) == []


def test_plugin_pod_on_a_not_ready_node_is_left_to_node_not_ready(make_facts):
    # Does not fire: the pod's node gpu-a100-03 is NotReady; that is the cause, not the plugin.
    def move(p):
        p["spec"]["nodeName"] = "gpu-a100-03"
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _dp_pod(move)))
    assert check_k8s_device_plugin(facts, K8sDevicePluginConfig()) == []


def test_healthy_plugin_pod_and_full_allocatable_do_not_fire(make_facts):
    # Does not fire: the plugin pod runs and is ready; nodes advertise their GPUs (7 of 8 is not 0).
    def healthy(p):
        c = p["status"]["containerStatuses"][0]
        c.update(state={"running": {"startedAt": "2026-03-04T08:00:00Z"}}, ready=True, restartCount=0, lastState={})
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _dp_pod(healthy)))
    assert check_k8s_device_plugin(facts, K8sDevicePluginConfig()) == []


def test_cordoned_node_gets_no_cordon_action(make_facts):
    # Fires without an action: node001 is already cordoned.
    doc = json.loads(NODE001)
    doc["spec"]["unschedulable"] = True
    facts = make_facts(("k8s/node001.json", "k8s-json", json.dumps(doc)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.suggested_actions == []


def test_gpu_stack_pods_failing_on_fabric_manager_are_the_nodes_software(make_facts):
    # Fires node_software_fault: the plugin pod's last run died with CUDA's "system not yet initialized"
    # (NVSwitch system, Fabric Manager not running): the plugin is fine, the node's stack under it is not.
    def fm_down(pod):
        st = pod["status"]["containerStatuses"][0]
        st.setdefault("lastState", {})["terminated"] = {
            "exitCode": 1, "reason": "Error", "finishedAt": "2026-03-04T10:10:00Z",
            "message": "Failed to allocate device vector A (error code system not yet initialized)!"}
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _dp_pod(fm_down)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.root_cause == "node_software_fault" and "Fabric Manager" in f.message
    assert [a.type for a in f.suggested_actions] == ["cordon_node"]


def test_gpu_stack_pods_are_recognised_by_their_image_whatever_their_name(make_facts):
    def renamed(pod):
        pod["metadata"]["name"] = "site-gpu-agent-x2"
        pod["metadata"]["labels"] = {}
        pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "site-gpu-agent", "uid": "u", "controller": True}]
        pod["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"
        pod["status"]["containerStatuses"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _dp_pod(renamed)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.culprits == ["k8snode:gpu-a100-02", "pod:kube-system/site-gpu-agent-x2"]


def _mig_node(state: str | None, *, slices: int, whole: int = 0, config: str = "all-3g.40gb") -> dict:
    doc = json.loads(NODE001)
    node = doc if doc.get("kind") == "Node" else doc["items"][0]
    labels = node["metadata"].setdefault("labels", {})
    labels.update({"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": config})
    if state:
        labels["nvidia.com/mig.config.state"] = state
    for part in ("capacity", "allocatable"):
        node["status"][part]["nvidia.com/gpu"] = str(whole)
        node["status"][part].pop("nvidia.com/mig-3g.40gb", None)
        if slices:
            node["status"][part]["nvidia.com/mig-3g.40gb"] = str(slices)
    return doc


def _pending_mig_pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "inference"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-3g.40gb": "1"}}}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient nvidia.com/mig-3g.40gb."}]}}


def test_mig_nodes_serving_slices_and_no_whole_gpus_are_healthy(make_facts):
    # Does not fire: under the mixed strategy a node split into 3g.40gb slices offers 0 nvidia.com/gpu
    # and 16 nvidia.com/mig-3g.40gb — that is the layout working, not a plugin failure.
    facts = make_facts(("k8s/node001.json", "k8s-json", json.dumps(_mig_node("success", slices=16))))
    assert check_k8s_device_plugin(facts, K8sDevicePluginConfig()) == []


def test_mig_manager_failure_names_the_node_and_the_pods_waiting_for_its_slices(make_facts):
    # Fires: mig.config.state=failed, no slices advertised (the GPUs are still whole), and two pods wait for
    # nvidia.com/mig-3g.40gb. The node still serves 8 whole GPUs, so it is not cordoned.
    pods = {"apiVersion": "v1", "kind": "List", "items": [_pending_mig_pod("embed-a"), _pending_mig_pod("embed-b")]}
    facts = make_facts(("k8s/node001.json", "k8s-json", json.dumps(_mig_node("failed", slices=0, whole=8))),
                       ("k8s/pods.json", "k8s-json", json.dumps(pods)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.culprits == ["k8snode:node001", "pod:inference/embed-a", "pod:inference/embed-b"]
    assert "mig.config.state=failed" in f.message and f.suggested_actions == []


def test_a_crash_looping_dcgm_exporter_is_not_a_plugin_failure(make_facts):
    # Does not fire: a dcgm-exporter pod crash-loops but the node serves all its GPUs; metrics are lost,
    # not GPUs (k8s_crash_loop names the pod).
    def exporter(pod):
        pod["metadata"]["name"] = "dcgm-exporter-5tq8h"
        pod["metadata"]["namespace"] = "monitoring"
        pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "dcgm-exporter", "controller": True}]
        pod["metadata"]["labels"] = {"app.kubernetes.io/name": "dcgm-exporter"}
        for c in pod["status"].get("containerStatuses", []):
            c["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04"
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _dp_pod(exporter)))
    assert [f for f in check_k8s_device_plugin(facts, K8sDevicePluginConfig()) if "dcgm-exporter" in f.message] == []


def _stack_pods(driver_looping: bool) -> str:
    """A GPU Operator node: the driver pod (crash-looping or not) and a device plugin waiting in its init container."""
    from tests.unit.tools.checks._k8s_api import api_list, pod
    drv_state = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}} \
        if driver_looping else {"running": {"startedAt": "2026-03-04T08:00:00Z"}}
    driver = pod("nvidia-driver-daemonset-q2w8x", "nvidia-gpu-operator", node_name="node001",
                 owner=("DaemonSet", "nvidia-driver-daemonset"), image="nvcr.io/nvidia/driver:550.54.15-rhel9.2",
                 containers=[{"name": "nvidia-driver-ctr", "image": "nvcr.io/nvidia/driver:550.54.15-rhel9.2",
                              "ready": not driver_looping, "restartCount": 40 if driver_looping else 0, "state": drv_state,
                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}} if driver_looping else {}}])
    plugin = pod("nvidia-device-plugin-daemonset-m4k7z", "nvidia-gpu-operator", node_name="node001", phase="Running",
                 owner=("DaemonSet", "nvidia-device-plugin-daemonset"), image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5")
    return api_list("PodList", [driver, plugin])


def test_a_failing_driver_container_is_the_nodes_software_not_the_plugin(make_facts):
    # Fires node_software_fault: the driver daemonset pod crash-loops (OpenShift namespace, RHEL image) and the
    # node offers 0 of 16 GPUs: every operand waits for the driver.
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _stack_pods(True)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.root_cause == "node_software_fault" and "the NVIDIA driver container" in f.message
    assert "pod:nvidia-gpu-operator/nvidia-driver-daemonset-q2w8x" in f.culprits
    assert [a.type for a in f.suggested_actions] == ["cordon_node"]


def test_a_plugin_that_cannot_register_with_the_kubelet_is_restarted_not_cordoned(make_facts):
    # Fires device_plugin_failure: 0 of 16 allocatable, the driver is fine, and the plugin's own log (v0.14 wording)
    # says it cannot reach the kubelet: restart the plugin pod (its DaemonSet recreates it).
    log = ("I0304 09:58:00.1 1 main.go:256] Retreiving plugins.\n"
           "E0304 09:58:05.2 1 main.go:123] Could not contact Kubelet, retrying. Did you enable the device plugin feature gate?\n"
           "E0304 09:58:10.3 1 server.go:147] Could not register device plugin: context deadline exceeded\n")
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _stack_pods(False)),
                       ("logs/dp.log", "job-log", log),
                       **{"logs/dp.log": {"job": "nvidia-gpu-operator/nvidia-device-plugin-daemonset-m4k7z"}})
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.root_cause == "device_plugin_failure"
    assert "pod:nvidia-gpu-operator/nvidia-device-plugin-daemonset-m4k7z" in f.culprits
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [
        ("evict_pod", "nvidia-device-plugin-daemonset-m4k7z", "nvidia-gpu-operator")]


def test_gpus_offered_under_a_shared_name_are_a_config_mismatch_not_a_node_to_cordon(make_facts):
    # Time-slicing with renameByDefault: the plugin advertises nvidia.com/gpu.shared and no nvidia.com/gpu.
    doc = json.loads(NODE001)
    del doc["status"]["capacity"]["nvidia.com/gpu"], doc["status"]["allocatable"]["nvidia.com/gpu"]
    doc["status"]["capacity"]["nvidia.com/gpu.shared"] = doc["status"]["allocatable"]["nvidia.com/gpu.shared"] = "32"
    facts = make_facts(("k8s/node001.json", "k8s-json", json.dumps(doc)))
    (f,) = check_k8s_device_plugin(facts, K8sDevicePluginConfig())
    assert f.root_cause == "device_plugin_failure" and "32 x nvidia.com/gpu.shared instead" in f.message
    assert "cordon_node" not in [a.type for a in f.suggested_actions]
