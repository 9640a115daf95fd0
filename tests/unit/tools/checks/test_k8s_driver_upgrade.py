"""check_k8s_driver_upgrade on nodes labelled by the GPU Operator's upgrade controller, and k8s_device_plugin
leaving such nodes alone."""

from __future__ import annotations

import pytest

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks.k8s_device_plugin import K8sDevicePluginConfig, check_k8s_device_plugin
from tools.checks.k8s_driver_upgrade import K8sDriverUpgradeConfig, check_k8s_driver_upgrade

CFG = K8sDriverUpgradeConfig()
LABEL = "nvidia.com/gpu-driver-upgrade-state"
PLUGIN_INIT = [{"name": "nvidia-device-plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.14.5", "ready": False,
                "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]


def _nodes(state: str, cordoned: bool = True) -> str:
    return api_list("NodeList", [node("dgx-1", allocatable=0, unschedulable=cordoned, labels={LABEL: state}),
                                 node("dgx-2", labels={LABEL: "upgrade-done"}), node("dgx-3", labels={LABEL: "upgrade-required"})])


def _driver(restarts: int = 0, looping: bool = False) -> dict:
    state = {"waiting": {"reason": "CrashLoopBackOff"}} if looping else {"running": {"startedAt": "2026-03-04T10:00:00Z"}}
    return pod("nvidia-driver-daemonset-x1", "gpu-operator", node_name="dgx-1", owner=("DaemonSet", "nvidia-driver-daemonset"),
               image="nvcr.io/nvidia/driver:535.183.01-ubuntu22.04",
               containers=[{"name": "nvidia-driver-ctr", "image": "nvcr.io/nvidia/driver:535.183.01-ubuntu22.04",
                            "ready": not looping, "restartCount": restarts, "state": state,
                            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}} if looping else {}}])


@pytest.mark.parametrize("state", ["cordon-required", "drain-required", "pod-restart-required", "uncordon-required"])
def test_an_upgrade_in_progress_is_normal_operation_explained(make_facts, state):
    # Healthy: the controller cordoned dgx-1 for the upgrade; nothing to do (and never an uncordon).
    pods = api_list("PodList", [_driver(), pod("nvidia-device-plugin-daemonset-x1", "gpu-operator", node_name="dgx-1",
                                               phase="Pending", owner=("DaemonSet", "nvidia-device-plugin-daemonset"),
                                               image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5", containers=PLUGIN_INIT)])
    facts = make_facts(("k8s/nodes.json", "k8s-json", _nodes(state)), ("k8s/pods.json", "k8s-json", pods))
    (f,) = check_k8s_driver_upgrade(facts, CFG)
    assert f.root_cause == "healthy" and f.culprits == [] and f.suggested_actions == [] and f.confidence == 0.3
    assert f"state {state}" in f.message and "1 upgrade-done, 1 upgrade-required" in f.message
    assert check_k8s_device_plugin(facts, K8sDevicePluginConfig()) == []  # 0 allocatable mid-upgrade is expected


def test_upgrade_failed_is_a_node_software_fault_already_out_of_service(make_facts):
    facts = make_facts(("k8s/nodes.json", "k8s-json", _nodes("upgrade-failed")))
    (f,) = check_k8s_driver_upgrade(facts, CFG)
    assert f.root_cause == "node_software_fault" and f.culprits == ["k8snode:dgx-1"] and f.suggested_actions == []


def test_a_new_driver_pod_crash_looping_mid_upgrade_is_a_failed_upgrade(make_facts):
    pods = api_list("PodList", [_driver(restarts=6, looping=True)])
    facts = make_facts(("k8s/nodes.json", "k8s-json", _nodes("pod-restart-required", cordoned=False)),
                       ("k8s/pods.json", "k8s-json", pods))
    (f,) = check_k8s_driver_upgrade(facts, CFG)
    assert f.root_cause == "node_software_fault" and "pod:gpu-operator/nvidia-driver-daemonset-x1" in f.culprits
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "dgx-1")]


def test_nodes_without_an_upgrade_state_or_done_are_not_reported(make_facts):
    nodes = api_list("NodeList", [node("a"), node("b", labels={LABEL: "upgrade-done"})])
    assert check_k8s_driver_upgrade(make_facts(("k8s/nodes.json", "k8s-json", nodes)), CFG) == []
