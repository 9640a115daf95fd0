"""check_k8s_image_pull: containers that cannot start because their image cannot be pulled."""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field

from tools.checks.base import CheckConfig
from tools.checks.k8s_evidence import event_evidence, event_pod_key, pod_culprit, pod_evidence, pod_events
from tools.facts import Facts
from tools.knowledge.precedence import confidence as strength_confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["K8sImagePullConfig", "check_k8s_image_pull"]

_HINTS = (
    (("not found", "manifest unknown", "does not exist"), "the image or tag does not exist"),
    (("unauthorized", "authentication required", "denied", "forbidden", "401", "403"),
     "the registry refused the credentials (imagePullSecrets)"),
    (("timeout", "i/o timeout", "connection refused", "no such host", "tls", "x509"),
     "the registry is unreachable from the node"),
    (("toomanyrequests", "rate limit"), "the registry is rate-limiting pulls"),
)
_EVENT_MARKERS = ("Failed to pull image", "Back-off pulling image", "Error: ErrImagePull", "Error: ImagePullBackOff",
                  "Error: InvalidImageName")


class K8sImagePullConfig(CheckConfig):
    """Container waiting reasons that mean the image cannot be pulled."""

    reasons: frozenset[str] = Field(default=frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                                                       "ErrImageNeverPull"}))


def _hint(messages: list[str]) -> str:
    text = " ".join(messages).lower()
    for needles, hint in _HINTS:
        if any(n in text for n in needles):
            return hint
    return "see the pull error"


def check_k8s_image_pull(facts: Facts, cfg: K8sImagePullConfig) -> list[Finding]:
    """image_pull_failure per workload (pods of one owner and image) whose containers wait in
    ErrImagePull / ImagePullBackOff / InvalidImageName, or — for pods not collected as objects —
    whose events report failed pulls. Culprits are the pods; action notify_owner (nothing on the
    cluster is broken: the pod spec names an image the node cannot fetch).

    Sources: k8s-json pods (container waiting state, image); kubelet events (Failed, BackOff).
    """
    groups: dict[tuple, list[tuple[str, str, list[Evidence], list[str], str]]] = defaultdict(list)
    known = {(p.namespace, p.name): p for p in facts.k8s_pods}
    for pod in facts.k8s_pods:
        bad = [c for c in pod.containers if c.state == "waiting" and c.state_reason in cfg.reasons]
        if not bad:
            continue
        c = bad[0]
        evs = [e for e in pod_events(facts, pod.namespace, pod.name) if any(m in e.message for m in _EVENT_MARKERS)]
        msgs = [c.state_message or "", *[e.message for e in evs]]
        key = (pod.namespace, pod.owner_kind, pod.owner_name or pod.name, c.image)
        groups[key].append((pod.namespace, pod.name, [pod_evidence(pod, c), *[event_evidence(e) for e in evs[:2]]],
                            msgs, f"{c.state_reason} for image {c.image or '?'}"))
    by_pod: dict[tuple[str, str], list] = defaultdict(list)
    for e in facts.k8s_events:
        if e.object_kind == "Pod" and e.object_name and any(m in e.message for m in _EVENT_MARKERS):
            by_pod[event_pod_key(facts, e)].append(e)
    for (ns, name), evs in by_pod.items():
        pod = known.get((ns, name))
        if pod is not None:
            continue  # the pod object says whether it is still waiting; judged above
        groups[(ns, None, name, None)].append((ns, name, [event_evidence(e) for e in evs[:3]], [e.message for e in evs],
                                               f"{len(evs)} failed-pull event(s)"))
    findings = []
    for (ns, owner_kind, owner, _image), pods in groups.items():
        msgs = [m for p in pods for m in p[3]]
        what = pods[0][4]
        who = f"{owner_kind} {ns}/{owner}" if owner_kind else f"pod {ns}/{pods[0][1]}"
        findings.append(Finding(
            check="k8s_image_pull", root_cause="image_pull_failure",
            message=f"{len(pods)} pod(s) of {who} cannot pull their image ({what}; threshold 1): likely {_hint(msgs)}",
            culprits=[pod_culprit((p[0], p[1])) for p in pods],
            evidence=[ev for p in pods[:2] for ev in p[2]][:5],
            strength="state", confidence=strength_confidence("state", corroborated=True),
            suggested_actions=[ActionSpec(type="notify_owner", pod=pods[0][1], namespace=ns,
                                          reason=f"image cannot be pulled: likely {_hint(msgs)}")],
        ))
    return findings
