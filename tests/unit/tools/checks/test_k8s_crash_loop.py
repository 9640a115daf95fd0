"""check_k8s_crash_loop on API pod JSON (tests/fixtures/k8s-json/1.29-podlist-problems.json)."""

from __future__ import annotations

from tools.knowledge.precedence import confidence

import json
from pathlib import Path

from tools.checks.k8s_crash_loop import K8sCrashLoopConfig, check_k8s_crash_loop

FIX = Path(__file__).parents[3] / "fixtures"
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
EVENTS_W = (FIX / "k8s-events-text" / "1.29-wide.txt").read_text()


def _pod(name: str, mutate=None) -> str:
    doc = json.loads(PODS)
    doc["items"] = [p for p in doc["items"] if p["metadata"]["name"] == name]
    if mutate:
        mutate(doc["items"][0]["status"]["containerStatuses"][0])
    return json.dumps(doc)


def test_fixture_pods_oom_and_crash_loop_but_not_the_device_plugin(make_facts):
    # Fires twice: dataprep was OOMKilled (exit 137) -> host_oom; resnet-train crash-loops with 14
    # restarts (threshold 3) on a KeyError -> crash_loop. The device-plugin pod also crash-loops but is
    # k8s_device_plugin's; image-pull and pending pods never ran, so they do not fire here.
    facts = make_facts(("k8s/pods.json", "k8s-json", PODS), ("k8s/events.txt", "k8s-events-text", EVENTS_W))
    found = {f.culprits[0]: f for f in check_k8s_crash_loop(facts, K8sCrashLoopConfig())}
    assert set(found) == {"pod:ml-team/dataprep-5b8f9d7c6-qw8rt", "pod:ml-team/resnet-train-7d9c6b5f4-x2kqp"}
    oom = found["pod:ml-team/dataprep-5b8f9d7c6-qw8rt"]
    assert oom.root_cause == "host_oom" and "OOMKilled" in oom.message and "32.0 GiB" in oom.message
    crash = found["pod:ml-team/resnet-train-7d9c6b5f4-x2kqp"]
    assert crash.root_cause == "crash_loop" and crash.confidence == confidence("state")
    assert "14 restarts (threshold 3)" in crash.message and "KeyError: 'optimizer'" in crash.message
    assert ("k8s/events.txt", 3) in [(e.file, e.line) for e in crash.evidence]
    assert [(a.type, a.pod, a.namespace) for a in crash.suggested_actions] == [
        ("notify_owner", "resnet-train-7d9c6b5f4-x2kqp", "ml-team")]


