"""check_k8s_gpu_capacity: Pending on Insufficient nvidia.com/gpu — unhealthy GPUs (K8S-02) or a full cluster."""

from __future__ import annotations

from tools.knowledge.precedence import confidence

import json
from pathlib import Path

from tools.checks.k8s_gpu_capacity import K8sGpuCapacityConfig, check_k8s_gpu_capacity

FIX = Path(__file__).parents[3] / "fixtures"
NODES = (FIX / "k8s-json" / "1.29-nodelist-gpu.json").read_text()
NODE001 = (FIX / "k8s-json" / "1.29-node-allocatable-zero.json").read_text()  # capacity 16, allocatable 0
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
EVENTS = (FIX / "k8s-events-text" / "1.29-default.txt").read_text()
XID48 = "[Wed Mar  4 09:30:21 2026] NVRM: Xid (PCI:0000:b3:00): 48, pid=0, name=python, DBE (0x1) detected.\n"
XID13 = "[Wed Mar  4 09:30:21 2026] NVRM: Xid (PCI:0000:b3:00): 13, pid=77, name=python, Graphics Exception\n"


def _one_gpu_pending_pod() -> str:
    """The fixture's pending pod, asking for 1 GPU on a one-node cluster (the #58 / #165 situation)."""
    doc = json.loads(PODS)
    pod = next(p for p in doc["items"] if p["metadata"]["name"] == "llm-finetune-0")
    for c in pod["spec"]["containers"]:
        c["resources"]["requests"]["nvidia.com/gpu"] = c["resources"]["limits"]["nvidia.com/gpu"] = "1"
    pod["status"]["conditions"][0]["message"] = ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: "
                                                 "0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    doc["items"] = [pod]
    return json.dumps(doc)


def test_unhealthy_gpus_without_xid_blame_the_device_plugin(make_facts):
    # Fires device_plugin_failure: node001 has 16 GPUs but 0 allocatable, the pod needs 1 and would
    # fit if they were healthy, and no Xid is seen anywhere.
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _one_gpu_pending_pod()))
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "device_plugin_failure" and f.confidence == confidence("state")
    assert f.culprits == ["k8snode:node001", "pod:ml-team/llm-finetune-0"]
    assert "0 allocatable of 16 GPUs (16 marked unhealthy by the device plugin with no Xid seen)" in f.message
    # confirm the GPUs before anyone restarts the plugin to re-advertise them (K8S-02)
    assert [(a.type, a.node) for a in f.suggested_actions] == [("run_gpu_diagnostic", "node001")]
    assert f.evidence[0].file == "k8s/node001.json"


def test_unhealthy_gpus_after_hardware_xid_are_a_gpu_fault(make_facts):
    # Fires gpu_hardware_fault: same node, and its kernel log has Xid 48 (double-bit ECC error),
    # which is why the device plugin marked the GPUs unhealthy (K8S-02).
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _one_gpu_pending_pod()),
                       ("kernel/node001.log", "kernel-log", XID48), **{"kernel/node001.log": {"node": "node001"}})
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "gpu_hardware_fault" and f.strength == "direct"
    assert f.culprits[0] == "k8snode:node001" and "after a GPU hardware Xid" in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "node001")]
    assert ("kernel/node001.log", 1) in [(e.file, e.line) for e in f.evidence]


def test_xid_69_marks_the_gpu_unhealthy_but_is_not_a_hardware_xid(make_facts):
    # Fires device_plugin_failure at 0.8: Xid 69 (graphics engine class error) is what made the plugin
    # mark the GPU unhealthy (k8s-device-plugin#189), but it is not in gpu_xid's hardware catalogue.
    xid69 = ("[Wed Mar  4 09:30:21 2026] NVRM: Xid (PCI:0000:3a:00): 69, pid=2231811, name=python3, Class Error: "
             "ChId 0008, Class 0000c7c0, Offset 00000000, Data 00000000, ErrorCode 00000004\n")
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _one_gpu_pending_pod()),
                       ("kernel/node001.log", "kernel-log", xid69), **{"kernel/node001.log": {"node": "node001"}})
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "device_plugin_failure" and f.confidence == confidence("state", corroborated=True)
    assert "after Xid 69, not a hardware Xid" in f.message
    assert f.suggested_actions[0].type == "run_gpu_diagnostic"


