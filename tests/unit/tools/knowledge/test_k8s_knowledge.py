"""The Kubernetes knowledge tables: kube-scheduler's wording across versions, sandbox errors of each container
runtime, exit codes, node-pressure evictions, and the GPU Operator's upgrade states and sharing labels."""

from __future__ import annotations

import pytest

from tools.knowledge.gpu_operator import DRIVER_INSTALL_FAILED, GFD_NO_LABELS, PLUGIN_NOT_REGISTERED, gpu_replicas, \
    upgrade_in_progress
from tools.knowledge.k8s_pressure import cause_of_resource, eviction_resource
from tools.knowledge.k8s_runtime import describe_exit, sandbox_problem
from tools.knowledge.k8s_scheduling import is_node_state_taint, read_failed_scheduling
from tools.models.k8s import K8sNode


@pytest.mark.parametrize("message, total, kinds", [
    # 1.27+: untolerated taint, with the preemption tail (not read).
    ("0/8 nodes are available: 4 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {nvidia.com/gpu: present}. "
     "preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.", 8,
     [(4, "insufficient", None), (4, "taint", "nvidia.com/gpu")]),
    # 1.18-1.24: the comma inside "had taint {k: v}, that the pod didn't tolerate".
    ("0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, "
     "2 Insufficient nvidia.com/gpu.", 3, [(1, "taint", "node-role.kubernetes.io/master"), (2, "insufficient", None)]),
    # 1.10-1.17.
    ("0/3 nodes are available: 1 node(s) had taints that the pod didn't tolerate, 2 node(s) didn't match node selector.", 3,
     [(1, "taint", None), (2, "selector", None)]),
    ("0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu.", 4,
     [(1, "unschedulable", None), (3, "insufficient", None)]),
    # 1.5-1.9 predicate summaries: no total.
    ("pod (x) failed to fit in any node\nfit failure summary on nodes : MatchNodeSelector (2), PodToleratesNodeTaints (1)",
     None, [(2, "selector", None), (1, "taint", None)]),
    ("No nodes are available that match all of the following predicates:: Insufficient nvidia.com/gpu (2), "
     "MatchNodeSelector (1).", None, [(2, "insufficient", None), (1, "selector", None)]),
])
def test_failed_scheduling_wordings(message, total, kinds):
    v = read_failed_scheduling(message)
    assert v is not None and v.total == total
    assert [(r.nodes, r.kind, r.taint_key) for r in v.reasons] == kinds


def test_not_a_scheduler_message_and_node_state_taints():
    assert read_failed_scheduling("Successfully assigned ml/x to g1") is None
    assert is_node_state_taint("node.kubernetes.io/disk-pressure") and is_node_state_taint("node.cloudprovider.kubernetes.io/uninitialized")
    assert not is_node_state_taint("nvidia.com/gpu") and not is_node_state_taint("node-role.kubernetes.io/control-plane")


@pytest.mark.parametrize("message, says", [
    ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured',
     "no 'nvidia' runtime handler"),
    ("Failled to create pod sandbox:rpc error code = Unknown desc = failed to find runtime handler nvidia from runtime list map[]",
     "no 'nvidia' runtime handler"),
    ('Failed create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "kata" not supported', "no 'kata' runtime handler"),
    ('networkPlugin cni failed to set up pod "x_ml" network: failed to find plugin "flannel" in path [/opt/cni/bin]; '
     "Failed to create pod sandbox", "CNI network plugin failed"),
    ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image", None),
    ("Back-off pulling image", None),
])
def test_sandbox_errors_of_each_runtime(message, says):
    got = sandbox_problem(message)
    assert (got is None) if says is None else (says in (got or ""))


def test_exit_codes_are_128_plus_the_signal():
    assert describe_exit(137).startswith("exit 137 = 128 + SIGKILL") and describe_exit(139).startswith("exit 139 = 128 + SIGSEGV")
    assert describe_exit(2) == "exit 2" and describe_exit(None) == "exit code unknown"


def test_eviction_messages_name_the_resource_and_its_cause():
    assert eviction_resource("The node was low on resource: ephemeral-storage. Threshold quantity: 10%") == "ephemeral-storage"
    assert eviction_resource("The node was low on resource: [memory].") == "memory"
    assert eviction_resource("Pod ephemeral local storage usage exceeds the total limit of containers 1Gi.") is None
    assert (cause_of_resource("ephemeral-storage"), cause_of_resource("memory"), cause_of_resource("pids")) == \
        ("storage_full", "host_oom", None)


def test_gpu_operator_states_sharing_and_log_lines():
    def n(labels, product=None):
        return K8sNode(name="g", labels=labels, gpu_product=product)
    assert upgrade_in_progress(n({"nvidia.com/gpu-driver-upgrade-state": "wait-for-jobs-required"}))
    assert not upgrade_in_progress(n({"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"}))
    assert not upgrade_in_progress(n({"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"}))
    assert gpu_replicas(n({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"})) == 4
    assert gpu_replicas(n({}, "NVIDIA-A100-SXM4-40GB-SHARED")) == 2 and gpu_replicas(n({})) == 1
    assert DRIVER_INSTALL_FAILED.search("Unable to find a match: kernel-headers-5.14.0-427.el9.x86_64")
    assert PLUGIN_NOT_REGISTERED.search("Could not register device plugin: context deadline exceeded")
    assert GFD_NO_LABELS.search("W0304 main.go:255] No labels generated from any source")
