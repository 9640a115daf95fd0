"""check_gpu_xid on Kubernetes: the platform seam names the node k8snode:, its GPU pods, and cordons it
(tests/fixtures/k8s-json)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.checks.gpu_xid import XidConfig, check_gpu_xid

FIX = Path(__file__).parents[3] / "fixtures"
NODES = (FIX / "k8s-json" / "1.29-nodelist-gpu.json").read_text()
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
XID79 = "[Wed Mar  4 06:28:11 2026] NVRM: Xid (PCI:0000:20:1d): 79, pid=219, name=python3, GPU has fallen off the bus.\n"
XID62 = "[Wed Mar  4 06:28:11 2026] NVRM: Xid (PCI:0000:20:1d): 62, pid=219, name=python3, Internal micro-controller halt\n"
XID13 = "[Wed Mar  4 06:28:11 2026] NVRM: Xid (PCI:0000:20:1d): 13, pid=219, name=python3, Graphics Exception\n"
KERNEL = "kernel/gpu-a100-01.log"


def _failed_pod_on_01() -> str:
    """The fixture's pods plus a failed 8-GPU PyTorchJob worker on gpu-a100-01 (exit 1)."""
    doc = json.loads(PODS)
    worker = json.loads(json.dumps(next(p for p in doc["items"] if p["metadata"]["name"] == "bert-pretrain-0")))
    worker["metadata"].update(name="dpo-13b-worker-2", namespace="research",
                              ownerReferences=[{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "dpo-13b",
                                                "uid": "o-dpo", "controller": True}])
    worker["spec"]["nodeName"] = "gpu-a100-01"
    worker["status"]["phase"] = "Failed"
    worker["status"]["containerStatuses"][0].update(ready=False, state={"terminated": {
        "exitCode": 1, "reason": "Error", "startedAt": "2026-03-04T01:00:00Z", "finishedAt": "2026-03-04T06:58:40Z"}})
    doc["items"].append(worker)
    return json.dumps(doc)


