"""check_k8s_pod_sandbox on kubelet FailedCreatePodSandBox events from containerd, CRI-O and dockershim nodes, in
core/v1 JSON and in the `kubectl get events -o wide` table, and kubelet journal lines."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event, node, pod
from tools.checks.k8s_pod_sandbox import K8sPodSandboxConfig, check_k8s_pod_sandbox

CFG = K8sPodSandboxConfig()
CRIO = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime handler nvidia from "
        "runtime list map[crun:0xc0004dd5f0 runc:0xc0004dd790]")
CALICO = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "3f2a": '
          'plugin type="calico" failed (add): stat /var/lib/calico/nodename: no such file or directory')
PAUSE = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image '
         '"registry.k8s.io/pause:3.9": failed to pull image')
CREATING = [{"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]


def _facts(make_facts, events, pods, nodes=("ocp-gpu-1", "ocp-gpu-2")):
    return make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node(n) for n in nodes])),
                      ("k8s/pods.json", "k8s-json", api_list("PodList", pods)),
                      ("k8s/events.json", "k8s-json", api_list("EventList", events)))


def test_crio_without_the_nvidia_runtime_handler_is_the_nodes_software(make_facts):
    # Fires: CRI-O on ocp-gpu-1 has no 'nvidia' handler for the RuntimeClass; two pods stuck there, a third pod of
    # the same Deployment runs on ocp-gpu-2.
    owner = ("ReplicaSet", "asr-6c9f")
    pods = [pod("asr-6c9f-a", node_name="ocp-gpu-1", phase="Pending", gpus=1, owner=owner, containers=CREATING),
            pod("asr-6c9f-b", node_name="ocp-gpu-1", phase="Pending", gpus=1, owner=owner, containers=CREATING),
            pod("asr-6c9f-c", node_name="ocp-gpu-2", gpus=1, owner=owner)]
    events = [core_event("FailedCreatePodSandBox", CRIO, name=n, host="ocp-gpu-1", count=12) for n in ("asr-6c9f-a", "asr-6c9f-b")]
    (f,) = check_k8s_pod_sandbox(_facts(make_facts, events, pods), CFG)
    assert f.root_cause == "node_software_fault" and f.confidence == 0.85
    assert f.culprits == ["k8snode:ocp-gpu-1", "pod:ml/asr-6c9f-a", "pod:ml/asr-6c9f-b"]
    assert "no 'nvidia' runtime handler" in f.message and "run on ocp-gpu-2" in f.message
    # Cordon, and evict the two stuck pods: bound to the node, a cordon leaves them there; their ReplicaSet
    # recreates them elsewhere.
    assert [(a.type, a.node or a.pod) for a in f.suggested_actions] == [
        ("cordon_node", "ocp-gpu-1"), ("evict_pod", "asr-6c9f-a"), ("evict_pod", "asr-6c9f-b")]


def test_dockershim_wording_in_a_wide_events_table(make_facts):
    # Fires: kubelet 1.21 with dockershim, "Failed create pod sandbox" (no "to"), host from the SOURCE column.
    msg = 'Failed create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "nvidia" not supported'
    cols = [("LAST SEEN", "40s"), ("TYPE", "Warning"), ("REASON", "FailedCreatePodSandBox"), ("OBJECT", "pod/infer-0"),
            ("SUBOBJECT", ""), ("SOURCE", "kubelet, k8s-gpu3"), ("MESSAGE", msg), ("FIRST SEEN", "9m"), ("COUNT", "25"),
            ("NAME", "infer-0.17f9")]
    widths = [max(len(h), len(v)) + 3 for h, v in cols]  # kubectl's tab writer: every cell under its header
    table = "".join(h.ljust(w) for (h, _), w in zip(cols, widths)).rstrip() + "\n" + \
        "".join(v.ljust(w) for (_, v), w in zip(cols, widths)).rstrip() + "\n"
    (f,) = check_k8s_pod_sandbox(make_facts(("k8s/events.txt", "k8s-events-text", table)), CFG)
    assert f.culprits == ["k8snode:k8s-gpu3", "pod:default/infer-0"] and f.confidence == 0.8


def test_cni_failure_names_the_plugin(make_facts):
    pods = [pod("web-0", node_name="ocp-gpu-2", phase="Pending", containers=CREATING)]
    (f,) = check_k8s_pod_sandbox(_facts(make_facts, [core_event("FailedCreatePodSandBox", CALICO, name="web-0",
                                                                host="ocp-gpu-2")], pods), CFG)
    assert "CNI network plugin failed" in f.message and "(calico)" in f.message


def test_a_pod_that_started_since_and_an_unknown_sandbox_error_do_not_fire(make_facts):
    # Does not fire: the first pod's sandbox failed once but it runs now; the second's error is a pause-image pull
    # (the registry, not the node's runtime config).
    pods = [pod("ok-0", node_name="ocp-gpu-1"), pod("p-0", node_name="ocp-gpu-2", phase="Pending", containers=CREATING)]
    events = [core_event("FailedCreatePodSandBox", CRIO, name="ok-0", host="ocp-gpu-1"),
              core_event("FailedCreatePodSandBox", PAUSE, name="p-0", host="ocp-gpu-2")]
    assert check_k8s_pod_sandbox(_facts(make_facts, events, pods), CFG) == []


def test_kubelet_journal_line_alone_and_an_already_cordoned_node(make_facts):
    # Fires from the kubelet's pod_workers line on a node an admin already cordoned: named, no second cordon.
    line = ('Mar 04 10:01:02 gpu-7 kubelet[2201]: E0304 10:01:02.1    2201 pod_workers.go:1298] "Error syncing pod, '
            'skipping" err="failed to \\"CreatePodSandbox\\" for \\"x_ml\\" with CreatePodSandboxError: \\"Failed to create '
            'sandbox for pod: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for '
            '\\\\\\"nvidia\\\\\\" is configured\\""\n')
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("gpu-7", unschedulable=True)])),
                       ("kernel/gpu-7.log", "kernel-log", line), **{"kernel/gpu-7.log": {"node": "gpu-7"}})
    (f,) = check_k8s_pod_sandbox(facts, CFG)
    assert f.culprits == ["k8snode:gpu-7"] and f.suggested_actions == [] and "1 kubelet log line" in f.message