def test_application_xid_does_not_make_it_hardware(make_facts):
    # Fires device_plugin_failure, not gpu_hardware_fault: Xid 13 is an application error, not the GPU.
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001), ("k8s/pods.json", "k8s-json", _one_gpu_pending_pod()),
                       ("kernel/node001.log", "kernel-log", XID13), **{"kernel/node001.log": {"node": "node001"}})
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "device_plugin_failure"


def test_degraded_node_that_cannot_fit_the_pod_anyway_is_a_full_cluster(make_facts):
    # Fires insufficient_gpu_capacity: gpu-a100-02 lost 1 of 8 GPUs, but 2 are in use there, so even
    # healthy it would offer 6 < the 8 the pod wants; gpu-a100-01 has 8 with 3 used; gpu-a100-03 is NotReady.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", PODS))
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "insufficient_gpu_capacity" and f.confidence == confidence("state")
    assert f.culprits == ["pod:ml-team/llm-finetune-0"]
    assert "1 pod(s) Pending on Insufficient nvidia.com/gpu (threshold 1)" in f.message
    assert "at most 6 on one node, largest request 8" in f.message
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [("notify_owner", "llm-finetune-0", "ml-team")]


def test_events_only_pending_pod_is_capacity_at_low_confidence(make_facts):
    # Fires insufficient_gpu_capacity from the FailedScheduling row alone (no node objects to weigh).
    facts = make_facts(("k8s/events.txt", "k8s-events-text", EVENTS))
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.strength == "heuristic" and "node objects not collected" in f.message
    assert f.culprits == ["pod:default/llm-finetune-0"]
    assert (f.evidence[0].file, f.evidence[0].line) == ("k8s/events.txt", 5)


def test_pod_scheduled_since_the_event_does_not_fire(make_facts):
    # Does not fire: the FailedScheduling event is old news, the pod now runs on gpu-a100-01.
    doc = json.loads(PODS)
    pod = next(p for p in doc["items"] if p["metadata"]["name"] == "llm-finetune-0")
    pod["metadata"]["namespace"] = "default"
    pod["spec"]["nodeName"] = "gpu-a100-01"
    pod["status"]["phase"] = "Running"
    pod["status"]["conditions"][0].update(status="True", reason=None, message=None)
    doc["items"] = [pod]
    facts = make_facts(("k8s/pods.json", "k8s-json", json.dumps(doc)), ("k8s/events.txt", "k8s-events-text", EVENTS))
    assert check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig()) == []


def test_no_pending_pods_no_finding(make_facts):
    # Does not fire: node001 has lost its GPUs but nobody is waiting for them (k8s_device_plugin's job).
    facts = make_facts(("k8s/node001.json", "k8s-json", NODE001))
    assert check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig()) == []


def test_request_larger_than_any_node_can_never_fit(make_facts):
    # Fires insufficient_gpu_capacity at high confidence: 16 GPUs requested, the largest node has 8.
    doc = json.loads(PODS)
    pod = next(p for p in doc["items"] if p["metadata"]["name"] == "llm-finetune-0")
    for c in pod["spec"]["containers"]:
        c["resources"]["requests"]["nvidia.com/gpu"] = c["resources"]["limits"]["nvidia.com/gpu"] = "16"
    doc["items"] = [pod]
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", json.dumps(doc)))
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "insufficient_gpu_capacity" and f.confidence == confidence("state", corroborated=True)
    assert "16 requested, largest node capacity 8" in f.message and "can never be scheduled" in f.message
    assert f.culprits == ["pod:ml-team/llm-finetune-0"] and f.suggested_actions[0].type == "notify_owner"


def test_pod_that_fits_now_is_not_reported(make_facts):
    # Does not fire: the scheduler's "Insufficient" is stale — a job on gpu-a100-01 finished, so that
    # Ready node now has 8 free GPUs for the 8-GPU pod, which will be placed on the next retry.
    doc = json.loads(PODS)
    doc["items"] = [p for p in doc["items"] if p["spec"].get("nodeName") != "gpu-a100-01"]
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", json.dumps(doc)))
    assert check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig()) == []


