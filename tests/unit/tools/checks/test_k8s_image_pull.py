"""check_k8s_image_pull on API pod JSON and kubectl event tables (tests/fixtures/k8s-*)."""

from __future__ import annotations

import json
from pathlib import Path

from tools.checks.k8s_image_pull import K8sImagePullConfig, check_k8s_image_pull

FIX = Path(__file__).parents[3] / "fixtures"
PODS = (FIX / "k8s-json" / "1.29-podlist-problems.json").read_text()
EVENTS_A = (FIX / "k8s-events-text" / "1.29-all-namespaces.txt").read_text()


def _pods(mutate) -> str:
    doc = json.loads(PODS)
    for p in doc["items"]:
        mutate(p)
    return json.dumps(doc)


def test_two_pods_of_one_replicaset_waiting_on_pull_are_one_finding(make_facts):
    # Fires: both infer-api pods wait in ImagePullBackOff / ErrImagePull; the registry said "not found".
    facts = make_facts(("k8s/pods.json", "k8s-json", PODS), ("k8s/events.txt", "k8s-events-text", EVENTS_A))
    (f,) = check_k8s_image_pull(facts, K8sImagePullConfig())
    assert f.root_cause == "image_pull_failure" and f.strength == "state"
    assert f.culprits == ["pod:serving/infer-api-6f7d8c9b5-lm4zp", "pod:serving/infer-api-6f7d8c9b5-pp7sd"]
    assert "2 pod(s) of ReplicaSet serving/infer-api-6f7d8c9b5" in f.message
    assert "likely the image or tag does not exist" in f.message
    assert [(a.type, a.namespace) for a in f.suggested_actions] == [("notify_owner", "serving")]
    assert f.evidence[0].file == "k8s/pods.json"
    assert ("k8s/events.txt", 7) in [(e.file, e.line) for e in f.evidence]


def test_events_only_pulls_fire_per_pod_with_lines(make_facts):
    # Fires: no pod objects, but kubelet reported failed pulls for two pods.
    facts = make_facts(("k8s/events.txt", "k8s-events-text", EVENTS_A))
    found = check_k8s_image_pull(facts, K8sImagePullConfig())
    assert sorted(c for f in found for c in f.culprits) == [
        "pod:serving/infer-api-6f7d8c9b5-lm4zp", "pod:serving/infer-api-6f7d8c9b5-pp7sd"]
    pp7sd = next(f for f in found if f.culprits == ["pod:serving/infer-api-6f7d8c9b5-pp7sd"])
    assert [e.line for e in pp7sd.evidence] == [5, 6] and "does not exist" in pp7sd.message


def test_pull_that_succeeded_since_does_not_fire(make_facts):
    # Does not fire: the events are old; the pod objects show the containers running now.
    def pulled(p):
        for c in p["status"].get("containerStatuses", []):
            c.update(state={"running": {"startedAt": "2026-03-04T10:14:00Z"}}, ready=True)
        p["status"]["phase"] = "Running"
    facts = make_facts(("k8s/pods.json", "k8s-json", _pods(pulled)), ("k8s/events.txt", "k8s-events-text", EVENTS_A))
    assert check_k8s_image_pull(facts, K8sImagePullConfig()) == []


def test_registry_auth_failure_hint(make_facts):
    # Fires with a credentials hint: the registry answered 401 Unauthorized.
    def unauthorized(p):
        for c in p["status"].get("containerStatuses", []):
            if c["state"].get("waiting", {}).get("reason") in ("ErrImagePull", "ImagePullBackOff"):
                c["state"]["waiting"]["message"] = ('failed to pull and unpack image "registry.example.org/ml/infer-api:3.0.0": '
                                                    'failed to authorize: failed to fetch anonymous token: unexpected status: 401 Unauthorized')
    facts = make_facts(("k8s/pods.json", "k8s-json", _pods(unauthorized)))
    (f,) = check_k8s_image_pull(facts, K8sImagePullConfig())
    assert "credentials" in f.message


def test_creating_containers_do_not_fire(make_facts):
    # Does not fire: ContainerCreating is a normal start, not a pull failure.
    def creating(p):
        for c in p["status"].get("containerStatuses", []):
            if "waiting" in c["state"]:
                c["state"] = {"waiting": {"reason": "ContainerCreating"}}
    facts = make_facts(("k8s/pods.json", "k8s-json", _pods(creating)))
    assert check_k8s_image_pull(facts, K8sImagePullConfig()) == []