def test_xid79_on_a_kubernetes_node_names_node_and_gpu_pods_and_cordons(make_facts):
    # Fires: Xid 79 (fallen off the bus) on gpu-a100-01; the failed worker and the crash-looping resnet pod
    # (2 GPUs) used GPUs there; the CPU-only dataprep pod is not a culprit.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _failed_pod_on_01()),
                       (KERNEL, "kernel-log", XID79), **{KERNEL: {"node": "gpu-a100-01"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.root_cause == "gpu_hardware_fault" and f.strength == "direct"
    assert f.culprits == ["k8snode:gpu-a100-01", "pod:ml-team/resnet-train-7d9c6b5f4-x2kqp", "pod:research/dpo-13b-worker-2"]
    assert "Xid 79 (fallen off the bus) (threshold 1)" in f.message
    # Never a Slurm action on a Kubernetes node: cordon, and no Slurm drain or resubmit; Xid 79 needs a node
    # reboot (RESTART_BM), so the node is drained of its pods first; the worker crash-looping (the resnet
    # ReplicaSet pod) is evicted so its controller places it elsewhere.
    assert [(a.type, a.node or a.pod) for a in f.suggested_actions] == [
        ("cordon_node", "gpu-a100-01"), ("drain_k8s_node", "gpu-a100-01"), ("evict_pod", "resnet-train-7d9c6b5f4-x2kqp")]
    assert (f.evidence[0].file, f.evidence[0].line) == (KERNEL, 1)


def test_application_xid_does_not_fire(make_facts):
    # Does not fire: Xid 13 is the application's fault, not the GPU's.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), (KERNEL, "kernel-log", XID13), **{KERNEL: {"node": "gpu-a100-01"}})
    assert check_gpu_xid(facts, XidConfig()) == []


def test_xid_on_a_host_the_api_does_not_list_is_a_slurm_node(make_facts):
    # Fires the Slurm way: no Kubernetes node objects (a Slurm cluster's kernel log): node: culprit, drain.
    facts = make_facts((KERNEL, "kernel-log", XID79), **{KERNEL: {"node": "gpu-a100-01"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[0] == "node:gpu-a100-01"
    assert [a.type for a in f.suggested_actions] == ["drain_node"]


def test_already_cordoned_node_is_not_cordoned_again(make_facts):
    # Fires without an action: the node is already unschedulable (someone cordoned it).
    doc = json.loads(NODES)
    for item in doc["items"]:
        if item["metadata"]["name"] == "gpu-a100-01":
            item["spec"]["unschedulable"] = True
    facts = make_facts(("k8s/nodes.json", "k8s-json", json.dumps(doc)), (KERNEL, "kernel-log", XID62),
                       **{KERNEL: {"node": "gpu-a100-01"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert f.culprits[0] == "k8snode:gpu-a100-01" and f.suggested_actions == []
    # a GPU fallen off the bus needs a reboot: the cordoned node's pods must still leave before it
    rebooted = make_facts(("k8s/nodes.json", "k8s-json", json.dumps(doc)), (KERNEL, "kernel-log", XID79),
                          **{KERNEL: {"node": "gpu-a100-01"}})
    (g,) = check_gpu_xid(rebooted, XidConfig())
    assert [a.type for a in g.suggested_actions] == ["drain_k8s_node"]


def test_threshold_is_configurable(make_facts):
    # Does not fire: one Xid event is below min_events=2.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), (KERNEL, "kernel-log", XID79), **{KERNEL: {"node": "gpu-a100-01"}})
    assert check_gpu_xid(facts, XidConfig(min_events=2)) == []


XID154_REBOOT = ("[Wed Mar  4 06:29:02 2026] NVRM: Xid (PCI:0000:20:1d): 154, GPU recovery action changed from 0x0 (None) "
                 "to 0x2 (Node Reboot Required)\n")
XID154_RESET = ("[Wed Mar  4 06:29:02 2026] NVRM: Xid (PCI:0000:20:1d): 154, GPU recovery action changed from 0x0 (None) "
                "to 0x1 (GPU Reset Required)\n")


def test_xid154_asking_for_a_node_reboot_drains_the_kubernetes_node(make_facts):
    # Fires with cordon and drain: the driver asks for a node reboot; the pods must leave first.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), (KERNEL, "kernel-log", XID79 + XID154_REBOOT),
                       **{KERNEL: {"node": "gpu-a100-01"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert [(a.type, a.node) for a in f.suggested_actions][:2] == [("cordon_node", "gpu-a100-01"),
                                                                   ("drain_k8s_node", "gpu-a100-01")]


def test_xid154_asking_for_a_gpu_reset_only_cordons(make_facts):
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), (KERNEL, "kernel-log", XID62 + XID154_RESET),
                       **{KERNEL: {"node": "gpu-a100-01"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert "drain_k8s_node" not in [a.type for a in f.suggested_actions]


def test_xid154_reboot_on_a_slurm_node_proposes_no_kubernetes_drain(make_facts):
    facts = make_facts(("kernel/gpu017.log", "kernel-log", XID79 + XID154_REBOOT), **{"kernel/gpu017.log": {"node": "gpu017"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    assert "drain_k8s_node" not in [a.type for a in f.suggested_actions] and "drain_node" in [a.type for a in f.suggested_actions]


def test_a_replicaset_pod_crash_looping_on_the_faulty_gpu_node_is_evicted_a_bare_pod_is_not(make_facts):
    from tests.unit.tools.checks._k8s_api import api_list, node, pod
    looping = [{"name": "main", "image": "asr:1", "ready": False, "restartCount": 6,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": "2026-03-04T10:10:00Z"}}}]
    pods = api_list("PodList", [pod("asr-7c9-x1", "speech", node_name="gpu-n92", gpus=1, containers=looping,
                                    owner=("ReplicaSet", "asr-7c9")),
                                pod("bare-0", "speech", node_name="gpu-n92", gpus=1, containers=looping)])
    kernel = "[Mon Mar  4 10:00:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n"
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("gpu-n92")])),
                       ("k8s/pods.json", "k8s-json", pods), ("kernel/gpu-n92.log", "kernel-log", kernel),
                       **{"kernel/gpu-n92.log": {"node": "gpu-n92"}})
    (f,) = check_gpu_xid(facts, XidConfig())
    evicted = [(a.pod, a.namespace) for a in f.suggested_actions if a.type == "evict_pod"]
    assert evicted == [("asr-7c9-x1", "speech")] and "pod:speech/bare-0" in f.culprits


def test_an_xid_that_needs_only_a_gpu_reset_cordons_without_draining_the_node(make_facts):
    for xid, drained in ((62, False), (95, False), (48, False), (79, True)):
        line = XID79.replace(": 79, ", f": {xid}, ")
        facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", _failed_pod_on_01()),
                           (KERNEL, "kernel-log", line), **{KERNEL: {"node": "gpu-a100-01"}})
        (f,) = check_gpu_xid(facts, XidConfig())
        types = [a.type for a in f.suggested_actions]
        assert "cordon_node" in types and ("drain_k8s_node" in types) is drained, (xid, types)
