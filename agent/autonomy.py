"""Autonomy modes per node group, and who owns a node Warden might act on.

``autonomy:`` in $WARDEN_HOME/config.yaml chooses, per node group, how far Warden goes::

    autonomy:
      default: recommend          # observe | recommend | execute
      rules:                      # first match wins
        - {group: a100-train, mode: execute, partition: gpu, gpu_model: a100}
        - {group: k8s-inference, mode: observe, k8s_labels: {pool: inference}}
        - {group: staging, mode: execute, features: [staging]}

``observe``: findings only — nothing is planned for execution, nothing waits for approval.
``recommend`` (the default): plans are decided by the policy; anything that changes the cluster
waits for an approval. ``execute``: policy-allowed reversible actions run without approval
(irreversible ones still need a second person). The mode applied is recorded on every decision.

A rule matches a node when every condition it gives holds: ``partition`` (one of the node's
partitions), ``features`` (all present among the node's Slurm features, when the evidence lists
them), ``gpu_model`` (a case-insensitive substring of the node's GRES, e.g. ``gpu:a100:8``, or of
the Kubernetes ``nvidia.com/gpu.product`` label), ``k8s_labels`` (all equal on the Kubernetes node).

:func:`other_owner` says when a node belongs to someone else — drained by a person or a site
health check (NHC, admin reasons: any drain reason without Warden's ``warden:`` prefix), or held by
an external remediation system named in ``external_owners`` — so Warden reports instead of acting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.actions import ACTION_FACTS, WARDEN_PREFIX
from tools.facts import Facts

__all__ = ["Mode", "AutonomyRule", "AutonomyConfig", "NodeGroup", "node_group", "other_owner"]

Mode = Literal["observe", "recommend", "execute"]


class AutonomyRule(BaseModel):
    """One ``autonomy.rules`` entry (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(min_length=1, max_length=64)
    mode: Mode
    partition: str | None = None
    features: list[str] = Field(default_factory=list)
    gpu_model: str | None = None
    k8s_labels: dict[str, str] = Field(default_factory=dict)


class AutonomyConfig(BaseModel):
    """``autonomy:`` of config.yaml: the default mode, the rules, external remediation owners."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: Mode = "recommend"
    rules: list[AutonomyRule] = Field(default_factory=list)
    external_owners: list[str] = Field(default_factory=lambda: ["NVSentinel", "GCM", "Sentinel"])
    """Drain-reason prefixes (Slurm) of remediation systems that own the nodes they act on."""

    def can_execute(self) -> bool:
        """False when every node group observes: then no mutating tool is offered to a model."""
        return self.default != "observe" or any(r.mode != "observe" for r in self.rules)


class NodeGroup(BaseModel):
    """The group an action's target falls in and the mode applied to it."""

    name: str | None
    kind: Literal["node group", "partition", "fleet"]
    mode: Mode
    size: int
    """Nodes in the group (for the share bound)."""
    members: list[str] = Field(default_factory=list)


def _matches(rule: AutonomyRule, facts: Facts, node: str) -> bool:
    s = facts.node(node)
    k = next((n for n in facts.k8s_nodes if n.name == node), None)
    if s is None and k is None:
        return False
    if rule.partition and (s is None or rule.partition not in s.partitions):
        return False
    if rule.features and (s is None or not set(rule.features) <= set(getattr(s, "features", []) or [])):
        return False
    if rule.gpu_model:
        where = " ".join(x for x in ((s.gres if s else None), (k.gpu_product if k else None)) if x).lower()
        if rule.gpu_model.lower() not in where:
            return False
    if rule.k8s_labels and (k is None or any(k.labels.get(a) != b for a, b in rule.k8s_labels.items())):
        return False
    return True


def _all_nodes(facts: Facts) -> list[str]:
    return [n.name for n in facts.nodes] + [n.name for n in facts.k8s_nodes if facts.node(n.name) is None]


def node_group(cfg: AutonomyConfig, facts: Facts | None, node: str | None, *, job: str | None = None) -> NodeGroup:
    """The group and mode for an action on ``node`` (or on ``job``'s first node): the first matching
    rule, else the node's first partition with the default mode, else the whole fleet."""
    if facts is None:
        return NodeGroup(name=None, kind="fleet", mode=cfg.default, size=1)
    if node is None and job is not None:
        j = facts.job(job)
        node = j.nodes[0] if j and j.nodes else None
        if node is None and j is not None and j.partition:
            members = [n.name for n in facts.nodes if j.partition in n.partitions]
            return NodeGroup(name=j.partition, kind="partition", mode=cfg.default, size=len(members) or 1,
                             members=members)
    if node is None:
        return NodeGroup(name=None, kind="fleet", mode=cfg.default, size=max(len(_all_nodes(facts)), 1))
    for rule in cfg.rules:
        if _matches(rule, facts, node):
            members = [n for n in _all_nodes(facts) if _matches(rule, facts, n)]
            return NodeGroup(name=rule.group, kind="node group", mode=rule.mode, size=len(members), members=members)
    s = facts.node(node)
    if s is not None and s.partitions:
        members = [n.name for n in facts.nodes if s.partitions[0] in n.partitions]
        return NodeGroup(name=s.partitions[0], kind="partition", mode=cfg.default, size=len(members), members=members)
    members = _all_nodes(facts)
    return NodeGroup(name=None, kind="fleet", mode=cfg.default, size=max(len(members), 1), members=members)


def other_owner(action: str, node: str | None, facts: Facts | None, cfg: AutonomyConfig) -> str | None:
    """Who else owns ``node``, when Warden must not act on it, else None.

    A Slurm node drained with a reason that lacks Warden's prefix belongs to whoever drained it (a
    person, NHC, a site health check): Warden neither overwrites nor resumes that drain. A reason
    starting with an external remediation system's name means that system owns the node: Warden
    reports instead of acting at all. (Kubernetes cordons are checked against the live object by the
    actions themselves: annotations are not in the evidence.)
    """
    if node is None or facts is None:
        return None
    s = facts.node(node)
    if s is None or not s.drained or (s.reason or "").startswith(WARDEN_PREFIX):
        return None
    reason = s.reason or ""
    who = f"{s.reason_user}" if s.reason_user else "someone else"
    for ext in cfg.external_owners:
        if reason.lower().startswith(ext.lower()):
            return f"the external remediation system {ext} (Reason={reason[:80]})"
    f = ACTION_FACTS[action]
    if f.takes_out_of_service or f.returns_to_service or action == "run_gpu_diagnostic":
        # (a diagnostic step cannot start on a node someone else drained, and the node is theirs)
        return f"{who} (drained with Reason={reason[:80]}, not Warden's)"
    return None
