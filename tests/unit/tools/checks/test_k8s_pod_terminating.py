"""check_k8s_pod_terminating on pod lists whose pods were deleted (metadata.deletionTimestamp) at various times."""

from __future__ import annotations

import json

from tools.checks.k8s_pod_terminating import K8sPodTerminatingConfig, check_k8s_pod_terminating


def _pods(*pods: tuple[str, str | None, str]) -> str:
    items = []
    for name, deleted, phase in pods:
        meta: dict = {"name": name, "namespace": "speech", "uid": f"u-{name}"}
        if deleted:
            meta |= {"deletionTimestamp": deleted, "deletionGracePeriodSeconds": 30}
        items.append({"metadata": meta, "spec": {"nodeName": "gpu-node-14", "containers": [{"name": "train"}]},
                      "status": {"phase": phase}})
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "items": items})


EVENTS = json.dumps({"kind": "EventList", "apiVersion": "v1", "items": [{
    "metadata": {"name": "asr-ft-0.17f", "namespace": "speech"},
    "involvedObject": {"kind": "Pod", "name": "asr-ft-0", "namespace": "speech"}, "reason": "FailedKillPod", "type": "Warning",
    "message": 'error killing pod: failed to "KillPodSandbox" for "u-asr-ft-0" with KillPodSandboxError: "rpc error: code = '
               'DeadlineExceeded desc = context deadline exceeded"',
    "source": {"component": "kubelet", "host": "gpu-node-14"}, "count": 9,
    "firstTimestamp": "2026-03-04T09:32:00Z", "lastTimestamp": "2026-03-04T10:12:00Z"}]})


def test_a_pod_deleted_long_ago_and_still_listed_is_stuck_terminating_with_no_cause_named(make_facts):
    facts = make_facts(("k8s/pods.json", "k8s-json", _pods(("asr-ft-0", "2026-03-04T09:30:30Z", "Running"),
                                                            ("asr-ft-1", None, "Running"),
                                                            ("tts-0", "2026-03-04T10:13:00Z", "Running"),
                                                            ("done-0", "2026-03-04T04:00:00Z", "Succeeded"))),
                       ("k8s/events.json", "k8s-json", EVENTS))
    (f,) = check_k8s_pod_terminating(facts, K8sPodTerminatingConfig())
    assert f.root_cause == "inconclusive" and f.culprits == ["pod:speech/asr-ft-0"] and f.suggested_actions == []
    assert "44 min past its grace period" in f.message and "(1 kill-failure event(s))" in f.message
    assert any("KillPodSandbox" in e.text for e in f.evidence)


def test_pods_within_their_grace_period_or_long_finished_are_not_stuck(make_facts):
    facts = make_facts(("k8s/pods.json", "k8s-json", _pods(("tts-0", "2026-03-04T10:13:00Z", "Running"),
                                                            ("done-0", "2026-03-04T04:00:00Z", "Succeeded"))),
                       captured_at="2026-09-02T15:48:00Z")
    assert check_k8s_pod_terminating(facts, K8sPodTerminatingConfig()) == []
