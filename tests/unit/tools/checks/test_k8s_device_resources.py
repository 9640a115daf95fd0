"""check_k8s_device_resources on API-shaped nodes and pods: RDMA shared devices, SR-IOV VFs, AMD GPUs."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks.k8s_device_resources import K8sDeviceResourcesConfig, check_k8s_device_resources

CFG = K8sDeviceResourcesConfig()
RDMA = "rdma/rdma_shared_device_a"
SRIOV = "openshift.io/mlnxnics"


def _node(name: str, resource: str, count: str, *, ready: str = "True") -> dict:
    n = node(name, ready=ready)
    n["status"]["capacity"][resource] = count
    n["status"]["allocatable"][resource] = count
    return n


def _facts(make_facts, nodes: list[dict], pods: list[dict]):
    return make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", nodes)),
                      ("k8s/pods.json", "k8s-json", api_list("PodList", pods)))


def _pending(name: str, resource: str) -> dict:
    return pod(name, "llm", phase="Pending", gpus=8,
               scheduled_message=f"0/4 nodes are available: 1 Insufficient {resource}, 3 Insufficient nvidia.com/gpu.")


def test_an_empty_rdma_pool_on_one_node_restarts_that_nodes_plugin_pod(make_facts):
    nodes = [_node("g21", RDMA, "1k"), _node("g22", RDMA, "0"), _node("g23", RDMA, "1k")]
    pods = [pod("rdma-shared-dp-ds-k7q2n", "kube-system", node_name="g22", owner=("DaemonSet", "rdma-shared-dp-ds"),
                image="ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"),
            pod("kube-proxy-9x2lq", "kube-system", node_name="g22", owner=("DaemonSet", "kube-proxy"),
                image="registry.k8s.io/kube-proxy:v1.29.4"),
            pod("rdma-shared-dp-ds-a1b2c", "kube-system", node_name="g21", owner=("DaemonSet", "rdma-shared-dp-ds")),
            _pending("moe-ft-worker-3", RDMA)]
    (f,) = check_k8s_device_resources(_facts(make_facts, nodes, pods), CFG)
    assert f.root_cause == "device_plugin_failure" and f.culprits == ["k8snode:g22", "pod:llm/moe-ft-worker-3"]
    assert [(a.type, a.namespace, a.pod) for a in f.suggested_actions] == [
        ("evict_pod", "kube-system", "rdma-shared-dp-ds-k7q2n")]
    assert "offers 0 rdma/rdma_shared_device_a while 2 other node(s)" in f.message


def test_sriov_vfs_missing_on_one_node_is_found_without_any_pending_pod(make_facts):
    nodes = [_node("w1", SRIOV, "8"), _node("w2", SRIOV, "8"), _node("w3", SRIOV, "0")]
    pods = [pod("sriov-device-plugin-5jw7p", "nvidia-network-operator", node_name="w3",
                owner=("DaemonSet", "sriov-device-plugin"), image="ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.7.0")]
    (f,) = check_k8s_device_resources(_facts(make_facts, nodes, pods), CFG)
    assert f.culprits == ["k8snode:w3"] and f.suggested_actions[0].pod == "sriov-device-plugin-5jw7p"


def test_no_plugin_pod_recorded_cordons_the_node_instead(make_facts):
    nodes = [_node("m1", "amd.com/gpu", "8"), _node("m2", "amd.com/gpu", "0")]
    (f,) = check_k8s_device_resources(_facts(make_facts, nodes, []), CFG)
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "m2")]


def test_a_resource_nobody_offers_or_wants_and_notready_nodes_are_left_alone(make_facts):
    nodes = [_node("a", RDMA, "0"), _node("b", RDMA, "0"), _node("c", SRIOV, "0", ready="False"), _node("d", SRIOV, "4")]
    assert check_k8s_device_resources(_facts(make_facts, nodes, []), CFG) == []
    # Hugepages and Kubernetes' own resources are not device-plugin pools.
    n = node("e")
    n["status"]["allocatable"]["hugepages-1Gi"] = "0"
    assert check_k8s_device_resources(_facts(make_facts, [n, node("f")], []), CFG) == []
