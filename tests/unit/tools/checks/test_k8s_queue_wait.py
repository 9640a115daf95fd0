"""check_k8s_queue_wait on API-shaped (JSON) Kueue Workload events and a Job's CreatedWorkload event."""

from __future__ import annotations

from tests.unit.tools.checks._k8s_api import api_list, core_event
from tools.checks.k8s_queue_wait import K8sQueueWaitConfig, check_k8s_queue_wait


def test_a_workload_not_admitted_for_quota_holds_its_job(make_facts):
    events = api_list("EventList", [
        core_event("CreatedWorkload", "Created Workload: ml/job-ft-7b-9c2d1", kind="Job", name="ft-7b", namespace="ml",
                   component="kueue-admission", etype="Normal"),
        core_event("Pending", "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
                   "in flavor a100, 8 more needed", kind="Workload", name="job-ft-7b-9c2d1", namespace="ml",
                   component="kueue-admission", count=40),
        core_event("Pending", "Workload is waiting for the ClusterQueue to be ready", kind="Workload",
                   name="job-other-1", namespace="ml", component="kueue-admission")])
    (f,) = check_k8s_queue_wait(make_facts(("k8s/events.json", "k8s-json", events)), K8sQueueWaitConfig())
    assert f.root_cause == "scheduler_wait" and f.culprits == ["job:ml/ft-7b"] and f.suggested_actions == []
    assert "insufficient unused quota" in f.message and "(40x)" in f.message


def test_an_admitted_workload_says_nothing(make_facts):
    events = api_list("EventList", [core_event("Admitted", "Admitted by ClusterQueue research-cq", kind="Workload",
                                               name="job-ft-7b-9c2d1", namespace="ml", etype="Normal")])
    assert check_k8s_queue_wait(make_facts(("k8s/events.json", "k8s-json", events)), K8sQueueWaitConfig()) == []
