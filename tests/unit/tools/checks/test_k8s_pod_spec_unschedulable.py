"""check_k8s_pod_spec_unschedulable on API-shaped nodes and pods (raw PodList/NodeList, kubectl List) and events in
several kube-scheduler wordings (1.17 "didn't match node selector", 1.22 "had taint {k: v}, that the pod didn't
tolerate", 1.27+ "untolerated taint")."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event, kubectl_list, node, pod
from tools.checks.k8s_pod_spec_unschedulable import K8sPodSpecConfig, check_k8s_pod_spec_unschedulable

CFG = K8sPodSpecConfig()
L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4", "nvidia.com/gpu.product": "NVIDIA-L4"}
A100 = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
OWNER = ("StatefulSet", "eval-l4")


def _facts(make_facts, nodes, pods, events=None, events_fmt="k8s-json"):
    files = [("k8s/nodes.json", "k8s-json", api_list("NodeList", nodes)), ("k8s/pods.json", "k8s-json", pods)]
    if events is not None:
        files.append(("k8s/events.json" if events_fmt == "k8s-json" else "k8s/events.txt", events_fmt, events))
    return make_facts(*files)


def test_affinity_value_typo_matches_no_node_and_names_the_closest_value(make_facts):
    # Fires: required node affinity asks for accelerator "nvidia-l4s" (typo); two L4 nodes have 4 free GPUs each.
    # Pods arrive as a kubectl List (kind on each item), the message in the 1.21 wording.
    term = [{"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-l4s"]}]}]
    msg = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity."
    pods = kubectl_list([("Pod", pod(f"eval-l4-{i}", phase="Pending", gpus=1, owner=OWNER, affinity=term,
                                     scheduled_message=msg)) for i in range(2)])
    facts = _facts(make_facts, [node("gke-l4-a", gpus=4, labels=L4), node("gke-l4-b", gpus=4, labels=L4),
                                node("gke-a100-a", gpus=8, labels=A100)], pods)
    (f,) = check_k8s_pod_spec_unschedulable(facts, CFG)
    assert f.root_cause == "user_code_error" and f.strength == "state" and f.confidence == 0.85  # message agrees
    assert f.culprits == ["pod:ml/eval-l4-0", "pod:ml/eval-l4-1"]
    assert "closest: nvidia-l4" in f.message and "nvidia-l4 ×2" in f.message
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [("notify_owner", "eval-l4-0", "ml")]


def test_missing_toleration_for_a_dedication_taint_other_workloads_tolerate(make_facts):
    # Fires: the nodes with room carry dedicated=llm:NoSchedule; a running vLLM pod there tolerates it, the new
    # pod does not (1.22 wording). The key is not an extended resource: the running tolerant pod shows the intent.
    taint = [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]
    tol = [{"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}]
    msg = "0/2 nodes are available: 1 node(s) had taint {dedicated: llm}, that the pod didn't tolerate, 1 Insufficient nvidia.com/gpu."
    pods = api_list("PodList", [
        pod("vllm-0", node_name="llm-1", gpus=4, owner=("StatefulSet", "vllm"), tolerations=tol),
        pod("rerank-5d8f-x", phase="Pending", gpus=2, owner=("ReplicaSet", "rerank-5d8f"), scheduled_message=msg)])
    facts = _facts(make_facts, [node("llm-1", gpus=8, taints=taint), node("cpu-1", gpus=None)], pods)
    (f,) = check_k8s_pod_spec_unschedulable(facts, CFG)
    assert f.culprits == ["pod:ml/rerank-5d8f-x"] and "dedicated=llm:NoSchedule" in f.message
    assert "vllm tolerate it" in f.message


def test_gpu_resource_taint_counts_as_dedication_without_tolerant_neighbours(make_facts):
    # Fires: nvidia.com/gpu:NoSchedule (no value) on the only GPU node; no pod runs there yet; the pod requests
    # nvidia.com/gpu, which is what ExtendedResourceToleration would have tolerated for it.
    taint = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    pods = api_list("PodList", [pod("nb-0", phase="Pending", gpus=1, scheduled_message="0/1 nodes are available: "
                                    "1 node(s) had untolerated taint {nvidia.com/gpu: }.")])
    (f,) = check_k8s_pod_spec_unschedulable(_facts(make_facts, [node("g1", gpus=2, taints=taint)], pods), CFG)
    assert "nvidia.com/gpu:NoSchedule" in f.message


def test_node_state_taints_are_never_the_pods_mistake(make_facts):
    # Does not fire: the node with room is under disk-pressure (the kubelet's taint), the other is full.
    taint = [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]
    pods = api_list("PodList", [pod("busy", node_name="g2", gpus=8),
                                pod("t-0", phase="Pending", gpus=4, scheduled_message="0/2 nodes are available: 1 node(s) "
                                    "had untolerated taint {node.kubernetes.io/disk-pressure: }, 1 Insufficient nvidia.com/gpu.")])
    facts = _facts(make_facts, [node("g1", taints=taint), node("g2")], pods)
    assert check_k8s_pod_spec_unschedulable(facts, CFG) == []


def test_a_selector_that_matches_only_full_nodes_is_capacity_not_spec(make_facts):
    # Does not fire: the selector matches the A100 node, which is busy; waiting for it is not a spec error.
    pods = api_list("PodList", [pod("busy", node_name="gke-a100-a", gpus=8),
                                pod("p-0", phase="Pending", gpus=8, selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
                                    scheduled_message="0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) "
                                    "didn't match Pod's node affinity/selector.")])
    facts = _facts(make_facts, [node("gke-a100-a", labels=A100), node("gke-l4-a", gpus=4, labels=L4)], pods)
    assert check_k8s_pod_spec_unschedulable(facts, CFG) == []


def test_missing_gfd_labels_on_an_idle_gpu_node_are_left_to_feature_discovery(make_facts):
    # Does not fire: nothing has the product label the pod selects, but the idle GPU node has no GFD labels at
    # all — the labels are missing, not misspelt (k8s_gpu_feature_labels reports it).
    pods = api_list("PodList", [pod("p-0", phase="Pending", gpus=8, selector={"nvidia.com/gpu.product": "NVIDIA-H200"},
                                    scheduled_message="0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.")])
    facts = _facts(make_facts, [node("h200-new", labels={"nvidia.com/gpu.present": "true"})], pods)
    assert check_k8s_pod_spec_unschedulable(facts, CFG) == []


def test_a_node_that_takes_the_pod_now_means_the_message_is_stale(make_facts):
    # Does not fire: an L4 node matching the selector has room and no taint: the scheduler will place it.
    pods = api_list("PodList", [pod("p-0", phase="Pending", gpus=1, selector={"nvidia.com/gpu.product": "NVIDIA-L4"},
                                    scheduled_message="0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")])
    assert check_k8s_pod_spec_unschedulable(_facts(make_facts, [node("l4", gpus=4, labels=L4)], pods), CFG) == []


def test_a_maintenance_taint_nobody_tolerates_is_not_called_a_spec_error(make_facts):
    # Does not fire: an admin's maintenance taint on the only node with room; no running pod tolerates it and it
    # names no resource the pod asks for: the node is held out, the pod is not wrong.
    taint = [{"key": "example.org/maintenance", "value": "true", "effect": "NoSchedule"}]
    pods = api_list("PodList", [pod("p-0", phase="Pending", gpus=1, scheduled_message="0/1 nodes are available: "
                                    "1 node(s) had untolerated taint {example.org/maintenance: true}.")])
    assert check_k8s_pod_spec_unschedulable(_facts(make_facts, [node("g1", gpus=4, taints=taint)], pods), CFG) == []


def test_events_only_every_node_fails_the_selector_in_the_1_17_wording(make_facts):
    # Fires at symptom strength: no node or pod objects were read, but the scheduler said every one of the 3 nodes
    # fails the node selector (kubectl get events -n ml table, 1.17 wording).
    table = ("LAST SEEN          TYPE      REASON             OBJECT            MESSAGE\n"
             "2m (x30 over 1h)   Warning   FailedScheduling   pod/infer-0       0/3 nodes are available: 3 node(s) didn't match node selector.\n")
    (f,) = check_k8s_pod_spec_unschedulable(make_facts(("k8s/events.txt", "k8s-events-text", table)), CFG)
    assert f.strength == "symptom" and f.confidence == 0.6 and f.culprits == ["pod:default/infer-0"]
    assert "every one of the 3 nodes fails its node selector" in f.message
    # Some nodes failing the selector and the rest full is no spec error, whatever was read.
    partial = table.replace("3 node(s) didn't match node selector", "1 node(s) didn't match node selector, 2 Insufficient nvidia.com/gpu")
    assert check_k8s_pod_spec_unschedulable(make_facts(("k8s/events.txt", "k8s-events-text", partial)), CFG) == []
