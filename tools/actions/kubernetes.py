"""Kubernetes actions, executed through the official client: cordon_node, uncordon_node,
drain_k8s_node, evict_pod.

The "runner" of these actions is a ``kubernetes.client.ApiClient`` (agent/execute.py passes the
one built from ``[kubernetes]`` in warden.toml). Each plan renders the exact API requests, as
``[METHOD, path, body]``, so what an approver reads is what is sent::

    cordon_node      PATCH /api/v1/nodes/<node>  {"metadata":{"annotations":{"warden.io/cordoned-by": ...}},
                                                  "spec":{"unschedulable":true}}
    uncordon_node    PATCH /api/v1/nodes/<node>  (removes Warden's annotation, unschedulable false)
    evict_pod        POST  /api/v1/namespaces/<ns>/pods/<pod>/eviction  {"apiVersion":"policy/v1","kind":"Eviction",...}
    drain_k8s_node   the cordon, then one Eviction per pod on the node (not DaemonSet or mirror pods)

Evictions go through the Eviction subresource, so the API server enforces PodDisruptionBudgets: a
429 answer means a budget forbids it now, and the pod is left running and reported, never deleted.
Warden annotates what it cordons and uncordons only nodes carrying its own annotation; a node
cordoned by a person or another system (NVSentinel's quarantine annotation, a ``cordon-by``
marker) is never uncordoned or re-annotated. ``verify`` reads the objects back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import PrivateAttr

from tools.actions.base import Action, ActionFacts, Authorization, ExecutionResult, VerifyResult
from tools.actions.params import K8sName
from tools.errors import ActionError
from tools.models.ids import ActionType

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def _core(client: ApiClient) -> Any:
    """``_core(client)``; the Kubernetes client is imported when an action runs, not with the catalogue
    (every `warden` command that plans or lists actions would otherwise pay ~0.3 s for it)."""
    from kubernetes.client import CoreV1Api

    return CoreV1Api(client)


def _api_error() -> type[Exception]:
    """``kubernetes.client.exceptions.ApiException`` (an ``except`` clause evaluates this only when raised)."""
    from kubernetes.client.exceptions import ApiException

    return ApiException

__all__ = ["CordonNode", "UncordonNode", "DrainK8sNode", "EvictPod", "CORDON_ANNOTATION", "REASON_ANNOTATION",
           "EXTERNAL_OWNER_MARKERS", "cordon_owner"]

CORDON_ANNOTATION = "warden.io/cordoned-by"
"""Annotation Warden writes on every node it cordons (value ``warden``)."""
REASON_ANNOTATION = "warden.io/cordon-reason"
EXTERNAL_OWNER_MARKERS = ("quarantineHealthEvent", "cordon-by", "nvsentinel")
"""Annotation/label key fragments of other remediation systems (NVSentinel's fault quarantine
writes ``quarantineHealthEvent``; sites mark ``cordon-by``): their cordons are theirs."""
_TIMEOUT_S = 30


def _node(client: ApiClient, name: str) -> dict[str, Any]:
    try:
        return json.loads(_core(client).read_node(name, _preload_content=False, _request_timeout=_TIMEOUT_S).data)
    except _api_error() as e:
        raise ActionError(f"cannot read Kubernetes node {name}: HTTP {e.status} {str(e.reason or '')[:120]}") from None


def cordon_owner(node: dict[str, Any]) -> str | None:
    """Who holds a node's cordon: ``warden``, another system or person (named as well as the object
    shows it), or None when the node is schedulable."""
    meta = node.get("metadata") or {}
    ann = meta.get("annotations") or {}
    if ann.get(CORDON_ANNOTATION) == "warden":
        return "warden" if (node.get("spec") or {}).get("unschedulable") else None
    marks = {**(meta.get("labels") or {}), **ann}
    external = [k for k, v in marks.items()
                if any(m.lower() in k.lower() for m in EXTERNAL_OWNER_MARKERS) and str(v).lower() != "false"]
    if external:
        return f"an external remediation system ({external[0]})"
    if (node.get("spec") or {}).get("unschedulable"):
        return "someone else (cordoned without Warden's annotation)"
    return None


def _cordon_body(reason: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {CORDON_ANNOTATION: "warden", REASON_ANNOTATION: reason}},
            "spec": {"unschedulable": True}}


def _eviction_body(pod: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}


def _compact(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _result(plan_hash: str, commands: list[list[str]], outputs: list[str], error: str | None = None) -> ExecutionResult:
    return ExecutionResult(plan_hash=plan_hash, commands=commands, outputs=outputs, ok=error is None, error=error)


def _patch(client: ApiClient, name: str, body: dict[str, Any]) -> None:
    try:
        _core(client).patch_node(name, body, _content_type="application/merge-patch+json",
                                     _preload_content=False, _request_timeout=_TIMEOUT_S)
    except _api_error() as e:
        raise ActionError(f"PATCH node {name}: HTTP {e.status} {str(e.reason or '')[:120]}") from None


def _evict(client: ApiClient, pod: str, namespace: str) -> str:
    """POST one Eviction; returns ``evicted``, ``gone`` or ``blocked by a PodDisruptionBudget``."""
    try:
        _core(client).create_namespaced_pod_eviction(pod, namespace, _eviction_body(pod, namespace),
                                                         _preload_content=False, _request_timeout=_TIMEOUT_S)
    except _api_error() as e:
        if e.status == 404:
            return "gone"
        if e.status == 429:
            return "blocked by a PodDisruptionBudget"
        raise ActionError(f"evict pod {namespace}/{pod}: HTTP {e.status} {str(e.reason or '')[:120]}") from None
    return "evicted"


class _NodeAction(Action):
    node: K8sName

    def _state(self, client: ApiClient) -> str:
        n = _node(client, self.node)
        ann = (n.get("metadata") or {}).get("annotations") or {}
        return (f"unschedulable={bool((n.get('spec') or {}).get('unschedulable'))} "
                f"{CORDON_ANNOTATION}={ann.get(CORDON_ANNOTATION, '(none)')}")


class CordonNode(_NodeAction):
    """Mark a node unschedulable with Warden's annotation (reversible with uncordon_node)."""

    action_type: ClassVar[ActionType] = "cordon_node"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="node", platform="kubernetes",
                                               key_params=("node",), takes_out_of_service=True)
    reason: str = "proposed by Warden"

    def _commands(self) -> list[list[str]]:
        return [["PATCH", f"/api/v1/nodes/{self.node}", _compact(_cordon_body(" ".join(self.reason.split())[:200]))]]

    def describe(self) -> str:
        return f"cordon Kubernetes node {self.node} ({' '.join(self.reason.split())[:80]})"

    def execute(self, auth: Authorization, runner: ApiClient) -> ExecutionResult:  # type: ignore[override]
        """Cordon, unless Warden already did (nothing to do).

        Raises:
            NotAllowedError: ``auth`` does not allow exactly this plan.
            ActionError: the node is cordoned by someone else (never re-annotated as Warden's).
        """
        plan = self.authorize(auth)
        owner = cordon_owner(_node(runner, self.node))
        if owner == "warden":
            return self.already_done(plan, f"{self.node} is already cordoned by Warden")
        if owner is not None:
            raise ActionError(f"cordon_node {self.node}: held by {owner}; not taking it over")
        _patch(runner, self.node, json.loads(plan.commands[0][2]))
        return _result(plan.plan_hash, plan.commands, [f"PATCH {self.node}: cordoned"])

    def verify(self, runner: ApiClient) -> VerifyResult:  # type: ignore[override]
        """The node reads back unschedulable with Warden's annotation."""
        owner = cordon_owner(_node(runner, self.node))
        return VerifyResult(ok=owner == "warden", observed=self._state(runner))