def test_cuda_oom_in_termination_message_is_gpu_oom(make_facts):
    # Fires gpu_oom: the container's last words are a CUDA OOM (exit 1, reason Error), not a kernel kill.
    def cuda(c):
        c["lastState"]["terminated"]["message"] = (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.84 GiB (GPU 0; 79.15 GiB total capacity; "
            "70.02 GiB already allocated; 6.26 GiB free; 71.20 GiB reserved in total by PyTorch)")
    facts = make_facts(("k8s/pods.json", "k8s-json", _pod("resnet-train-7d9c6b5f4-x2kqp", cuda)))
    (f,) = check_k8s_crash_loop(facts, K8sCrashLoopConfig())
    assert f.root_cause == "gpu_oom" and "CUDA out of memory (exit 1)" in f.message


def test_few_restarts_below_threshold_do_not_fire(make_facts):
    # Does not fire: 14 restarts is below a threshold of 20.
    facts = make_facts(("k8s/pods.json", "k8s-json", _pod("resnet-train-7d9c6b5f4-x2kqp")))
    assert check_k8s_crash_loop(facts, K8sCrashLoopConfig(min_restarts=20)) == []


def test_old_oom_on_a_container_running_since_does_not_fire(make_facts):
    # Does not fire: the OOM kill ended two days before capture and the container has run fine since.
    def recovered(c):
        c["state"] = {"running": {"startedAt": "2026-03-02T10:00:00Z"}}
        c["ready"] = True
        c["lastState"]["terminated"]["finishedAt"] = "2026-03-02T09:59:58Z"
    facts = make_facts(("k8s/pods.json", "k8s-json", _pod("dataprep-5b8f9d7c6-qw8rt", recovered)))
    assert check_k8s_crash_loop(facts, K8sCrashLoopConfig()) == []


def test_healthy_running_pod_does_not_fire(make_facts):
    # Does not fire: bert-pretrain-0 runs with 0 restarts.
    facts = make_facts(("k8s/pods.json", "k8s-json", _pod("bert-pretrain-0")))
    assert check_k8s_crash_loop(facts, K8sCrashLoopConfig()) == []


def test_oomkilled_corroborated_by_kernel_cgroup_oom_is_more_confident(make_facts):
    # Fires host_oom at 0.9: the pod's node logged a memory-cgroup OOM kill, so the container's own
    # limit was hit (not the node running out of memory).
    dmesg = ("[Wed Mar  4 10:12:29 2026] Memory cgroup out of memory: Killed process 48211 (python) "
             "total-vm:35102204kB, anon-rss:33554012kB, file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:66012kB "
             "oom_score_adj:984\n")
    facts = make_facts(("k8s/pods.json", "k8s-json", _pod("dataprep-5b8f9d7c6-qw8rt")),
                       ("kernel/gpu-a100-01.log", "kernel-log", dmesg), **{"kernel/gpu-a100-01.log": {"node": "gpu-a100-01"}})
    (f,) = check_k8s_crash_loop(facts, K8sCrashLoopConfig())
    assert f.root_cause == "host_oom" and f.confidence == 0.9
    assert "memory cgroup OOM" in f.message
    assert ("kernel/gpu-a100-01.log", 1) in [(e.file, e.line) for e in f.evidence]


def _replicas(termination_message: str | None = None) -> str:
    """resnet-train crash-looping on gpu-a100-01 plus two ready replicas of its ReplicaSet elsewhere."""
    doc = json.loads(PODS)
    base = next(p for p in doc["items"] if p["metadata"]["name"] == "resnet-train-7d9c6b5f4-x2kqp")
    if termination_message is not None:
        base["status"]["containerStatuses"][0]["lastState"]["terminated"]["message"] = termination_message
    items = [base]
    for name, node in (("resnet-train-7d9c6b5f4-a1b2c", "gpu-a100-02"), ("resnet-train-7d9c6b5f4-d3e4f", "gpu-a100-03")):
        sib = json.loads(json.dumps(base))
        sib["metadata"]["name"], sib["spec"]["nodeName"] = name, node
        c = sib["status"]["containerStatuses"][0]
        c.update(state={"running": {"startedAt": "2026-03-04T09:03:00Z"}}, ready=True, restartCount=0, lastState={})
        for cond in sib["status"]["conditions"]:
            if cond["type"] in ("Ready", "ContainersReady"):
                cond.update(status="True", reason=None, message=None)
        items.append(sib)
    doc["items"] = items
    return json.dumps(doc)


def test_replicas_fine_elsewhere_lower_the_crash_loop_confidence(make_facts):
    # Fires crash_loop at 0.5 only: two replicas of the same ReplicaSet run fine on other nodes, so
    # "the app is broken" is less likely than something about gpu-a100-01.
    facts = make_facts(("k8s/pods.json", "k8s-json", _replicas()))
    (f,) = check_k8s_crash_loop(facts, K8sCrashLoopConfig())
    assert f.root_cause == "crash_loop" and f.confidence == confidence("heuristic")
    assert "2 other replica(s) of ReplicaSet resnet-train-7d9c6b5f4 run fine on gpu-a100-02, gpu-a100-03" in f.message
    assert "so suspect the node on gpu-a100-01" in f.message


def test_no_nvidia_driver_in_one_nodes_containers_is_a_node_software_fault(make_facts):
    # Fires node_software_fault: the container's last words are "Found no NVIDIA driver" on gpu-a100-01
    # while its siblings use their GPUs elsewhere: the node's runtime does not expose the driver.
    msg = ("  File \"/usr/local/lib/python3.11/site-packages/torch/cuda/__init__.py\", line 314, in _lazy_init\n"
           "    torch._C._cuda_init()\nRuntimeError: Found no NVIDIA driver on your system. Please check that you have "
           "an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n")
    facts = make_facts(("k8s/pods.json", "k8s-json", _replicas(msg)))
    (f,) = check_k8s_crash_loop(facts, K8sCrashLoopConfig())
    assert f.root_cause == "node_software_fault" and f.confidence == 0.85
    assert f.culprits == ["k8snode:gpu-a100-01", "pod:ml-team/resnet-train-7d9c6b5f4-x2kqp"]
    # Cordon the node and evict the crash-looping pod bound there (its ReplicaSet places it elsewhere).
    assert [(a.type, a.node or a.pod) for a in f.suggested_actions] == [
        ("cordon_node", "gpu-a100-01"), ("evict_pod", "resnet-train-7d9c6b5f4-x2kqp")]
    assert "RuntimeError: Found no NVIDIA driver" in f.evidence[0].text


def test_cuda_oom_in_the_pods_own_log_on_an_mps_shared_gpu_is_gpu_oom(make_facts):
    # Fires gpu_oom: the termination message is empty (exit 1), but `kubectl logs --previous` recorded for the pod
    # says CUDA ran out of memory; the node shares its GPUs through MPS (2 replicas each), and another GPU pod runs there.
    from tests.unit.tools.checks._k8s_api import api_list, node, pod
    shared = {"nvidia.com/gpu.product": "NVIDIA-A10G-SHARED", "nvidia.com/gpu.replicas": "2",
              "nvidia.com/gpu.sharing-strategy": "mps"}
    looping = [{"name": "main", "ready": False, "restartCount": 6, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-03-04T10:12:00Z"}}}]
    pods = api_list("PodList", [pod("tts-7c-x", "voice", node_name="g5-1", gpus=1, owner=("ReplicaSet", "tts-7c"),
                                    containers=looping),
                                pod("asr-5d-y", "voice", node_name="g5-1", gpus=1, owner=("ReplicaSet", "asr-5d"))])
    log = ("Loading model...\n"
           "RuntimeError: CUDA error: out of memory\n"
           "CUDA kernel errors might be asynchronously reported at some other API call.\n")
    facts = make_facts(("k8s/nodes.json", "k8s-json", api_list("NodeList", [node("g5-1", gpus=8, labels=shared)])),
                       ("k8s/pods.json", "k8s-json", pods), ("logs/tts/prev.log", "job-log", log),
                       **{"logs/tts/prev.log": {"job": "voice/tts-7c-x"}})
    (f,) = [f for f in check_k8s_crash_loop(facts, K8sCrashLoopConfig()) if "tts-7c-x" in f.message]
    assert f.root_cause == "gpu_oom" and f.culprits == ["pod:voice/tts-7c-x"]
    assert "time-slices its GPUs (2 pods per physical GPU" in f.message and "asr-5d" in f.message
    assert [(a.type, a.pod) for a in f.suggested_actions] == [("notify_owner", "tts-7c-x")]


def test_a_container_whose_dev_shm_is_full_is_its_own_set_up(make_facts):
    from tests.unit.tools.checks._k8s_api import api_list, pod
    looping = [{"name": "pytorch", "image": "t5:1", "ready": False, "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": "2026-03-04T10:10:00Z"}}}]
    pods = api_list("PodList", [pod("t5-ddp-master-0", "nlp", node_name="gpu-node-70", containers=looping)])
    log = ("t5-ddp-master-0:60:123 [2] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-Qx81pB to "
           "9637892 bytes, error: No space left on device (28)\n")
    facts = make_facts(("k8s/pods.json", "k8s-json", pods), ("logs/t5/pytorch.log", "job-log", log),
                       **{"logs/t5/pytorch.log": {"job": "nlp/t5-ddp-master-0"}})  # what manifest key pod: gives
    (f,) = check_k8s_crash_loop(facts, K8sCrashLoopConfig())
    assert f.root_cause == "user_code_error" and f.culprits == ["pod:nlp/t5-ddp-master-0"]
    assert "/dev/shm is full" in f.message and f.suggested_actions[0].type == "notify_owner"


def test_a_crash_looping_metrics_exporter_is_missing_telemetry_not_the_cause(make_facts):
    from tools.knowledge.precedence import INFORMATIONAL
    doc = json.loads(_replicas())
    for p in doc["items"]:  # the same shape, but the pods are the DCGM exporter's
        p["metadata"]["name"] = p["metadata"]["name"].replace("resnet-train", "nvidia-dcgm-exporter")
        for c in p["spec"]["containers"]:
            c["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04"
    (f,) = check_k8s_crash_loop(make_facts(("k8s/pods.json", "k8s-json", json.dumps(doc))), K8sCrashLoopConfig())
    assert f.confidence == INFORMATIONAL and "the node's metrics exporter" in f.message
