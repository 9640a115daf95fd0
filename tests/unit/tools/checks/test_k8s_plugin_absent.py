"""check_k8s_plugin_absent on API-shaped Nodes/Pods with nvidia-smi CSV of the bare node."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks.k8s_plugin_absent import K8sPluginAbsentConfig, check_k8s_plugin_absent

SMI = "index, name, memory.total [MiB]\n0, NVIDIA H200, 143771 MiB\n1, NVIDIA H200, 143771 MiB\n"
TAINT = [{"key": "pool", "value": "h200", "effect": "NoSchedule"}]


def _facts(make_facts, *, plugin: bool = True, smi_on: str | None = "b1"):
    nodes = api_list("NodeList", [node("a1"), node("b1", gpus=None, taints=TAINT), node("b2", gpus=None, taints=TAINT),
                                  node("cpu1", gpus=None)])
    pods = [pod("train-0", "ml", node_name="a1", gpus=8, owner=("Job", "train"))]
    if plugin:
        pods.append(pod("nvidia-device-plugin-daemonset-x7k2p", "gpu-operator", node_name="a1",
                        owner=("DaemonSet", "nvidia-device-plugin-daemonset"),
                        image="nvcr.io/nvidia/k8s-device-plugin:v0.15.0"))
    files = [("k8s/nodes.json", "k8s-json", nodes), ("k8s/pods.json", "k8s-json", api_list("PodList", pods))]
    ctx = {}
    if smi_on:
        files.append(("gpu/smi.csv", "nvidia-smi-csv", SMI))
        ctx["gpu/smi.csv"] = {"node": smi_on}
    return make_facts(*files, **ctx)


def test_a_node_with_gpus_but_no_plugin_pod_and_its_pool_peer_are_named(make_facts):
    (f,) = check_k8s_plugin_absent(_facts(make_facts), K8sPluginAbsentConfig())
    assert f.root_cause == "device_plugin_failure" and f.suggested_actions == []
    assert f.culprits[0] == "k8snode:b1" and "nvidia-smi lists 2 GPU(s)" in f.message


def test_no_host_evidence_or_no_plugin_anywhere_says_nothing(make_facts):
    assert check_k8s_plugin_absent(_facts(make_facts, smi_on=None), K8sPluginAbsentConfig()) == []  # CPU-like nodes
    assert check_k8s_plugin_absent(_facts(make_facts, plugin=False), K8sPluginAbsentConfig()) == []  # no plugin at all
