"""check_k8s_container_died on API-shaped pods (lastState.terminated) with and without events."""

from __future__ import annotations

import pytest

from tests.unit.tools.checks._k8s_api import api_list, core_event, pod
from tools.checks.k8s_container_died import K8sContainerDiedConfig, check_k8s_container_died

CFG = K8sContainerDiedConfig()


def _restarted(code: int, reason: str, finished: str, restarts: int = 1, looping: bool = False) -> list[dict]:
    state = {"waiting": {"reason": "CrashLoopBackOff"}} if looping else {"running": {"startedAt": finished}}
    return [{"name": "server", "ready": not looping, "restartCount": restarts, "state": state,
             "lastState": {"terminated": {"exitCode": code, "reason": reason, "startedAt": "2026-03-03T00:00:00Z",
                                          "finishedAt": finished}}}]


def test_sigterm_restart_with_a_probe_failure_event_is_named_not_explained(make_facts):
    # Inconclusive: exit 143 (SIGTERM), reason Error, 25 min ago; a liveness probe failed before — named, but a probe
    # kill after a hang and a rollout look alike from here.
    pods = api_list("PodList", [pod("api-0", "web", node_name="n1", containers=_restarted(143, "Error", "2026-03-04T09:50:00Z"))])
    ev = api_list("EventList", [core_event("Unhealthy", 'Liveness probe failed: Get "http://10.1.2.3:8080/healthz": '
                                           "context deadline exceeded", name="api-0", namespace="web", host="n1", count=3)])
    (f,) = check_k8s_container_died(make_facts(("k8s/pods.json", "k8s-json", pods), ("k8s/events.json", "k8s-json", ev)), CFG)
    assert f.root_cause == "inconclusive" and f.culprits == ["pod:web/api-0"] and f.suggested_actions == []
    assert "exit 143 = 128 + SIGTERM" in f.message and "probes failed before" in f.message and "25 min ago" in f.message


@pytest.mark.parametrize("containers, why", [
    (_restarted(137, "OOMKilled", "2026-03-04T10:00:00Z"), "OOMKilled is k8s_crash_loop's host_oom"),
    (_restarted(137, "Error", "2026-03-02T10:00:00Z"), "two days ago: history"),
    (_restarted(1, "Error", "2026-03-04T10:00:00Z", restarts=7, looping=True), "a crash loop: k8s_crash_loop's"),
    (_restarted(0, "Completed", "2026-03-04T10:00:00Z"), "a clean exit"),
    ([{"name": "server", "ready": True, "restartCount": 0, "state": {"running": {}}, "lastState": {}}], "never restarted"),
])
def test_explained_or_old_deaths_do_not_fire(make_facts, containers, why):
    pods = api_list("PodList", [pod("api-0", "web", node_name="n1", containers=containers)])
    assert check_k8s_container_died(make_facts(("k8s/pods.json", "k8s-json", pods)), CFG) == [], why


def test_a_container_that_died_when_its_node_rebooted_names_the_node_first(make_facts):
    # JSON events (not the text table of the report this was written for): kubelet's Rebooted with a new boot id on
    # n1; the pod's container exited 255 reason Unknown then. Why n1 restarted is unknown: inconclusive, node first.
    pods = api_list("PodList", [pod("api-0", "web", node_name="n1", containers=_restarted(255, "Unknown", "2026-03-04T09:40:00Z")),
                                pod("api-1", "web", node_name="n2", containers=_restarted(255, "Unknown", "2026-03-04T09:40:00Z"))])
    ev = api_list("EventList", [core_event("Rebooted", "Node n1 has been rebooted, boot id: 0c2b4e8a-51d7-4c1e-9f3a-6b2d0e7a9c11",
                                           kind="Node", name="n1", namespace=None, host="n1")])
    found = check_k8s_container_died(make_facts(("k8s/pods.json", "k8s-json", pods), ("k8s/events.json", "k8s-json", ev)), CFG)
    by_pod = {f.culprits[-1]: f for f in found}
    assert by_pod["pod:web/api-0"].culprits == ["k8snode:n1", "pod:web/api-0"]
    assert "its node n1 rebooted under it (Node n1 has been rebooted" in by_pod["pod:web/api-0"].message
    assert by_pod["pod:web/api-1"].culprits == ["pod:web/api-1"]  # n2 did not reboot
    assert all(f.root_cause == "inconclusive" and f.suggested_actions == [] for f in found)
