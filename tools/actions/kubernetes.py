"""Kubernetes actions: cordon_node, uncordon_node, drain_k8s_node, evict_pod."""

from __future__ import annotations

from typing import ClassVar

from tools.actions.base import Action
from tools.actions.params import K8sName
from tools.models.ids import ActionType

__all__ = ["CordonNode", "UncordonNode", "DrainK8sNode", "EvictPod"]


class CordonNode(Action):
    """`kubectl cordon <node>`: mark unschedulable (reversible)."""

    action_type: ClassVar[ActionType] = "cordon_node"
    node: K8sName

    def _commands(self) -> list[list[str]]:
        return [["kubectl", "cordon", self.node]]

    def describe(self) -> str:
        return f"cordon Kubernetes node {self.node}"


class UncordonNode(Action):
    """`kubectl uncordon <node>`."""

    action_type: ClassVar[ActionType] = "uncordon_node"
    node: K8sName

    def _commands(self) -> list[list[str]]:
        return [["kubectl", "uncordon", self.node]]

    def describe(self) -> str:
        return f"uncordon Kubernetes node {self.node}"


class DrainK8sNode(Action):
    """`kubectl drain <node> --ignore-daemonsets --delete-emptydir-data`: cordon and evict its pods."""

    action_type: ClassVar[ActionType] = "drain_k8s_node"
    node: K8sName

    def _commands(self) -> list[list[str]]:
        return [["kubectl", "drain", self.node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s"]]

    def describe(self) -> str:
        return f"drain Kubernetes node {self.node} (evicts its pods)"


class EvictPod(Action):
    """Evict one pod through the Eviction API (honours PodDisruptionBudgets)."""

    action_type: ClassVar[ActionType] = "evict_pod"
    pod: K8sName
    namespace: K8sName = "default"

    def _commands(self) -> list[list[str]]:
        # kubectl has no evict verb; the Eviction subresource is what drain uses per pod.
        return [["kubectl", "create", "--raw",
                 f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}/eviction", "-f", "-"]]

    def describe(self) -> str:
        return f"evict pod {self.namespace}/{self.pod}"