class UncordonNode(_NodeAction):
    """Make a node Warden cordoned schedulable again and remove Warden's annotation."""

    action_type: ClassVar[ActionType] = "uncordon_node"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="node", platform="kubernetes",
                                               key_params=("node",), returns_to_service=True)

    def _commands(self) -> list[list[str]]:
        body = {"metadata": {"annotations": {CORDON_ANNOTATION: None, REASON_ANNOTATION: None}},
                "spec": {"unschedulable": None}}
        return [["PATCH", f"/api/v1/nodes/{self.node}", _compact(body)]]

    def describe(self) -> str:
        return f"uncordon Kubernetes node {self.node} (only if Warden cordoned it)"

    def execute(self, auth: Authorization, runner: ApiClient) -> ExecutionResult:  # type: ignore[override]
        """Uncordon only Warden's own cordon.

        Raises:
            ActionError: the node is cordoned by a person or another system.
        """
        plan = self.authorize(auth)
        owner = cordon_owner(_node(runner, self.node))
        if owner is None:
            return self.already_done(plan, f"{self.node} is schedulable")
        if owner != "warden":
            raise ActionError(f"uncordon_node {self.node}: cordoned by {owner}; not uncordoning")
        _patch(runner, self.node, json.loads(plan.commands[0][2]))
        return _result(plan.plan_hash, plan.commands, [f"PATCH {self.node}: uncordoned"])

    def verify(self, runner: ApiClient) -> VerifyResult:  # type: ignore[override]
        """The node reads back schedulable, without Warden's annotation."""
        n = _node(runner, self.node)
        ann = (n.get("metadata") or {}).get("annotations") or {}
        ok = not (n.get("spec") or {}).get("unschedulable") and CORDON_ANNOTATION not in ann
        return VerifyResult(ok=ok, observed=self._state(runner))


def _pods_on(client: ApiClient, node: str) -> list[dict[str, Any]]:
    try:
        raw = _core(client).list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}",
                                                            _preload_content=False, _request_timeout=_TIMEOUT_S).data
    except _api_error() as e:
        raise ActionError(f"cannot list pods on {node}: HTTP {e.status} {str(e.reason or '')[:120]}") from None
    return list(json.loads(raw).get("items") or [])


