"""check_k8s_gpu_feature_labels on API-shaped nodes/pods and a GFD container log (`kubectl logs` of the GFD pod)."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, node, pod
from tools.checks.k8s_gpu_feature_labels import K8sGpuLabelsConfig, check_k8s_gpu_feature_labels

CFG = K8sGpuLabelsConfig()
GFD_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8",
              "nvidia.com/gpu.memory": "81920", "nvidia.com/cuda.driver.major": "535"}
BARE = {"nvidia.com/gpu.present": "true"}
GFD_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"
# GFD 0.8 log when NVML is not there yet (a different wording from the one the batch used).
GFD_LOG = ("I0304 06:02:11.000001       1 main.go:122] Loading configuration.\n"
           "E0304 06:02:11.000220       1 main.go:160] error creating NVML labeler: failed to initialize NVML: Unknown Error\n"
           "W0304 06:02:11.000300       1 main.go:255] No labels generated from any source\n")


def _gfd(node_name: str) -> dict:
    return pod(f"gpu-feature-discovery-{node_name[-2:]}", "gpu-operator", node_name=node_name,
               owner=("DaemonSet", "gpu-feature-discovery"), image=GFD_IMAGE,
               labels={"app.kubernetes.io/name": "gpu-feature-discovery"})


def _facts(make_facts, nodes, pods, log=None):
    files = [("k8s/nodes.json", "k8s-json", api_list("NodeList", nodes)), ("k8s/pods.json", "k8s-json", api_list("PodList", pods))]
    ctx = {}
    if log is not None:
        files.append(("logs/gfd/gfd.log", "job-log", log))
        ctx["logs/gfd/gfd.log"] = {"job": "gpu-operator/gpu-feature-discovery-02"}
    return make_facts(*files, **ctx)


def test_unlabelled_gpu_node_with_a_failing_gfd_and_a_pod_waiting_for_its_labels(make_facts):
    # Fires: gpu-02 serves 8 GPUs but has no product label, its GFD pod logged that NVML failed, and a pod whose
    # required affinity asks for the A100 product would fit there. Restart the GFD pod; no cordon.
    term = [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}]}]
    pods = [pod("busy", node_name="gpu-01", gpus=8), _gfd("gpu-01"), _gfd("gpu-02"),
            pod("sft-0", phase="Pending", gpus=8, affinity=term, scheduled_message="0/2 nodes are available: "
                "1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector.")]
    facts = _facts(make_facts, [node("gpu-01", labels=GFD_LABELS), node("gpu-02", labels=BARE)], pods, GFD_LOG)
    (f,) = check_k8s_gpu_feature_labels(facts, CFG)
    assert f.root_cause == "device_plugin_failure" and f.confidence == 0.85
    assert f.culprits == ["k8snode:gpu-02", "pod:gpu-operator/gpu-feature-discovery-02", "pod:ml/sft-0"]
    assert "nvidia.com/gpu.product" in f.message and "failed to initialize NVML" in f.message
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [
        ("evict_pod", "gpu-feature-discovery-02", "gpu-operator")]
    assert all(a.type not in ("cordon_node", "drain_k8s_node") for a in f.suggested_actions)


def test_label_gap_against_peers_alone_is_state_evidence_uncorroborated(make_facts):
    # Fires at 0.8: no GFD log was recorded and nobody waits, but the peers carry the labels this node lacks.
    facts = _facts(make_facts, [node("gpu-01", labels=GFD_LABELS), node("gpu-02", labels=BARE)], [_gfd("gpu-02")])
    (f,) = check_k8s_gpu_feature_labels(facts, CFG)
    assert f.confidence == 0.8 and f.culprits == ["k8snode:gpu-02", "pod:gpu-operator/gpu-feature-discovery-02"]


def test_no_labelled_gpu_node_and_no_gfd_complaint_means_gfd_is_not_deployed(make_facts):
    # Does not fire: no node has GFD labels and no GFD pod said anything: the site does not run feature discovery.
    facts = _facts(make_facts, [node("gpu-01", labels=BARE), node("gpu-02", labels=BARE)], [])
    assert check_k8s_gpu_feature_labels(facts, CFG) == []


def test_fully_labelled_and_cpu_nodes_do_not_fire(make_facts):
    # Does not fire: every GPU node is labelled; a CPU node has no GPU labels to miss.
    facts = _facts(make_facts, [node("gpu-01", labels=GFD_LABELS), node("cpu-01", gpus=None)], [_gfd("gpu-01")])
    assert check_k8s_gpu_feature_labels(facts, CFG) == []
