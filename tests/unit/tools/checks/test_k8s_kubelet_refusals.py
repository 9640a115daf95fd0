"""check_k8s_kubelet_refusals on kubelet events (API JSON) and the pods they are about."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.checks.k8s_kubelet_refusals import K8sKubeletRefusalsConfig, check_k8s_kubelet_refusals

CFG = K8sKubeletRefusalsConfig()
ADMIT = ("Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 4, "
         "Available: 0, which is unexpected")
MOUNT = ('MountVolume.SetUp failed for volume "pv-lustre" : rpc error: code = Internal desc = Could not mount '
         '"10.60.8.11@tcp:/lfs01": mount failed: exit status 19 ... mount.lustre: ... failed: No such device')


def _facts(make_facts, events, pods, nodes=("gpu-14", "gpu-15", "gpu-16")):
    return make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node(n) for n in nodes])),
                      ("k8s/pods.json", "k8s-json", api_list("PodList", pods)),
                      ("k8s/events.json", "k8s-json", api_list("EventList", events)))


def test_admission_errors_name_the_node_whose_device_manager_lost_its_devices(make_facts):
    pods = [pod(f"sweep-{i}", node_name="gpu-14", phase="Failed", reason="UnexpectedAdmissionError", containers=[])
            for i in range(2)]
    events = [core_event("UnexpectedAdmissionError", ADMIT, name=f"sweep-{i}") for i in range(2)]
    (f,) = check_k8s_kubelet_refusals(_facts(make_facts, events, pods), CFG)
    assert f.root_cause == "device_plugin_failure" and f.culprits == ["k8snode:gpu-14", "pod:ml/sweep-0", "pod:ml/sweep-1"]
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "gpu-14")]


def test_a_mount_failing_on_one_node_only_is_its_client_and_on_every_node_it_is_not(make_facts):
    pods = [pod("w-2", node_name="gpu-15", phase="Pending", containers=[])]
    (f,) = check_k8s_kubelet_refusals(_facts(make_facts, [core_event("FailedMount", MOUNT, name="w-2")], pods), CFG)
    assert f.root_cause == "fs_client_fault" and f.culprits == ["k8snode:gpu-15", "pod:ml/w-2"]
    pods = [pod(f"w-{i}", node_name=f"gpu-1{4 + i}", phase="Pending", containers=[]) for i in range(3)]
    events = [core_event("FailedMount", MOUNT, name=f"w-{i}") for i in range(3)]
    assert check_k8s_kubelet_refusals(_facts(make_facts, events, pods), CFG) == []  # the servers, not a client


def test_a_csi_driver_not_registered_on_one_node_is_that_nodes_client_and_its_stuck_pod_is_evicted(make_facts):
    # kubelet's MountDevice when the CSI node plugin (node-driver-registrar) never registered on this node.
    csi = ('MountVolume.MountDevice failed for volume "pvc-8962" : kubernetes.io/csi: attacher.MountDevice failed to '
           'create newCsiDriverClient: driver name nfs.csi.k8s.io not found in the list of registered CSI drivers')
    pods = [pod("sweep-4-r8t6b", node_name="gpu-15", phase="Pending", gpus=1, owner=("Job", "sweep-4"), containers=[
        {"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]),
            pod("sweep-2-p4w1z", node_name="gpu-14", gpus=1, owner=("Job", "sweep-2"))]
    (f,) = check_k8s_kubelet_refusals(_facts(make_facts, [core_event("FailedMount", csi, name="sweep-4-r8t6b")], pods), CFG)
    assert f.root_cause == "fs_client_fault" and f.culprits == ["k8snode:gpu-15", "pod:ml/sweep-4-r8t6b"]
    assert [(a.type, a.node or a.pod) for a in f.suggested_actions] == [("cordon_node", "gpu-15"), ("evict_pod", "sweep-4-r8t6b")]


TOPO = "Resources cannot be allocated with Topology locality"


def test_one_node_whose_topology_manager_rejects_pods_its_peers_run_is_misconfigured(make_facts):
    # pods rejected on gpu-16 only (status reason, no event needed); the same workload runs on gpu-14
    pods = [pod(f"serve-{i}", node_name="gpu-16", phase="Failed", reason="TopologyAffinityError",
                message=f"Pod was rejected: {TOPO}", containers=[]) for i in range(3)]
    pods.append(pod("serve-ok", node_name="gpu-14", gpus=8))
    (f,) = check_k8s_kubelet_refusals(_facts(make_facts, [], pods), CFG)
    assert f.root_cause == "node_config_mismatch" and f.culprits[0] == "k8snode:gpu-16" and len(f.culprits) == 4
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "gpu-16")]
    # events on every node: the request cannot be aligned anywhere, no node is to blame
    events = [core_event("TopologyAffinityError", TOPO, name=f"s-{n}", host=n) for n in ("gpu-14", "gpu-15", "gpu-16")]
    assert check_k8s_kubelet_refusals(_facts(make_facts, events, []), CFG) == []
