"""Kubernetes cluster-autoscaler facts: when a Pending pod is waiting for capacity that is on its way.

Source: the cluster-autoscaler FAQ (events it records on pods: ``TriggeredScaleUp`` "pod triggered scale-up:
[{group 2->3 (max: 6)}]", ``NotTriggerScaleUp`` "pod didn't trigger scale-up: ...", ``FailedScaleUp``) and
its ``--max-node-provision-time`` flag (default 15 minutes: a node not registered by then is given up on).
"""

from __future__ import annotations

from datetime import datetime, timezone

from tools.models.k8s import K8sEvent

__all__ = ["MAX_NODE_PROVISION_S", "SCALE_UP_STARTED", "SCALE_UP_REFUSED", "scale_up_in_progress"]

MAX_NODE_PROVISION_S = 15 * 60
"""cluster-autoscaler's default --max-node-provision-time: how long a triggered scale-up may take."""
SCALE_UP_STARTED = ("TriggeredScaleUp",)
SCALE_UP_REFUSED = ("NotTriggerScaleUp", "FailedScaleUp", "ScaleUpFailed")


def _age_s(ev: K8sEvent, now: datetime) -> float | None:
    """Seconds since the event was last seen: kubectl's age column, else ``now`` minus its lastTimestamp."""
    if ev.last_seen_s is not None:
        return ev.last_seen_s
    when = ev.last_timestamp or ev.first_timestamp
    if when is None:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return (now - when).total_seconds()


def scale_up_in_progress(events: list[K8sEvent], now: datetime, *,
                         provision_s: float = MAX_NODE_PROVISION_S) -> K8sEvent | None:
    """The ``TriggeredScaleUp`` event among a pod's events when the autoscaler is adding a node for it now:
    the newest scale-up event is a trigger (not a refusal or a failure) seen at most ``provision_s`` before
    ``now`` (the capture). None otherwise, and for events of unknown age."""
    aged = [(a, e) for e in events if e.reason in SCALE_UP_STARTED + SCALE_UP_REFUSED
            and (a := _age_s(e, now)) is not None]
    if not aged:
        return None
    age, newest = min(aged, key=lambda ae: ae[0])
    return newest if newest.reason in SCALE_UP_STARTED and age <= provision_s else None