def _events(*rows: tuple[str, str, str, str]) -> str:
    """A ``kubectl get events -n ml-team`` table (no NAMESPACE column): (last seen, type, reason, message)."""
    head = "LAST SEEN   TYPE      REASON             OBJECT                 MESSAGE\n"
    return head + "".join(f"{seen:<11} {kind:<9} {reason:<18} pod/llm-finetune-0     {msg}\n"
                          for seen, kind, reason, msg in rows)


_FAILED = ("68s", "Warning", "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def test_a_scale_up_on_its_way_is_explained_as_normal(make_facts):
    # Healthy, with the reason: the autoscaler triggered a scale-up for the pod 56 s ago (within its
    # 15-minute provision time); the events table has no NAMESPACE column, so the pod read names it.
    events = _events(_FAILED, ("56s", "Normal", "TriggeredScaleUp",
                               "pod triggered scale-up: [{eks-gpu-p5 2->3 (max: 6)}]"))
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", PODS),
                       ("k8s/events.txt", "k8s-events-text", events))
    (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert f.root_cause == "healthy" and f.culprits == [] and f.suggested_actions == []
    assert "autoscaler adds a node" in f.message and f.evidence[0].line == 3


def test_a_scale_up_older_than_the_provision_time_or_refused_is_a_capacity_problem(make_facts):
    for later in (("20m", "Normal", "TriggeredScaleUp", "pod triggered scale-up: [{eks-gpu-p5 2->3 (max: 6)}]"),
                  ("30s", "Normal", "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached")):
        rows = [_FAILED, later] if later[0] != "30s" else \
            [_FAILED, ("56s", "Normal", "TriggeredScaleUp", "pod triggered scale-up: [{g 2->3 (max: 3)}]"), later]
        facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", PODS),
                           ("k8s/events.txt", "k8s-events-text", _events(*rows)))
        (f,) = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
        assert f.root_cause == "insufficient_gpu_capacity" and f.culprits == ["pod:ml-team/llm-finetune-0"], later


def test_free_gpus_on_nodes_its_zonal_volume_rules_out_do_not_count(make_facts):
    # The same freed node as above, but the scheduler says the pod's volume is bound to other nodes: the free GPUs
    # are not the pod's to take, the wait is for capacity where its volume lives.
    doc = json.loads(PODS)
    doc["items"] = [p for p in doc["items"] if p["spec"].get("nodeName") != "gpu-a100-01"]
    for p in doc["items"]:
        for c in p.get("status", {}).get("conditions", []):
            if c.get("type") == "PodScheduled" and "Insufficient" in c.get("message", ""):
                c["message"] = "0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 Insufficient nvidia.com/gpu."
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", json.dumps(doc)))
    found = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    assert [f.root_cause for f in found] == ["insufficient_gpu_capacity"]
    assert "volume node affinity conflict" in found[0].message


def _cordon_01(n):
    if n["metadata"]["name"] == "gpu-a100-01":
        n["spec"]["unschedulable"] = True
        n["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                                "timeAdded": "2026-03-04T03:11:27Z"}]


def test_pods_that_would_fit_on_a_cordoned_node_nobody_explained_are_inconclusive(make_facts):
    doc = json.loads(NODES)
    for n in doc["items"]:
        _cordon_01(n)
    pods = json.loads(PODS)
    pods["items"] = [p for p in pods["items"] if p["spec"].get("nodeName") != "gpu-a100-01"]  # it is empty now
    facts = make_facts(("k8s/nodes.json", "k8s-json", json.dumps(doc)), ("k8s/pods.json", "k8s-json", json.dumps(pods)))
    found = check_k8s_gpu_capacity(facts, K8sGpuCapacityConfig())
    held = [f for f in found if f.root_cause == "inconclusive"]
    assert held and held[0].culprits == ["k8snode:gpu-a100-01"] and "nothing read says who cordoned it" in held[0].message
    assert not held[0].suggested_actions and not [f for f in found if f.root_cause == "insufficient_gpu_capacity"]