def _evictable(pod: dict[str, Any]) -> bool:
    """Pods a drain evicts: not owned by a DaemonSet, not a static (mirror) pod, not finished."""
    meta = pod.get("metadata") or {}
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
        return False
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class DrainK8sNode(CordonNode):
    """Cordon (with Warden's annotation), then evict every pod on the node through the Eviction API
    (PodDisruptionBudgets respected: a blocked pod is reported, not deleted)."""

    action_type: ClassVar[ActionType] = "drain_k8s_node"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="node", platform="kubernetes",
                                               key_params=("node",), takes_out_of_service=True, kills_jobs=True)
    _blocked: list[str] = PrivateAttr(default_factory=list)

    def _commands(self) -> list[list[str]]:
        return [*super()._commands(),
                ["POST", "/api/v1/namespaces/{namespace}/pods/{pod}/eviction",
                 f"one Eviction per pod on {self.node} (not DaemonSet or mirror pods), e.g. "
                 + _compact(_eviction_body("{pod}", "{namespace}"))]]

    def describe(self) -> str:
        return f"drain Kubernetes node {self.node}: cordon, then evict its pods (PodDisruptionBudgets respected)"

    def execute(self, auth: Authorization, runner: ApiClient) -> ExecutionResult:  # type: ignore[override]
        """Cordon (unless Warden's cordon is there already), then evict each evictable pod.

        Raises:
            ActionError: the node is cordoned by someone else, or the API refused a request.
        """
        plan = self.authorize(auth)
        owner = cordon_owner(_node(runner, self.node))
        if owner not in (None, "warden"):
            raise ActionError(f"drain_k8s_node {self.node}: held by {owner}; not taking it over")
        outputs = []
        if owner is None:
            _patch(runner, self.node, json.loads(plan.commands[0][2]))
            outputs.append(f"PATCH {self.node}: cordoned")
        self._blocked = []
        for pod in filter(_evictable, _pods_on(runner, self.node)):
            meta = pod["metadata"]
            what = _evict(runner, meta["name"], meta.get("namespace") or "default")
            outputs.append(f"POST eviction {meta.get('namespace')}/{meta['name']}: {what}")
            if what.startswith("blocked"):
                self._blocked.append(f"{meta.get('namespace')}/{meta['name']}")
        error = f"eviction blocked by a PodDisruptionBudget: {', '.join(self._blocked)}" if self._blocked else None
        return _result(plan.plan_hash, plan.commands, outputs, error)

    def verify(self, runner: ApiClient) -> VerifyResult:  # type: ignore[override]
        """Cordoned by Warden and no evictable pod left on the node (pods still terminating count as left)."""
        base = super().verify(runner)
        left = [f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in _pods_on(runner, self.node)
                if _evictable(p) and not (p.get("metadata") or {}).get("deletionTimestamp")]
        observed = f"{base.observed}; pods left: {', '.join(left) or 'none'}"
        return VerifyResult(ok=base.ok and not left, observed=observed)


class EvictPod(Action):
    """Evict one pod through the Eviction subresource (honours PodDisruptionBudgets)."""

    action_type: ClassVar[ActionType] = "evict_pod"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="pod", platform="kubernetes",
                                               key_params=("namespace", "pod"), kills_jobs=True)
    pod: K8sName
    namespace: K8sName = "default"

    def _commands(self) -> list[list[str]]:
        return [["POST", f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}/eviction",
                 _compact(_eviction_body(self.pod, self.namespace))]]

    def describe(self) -> str:
        return f"evict pod {self.namespace}/{self.pod}"

    def execute(self, auth: Authorization, runner: ApiClient) -> ExecutionResult:  # type: ignore[override]
        """POST the Eviction; a pod already gone is nothing to do, a PDB refusal is a failed result.

        Raises:
            ActionError: the API refused the request for another reason.
        """
        plan = self.authorize(auth)
        what = _evict(runner, self.pod, self.namespace)
        if what == "gone":
            return self.already_done(plan, f"pod {self.namespace}/{self.pod} is gone")
        error = f"pod {self.namespace}/{self.pod}: eviction {what}" if what != "evicted" else None
        return _result(plan.plan_hash, plan.commands, [f"POST eviction {self.namespace}/{self.pod}: {what}"], error)

    def verify(self, runner: ApiClient) -> VerifyResult:  # type: ignore[override]
        """The pod is gone (404) or terminating (deletionTimestamp set)."""
        try:
            raw = _core(runner).read_namespaced_pod(self.pod, self.namespace, _preload_content=False,
                                                        _request_timeout=_TIMEOUT_S).data
        except _api_error() as e:
            if e.status == 404:
                return VerifyResult(ok=True, observed=f"pod {self.namespace}/{self.pod} is gone")
            raise ActionError(f"cannot read pod {self.namespace}/{self.pod}: HTTP {e.status}") from None
        meta = json.loads(raw).get("metadata") or {}
        ts = meta.get("deletionTimestamp")
        return VerifyResult(ok=bool(ts), observed=f"pod {self.namespace}/{self.pod} deletionTimestamp={ts or '(none)'}")
