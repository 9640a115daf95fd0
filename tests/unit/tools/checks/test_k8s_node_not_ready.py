"""check_k8s_node_not_ready on API node/pod JSON and kubectl event tables (tests/fixtures/k8s-*)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.checks.k8s_node_not_ready import K8sNodeNotReadyConfig, check_k8s_node_not_ready

FIX = Path(__file__).parents[3] / "fixtures"
NODES = (FIX / "k8s-json" / "1.29-nodelist-gpu.json").read_text()
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
EVENTS_A = (FIX / "k8s-events-text" / "1.29-all-namespaces.txt").read_text()


def _nodes(mutate) -> str:
    doc = json.loads(NODES)
    for n in doc["items"]:
        mutate(n)
    return json.dumps(doc)


def test_unknown_node_fires_with_its_pods_and_cordon(make_facts):
    # Fires: gpu-a100-03 Ready=Unknown (NodeStatusUnknown) since 09:48:40, 26 min before capture
    # (threshold 60 s); bert-pretrain-0 is still bound to it.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", PODS),
                       ("k8s/events.txt", "k8s-events-text", EVENTS_A))
    (f,) = check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig())
    assert f.root_cause == "node_unresponsive" and f.confidence == 0.85
    assert f.culprits == ["k8snode:gpu-a100-03", "pod:ml-team/bert-pretrain-0"]
    assert "Ready=Unknown for 26 min" in f.message and "threshold 60 s" in f.message
    assert "Kubelet stopped posting node status." in f.message
    assert [(a.type, a.node) for a in f.suggested_actions] == [("cordon_node", "gpu-a100-03")]
    assert f.evidence[0].file == "k8s/nodes.json" and "unreachable:NoExecute" in f.evidence[0].text
    assert ("k8s/events.txt", 2) in [(e.file, e.line) for e in f.evidence]


def test_not_ready_for_less_than_threshold_does_not_fire(make_facts):
    # Does not fire: 26 min NotReady is below a 1 h threshold.
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES))
    assert check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig(min_not_ready_s=3600)) == []


def test_all_ready_nodes_do_not_fire(make_facts):
    # Does not fire: every Ready condition is True.
    def ready(n):
        for c in n["status"]["conditions"]:
            if c["type"] == "Ready":
                c.update(status="True", reason="KubeletReady", message="kubelet is posting ready status")
    facts = make_facts(("k8s/nodes.json", "k8s-json", _nodes(ready)))
    assert check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig()) == []


def test_already_cordoned_node_gets_no_cordon(make_facts):
    # Fires (the node is still NotReady) but proposes nothing: it is already cordoned.
    def cordon(n):
        n["spec"]["unschedulable"] = True
    facts = make_facts(("k8s/nodes.json", "k8s-json", _nodes(cordon)))
    (f,) = check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig())
    assert f.suggested_actions == [] and "cordoned" in f.evidence[0].text


def test_events_only_node_not_ready_fires_at_lower_confidence(make_facts):
    # Fires: only events were collected; NodeNotReady 26m ago with no NodeReady since.
    facts = make_facts(("k8s/events.txt", "k8s-events-text", EVENTS_A))
    (f,) = check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig())
    assert f.culprits == ["k8snode:gpu-a100-03"] and f.confidence == 0.6
    assert (f.evidence[0].file, f.evidence[0].line) == ("k8s/events.txt", 2)
    assert "26 min ago" in f.message


def test_events_only_node_ready_again_does_not_fire(make_facts):
    # Does not fire: a NodeReady 5m ago is newer than the NodeNotReady 26m ago.
    table = ("LAST SEEN   TYPE     REASON         OBJECT             MESSAGE\n"
             "26m         Normal   NodeNotReady   node/gpu-a100-03   Node gpu-a100-03 status is now: NodeNotReady\n"
             "5m          Normal   NodeReady      node/gpu-a100-03   Node gpu-a100-03 status is now: NodeReady\n")
    facts = make_facts(("k8s/events.txt", "k8s-events-text", table))
    assert check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig()) == []


def test_daemonset_pods_are_not_culprits(make_facts):
    # Fires, but names only the workload: the device-plugin DaemonSet pod moved onto the lost node is
    # there by design on every node, so it is not a stranded workload.
    doc = json.loads(PODS)
    for p in doc["items"]:
        if p["metadata"]["name"].startswith("nvidia-device-plugin"):
            p["spec"]["nodeName"] = "gpu-a100-03"
    facts = make_facts(("k8s/nodes.json", "k8s-json", NODES), ("k8s/pods.json", "k8s-json", json.dumps(doc)))
    (f,) = check_k8s_node_not_ready(facts, K8sNodeNotReadyConfig())
    assert f.culprits == ["k8snode:gpu-a100-03", "pod:ml-team/bert-pretrain-0"]
    assert "1 workload pod(s) still bound to it (1 using GPUs)" in f.message


def _not_ready(message: str) -> str:
    from tests.unit.tools.checks._k8s_api import api_list, node
    n = node("gpu-node-82", ready="False")
    n["status"]["conditions"][0].update({"message": message, "lastTransitionTime": "2026-03-04T09:30:00Z"})
    return api_list("NodeList", [n])


def test_a_kubelet_whose_network_plugin_is_not_ready_is_node_software_and_a_dead_runtime_is_not(make_facts):
    cni = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
           "message:Network plugin returns error: cni plugin not initialized")
    (f,) = check_k8s_node_not_ready(make_facts(("k8s/nodes.json", "k8s-json", _not_ready(cni))), K8sNodeNotReadyConfig())
    assert f.root_cause == "node_software_fault" and f.culprits[0] == "k8snode:gpu-node-82"
    assert [a.type for a in f.suggested_actions] == ["cordon_node"]
    pleg = "[container runtime is down, PLEG is not healthy: pleg was last seen active 31m37s ago; threshold is 3m0s]"
    (f,) = check_k8s_node_not_ready(make_facts(("k8s/nodes.json", "k8s-json", _not_ready(pleg))), K8sNodeNotReadyConfig())
    assert f.root_cause == "node_unresponsive"


def _rebooted(n):
    # gpu-a100-01 rebooted for a kernel patch and went Ready again at 09:31:20 (capture 10:15).
    for c in n["status"]["conditions"]:
        if c["type"] == "Ready" and n["metadata"]["name"] == "gpu-a100-01":
            c["lastTransitionTime"] = "2026-03-04T09:31:20Z"


# journalctl -u kubelet -o short-iso on the node: the kubelet waits for cilium's CNI config after boot.
KUBELET = "".join(
    f'2026-03-04T09:{m}+0000 gpu-a100-01 kubelet[1893]: E0304 09:{m[:5]}.100200 1893 kubelet.go:2874] "Container runtime '
    'network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns '
    'error: cni plugin not initialized"\n' for m in ("30:41", "30:46", "30:51", "31:01"))


def _boot(make_facts, log: str):
    return make_facts(("k8s/nodes.json", "k8s-json", _nodes(_rebooted)), ("kernel/gpu-a100-01.log", "kernel-log", log),
                      **{"kernel/gpu-a100-01.log": {"node": "gpu-a100-01"}})


def test_a_node_that_waited_for_its_cni_at_start_and_stayed_ready_is_healthy(make_facts):
    found = [f for f in check_k8s_node_not_ready(_boot(make_facts, KUBELET), K8sNodeNotReadyConfig())
             if f.culprits == ["k8snode:gpu-a100-01"]]
    (f,) = found
    assert f.root_cause == "healthy" and "waited 39 s for its network plugin" in f.message


def test_network_errors_after_the_node_went_ready_are_not_start_up(make_facts):
    late = KUBELET + KUBELET.replace("09:3", "09:5")  # the same errors 20 minutes after Ready: still broken
    assert not [f for f in check_k8s_node_not_ready(_boot(make_facts, late), K8sNodeNotReadyConfig())
                if f.root_cause == "healthy"]
    other = KUBELET + ('2026-03-04T09:31:02+0000 gpu-a100-01 kubelet[1893]: E0304 09:31:02.100200 1893 kubelet.go:2387] '
                       '"Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0s ago"\n')
    assert not [f for f in check_k8s_node_not_ready(_boot(make_facts, other), K8sNodeNotReadyConfig())
                if f.root_cause == "healthy"]
