"""check_k8s_pods_ready_timeout on Kueue's PodsReady evictions (core/v1 JSON events, a Job and a RayJob), with
and without the pods' own Warning events, through the registry."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event
from tools.checks import run_checks
from tools.checks.k8s_pods_ready_timeout import PodsReadyTimeoutConfig, check_k8s_pods_ready_timeout

MSG = "Exceeded the PodsReady timeout ml/job-sweep-17-a1b2c"


def _facts(make_facts, count: int, pod_warning: bool = False, kind: str = "Job"):
    events = [core_event("EvictedDueToPodsReadyTimeout", MSG, kind="Workload", name="job-sweep-17-a1b2c",
                         component="kueue-admission", etype="Normal", count=count),
              core_event("Stopped", MSG, kind=kind, name="sweep-17", component="kueue-job-controller",
                         etype="Normal", count=count)]
    if pod_warning:
        events.append(core_event("Failed", 'Failed to pull image "reg.local/sweep:17": not found',
                                 name="sweep-17-0-x7k2p", host="gpu-a1", count=3))
    return make_facts(("k8s/events.json", "k8s-json", api_list("EventList", events)))


def test_repeated_pods_ready_evictions_with_nothing_about_the_pods_are_inconclusive_on_the_job(make_facts):
    for kind in ("Job", "RayJob"):
        (f,) = check_k8s_pods_ready_timeout(_facts(make_facts, 3, kind=kind), PodsReadyTimeoutConfig())
        assert f.root_cause == "inconclusive" and f.culprits == ["job:ml/sweep-17"] and f.suggested_actions == []
        assert "evicted 3 times" in f.message and "kubectl get events -n ml" in f.message
    causes = {g.root_cause for g in run_checks(_facts(make_facts, 3)).findings}
    assert causes == {"inconclusive"}


def test_one_eviction_or_a_pod_that_says_why_is_not_this(make_facts):
    assert check_k8s_pods_ready_timeout(_facts(make_facts, 1), PodsReadyTimeoutConfig()) == []
    assert check_k8s_pods_ready_timeout(_facts(make_facts, 4, pod_warning=True), PodsReadyTimeoutConfig()) == []
