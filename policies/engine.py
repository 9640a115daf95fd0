"""Evaluate a proposed Warden action against the Cedar policies: allow, needs_approval or deny.

Cedar itself only answers Allow or Deny, so ``needs_approval`` is computed by asking twice:

1. The request as it stands (with whatever approval it carries). Allow -> ``allow``, reporting
   the permits that matched. Deny because a forbid matched -> ``deny``, reporting the forbids.
2. Denied only because no permit matched: ask again with a hypothetical approval of this plan by
   a second person who is in both the ``oncall`` and ``admins`` groups. If that is allowed ->
   ``needs_approval``, reporting the permits an approval would satisfy; otherwise ``deny``
   (``implicit-deny``, or the forbids that matched).

So what an approval unlocks is written in Cedar (permits conditioned on ``context.approved``),
and no approval can lift a forbid (blast-radius limits, self-approval, unauthorized approvers).
The engine fails closed: a Cedar evaluation error (say, an action on the wrong resource type)
is a ``deny`` naming the error, never an allow.

Limits come from :class:`PolicyConfig` and reach Cedar as context attributes
(``context.max_partition_gpu_share_pct`` ...); config is data and never becomes policy text.
Entity ids (node, job, user names from the cluster) go to Cedar in the structured
``{"type", "id"}`` form, so no cluster text is ever parsed as Cedar.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

import cedarpy
from pydantic import BaseModel, ConfigDict, Field

from policies.config import PolicyConfig
from policies.loader import LoadedPolicy, PolicyBundle, load_bundle

__all__ = [
    "ActionId",
    "ResourceType",
    "Reversibility",
    "DecisionKind",
    "ACTION_REVERSIBILITY",
    "DEFAULT_POLICY_PATH",
    "DEFAULT_SCHEMA_PATH",
    "PolicyRequest",
    "PolicyDecision",
    "PolicyEngine",
    "explain",
]

ActionId = Literal[
    "read",
    "run_gpu_diagnostic",
    "notify_owner",
    "drain_node",
    "resume_node",
    "hold_job",
    "release_job",
    "cordon_node",
    "uncordon_node",
    "update_job",
    "requeue_job",
    "resubmit_from_checkpoint",
    "resize_job",
    "cancel_job",
    "evict_pod",
    "drain_k8s_node",
]
ResourceType = Literal["Node", "Job", "Partition", "Pod"]
Reversibility = Literal["read_only", "reversible", "irreversible"]
DecisionKind = Literal["allow", "needs_approval", "deny"]

DEFAULT_POLICY_PATH = Path(__file__).with_name("default.cedar")
DEFAULT_SCHEMA_PATH = Path(__file__).with_name("warden.cedarschema")

_ACTION_DECL = re.compile(r'^\s*action\s+((?:"[a-z0-9_]+"\s*,?\s*)+)\s+in\s+\[([^\]]*)\]', re.MULTILINE)


def schema_reversibility(schema_text: str) -> dict[str, Reversibility]:
    """Each action id's class from the Cedar schema's action groups (``action "x" in ["reversible"]``):
    the schema is the policy layer's one declaration of it (a test holds it equal to the action
    classes' own facts)."""
    out: dict[str, Reversibility] = {}
    for names, groups in _ACTION_DECL.findall(schema_text):
        kinds = [g for g in ("read_only", "reversible", "irreversible") if f'"{g}"' in groups]
        for name in re.findall(r'"([a-z0-9_]+)"', names):
            if kinds:
                out[name] = kinds[0]  # type: ignore[assignment]
    return out


ACTION_REVERSIBILITY: dict[str, Reversibility] = schema_reversibility(DEFAULT_SCHEMA_PATH.read_text(encoding="utf-8"))
"""Reversibility of each action id, read from policies/warden.cedarschema's action groups."""

_HYPOTHETICAL_APPROVER = "warden:hypothetical-second-approver"
_APPROVER_GROUPS = ("oncall", "admins")


class PolicyRequest(BaseModel):
    """One proposed action, with who asks, on what, and its blast radius."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    principal: str = Field(min_length=1)
    """User name on whose behalf Warden acts."""
    groups: list[str] = Field(default_factory=list)
    """Groups of the principal (e.g. ``oncall``, ``admins``)."""
    action: ActionId
    resource_type: ResourceType
    resource_id: str = Field(min_length=1)
    """Node name, job id, partition name or ``namespace/pod``."""
    partition: str | None = None
    """Partition holding the Node or Job, when known (becomes its Cedar parent)."""
    dry_run: bool = True
    """True (the default) when only the plan is rendered; nothing runs."""
    approved: bool = False
    """True when an approval for this exact plan hash is presented."""
    approver: str = ""
    """User name of the approver, "" if none."""
    approver_groups: list[str] = Field(default_factory=list)
    """Groups of the approver."""
    requester: str | None = None
    """User who asked for the action; defaults to ``principal``."""
    autonomy_mode: Literal["observe", "recommend", "execute"] = "recommend"
    """The autonomy mode of the target's node group (recorded on the decision)."""
    warden_drained_last_hour: int = Field(default=0, ge=0)
    """Nodes Warden drained or cordoned in this partition in the last hour, before this one."""
    partition_gpu_share_pct: float = Field(default=0.0, ge=0.0, le=100.0)
    """Share of the partition's GPUs out of service including this action, percent."""
    running_gpu_hours_killed: float = Field(default=0.0, ge=0.0)
    """GPU-hours already spent by running jobs this action would kill."""
    other_users_jobs_touched: int = Field(default=0, ge=0)
    """Jobs of users other than the requester that this action stops, holds or changes."""

    @property
    def reversibility(self) -> Reversibility:
        """The action's class, from :data:`ACTION_REVERSIBILITY` (never from the caller)."""
        return ACTION_REVERSIBILITY[self.action]

    @property
    def effective_requester(self) -> str:
        """``requester`` if given, else ``principal``."""
        return self.requester or self.principal


class PolicyDecision(BaseModel):
    """The engine's answer for one request.

    ``reasons[i]`` explains ``policy_ids[i]`` (the policy's ``@reason``, or the engine's own
    words for ``implicit-deny`` and ``evaluation-error``).
    """

    model_config = ConfigDict(frozen=True)

    decision: DecisionKind
    policy_ids: list[str]
    reasons: list[str]
    action: str = ""
    resource: str = ""
    """Cedar entity, e.g. ``Node::"gpu017"``."""
    reversibility: Reversibility | None = None
    dry_run: bool = True
    context: dict[str, bool | int | str] = Field(default_factory=dict)
    """The Cedar context the decision was made on (blast radius and limits included)."""

    @property
    def allowed(self) -> bool:
        """True only for ``allow``."""
        return self.decision == "allow"


def _user(name: str, groups: list[str] | tuple[str, ...]) -> dict[str, object]:
    return {
        "uid": {"type": "Warden::User", "id": name},
        "attrs": {},
        "parents": [{"type": "Warden::Group", "id": g} for g in sorted(set(groups))],
    }


class PolicyEngine:
    """The loaded, checked policy set plus the limits; evaluate requests against it."""

    def __init__(self, bundle: PolicyBundle, config: PolicyConfig) -> None:
        """Wrap an already loaded bundle; most callers want :meth:`load`."""
        self._bundle = bundle
        self._config = config

    @classmethod
    def load(
        cls,
        paths: list[Path] | None = None,
        config: PolicyConfig | Path | None = None,
        schema_path: Path | None = None,
    ) -> PolicyEngine:
        """Load policy files and limits; fail loudly on anything invalid.

        Args:
            paths: Cedar files or directories of ``*.cedar``; None loads ``policies/default.cedar``.
            config: limits, or a YAML file of them; None uses :class:`PolicyConfig` defaults.
            schema_path: Cedar schema; None uses ``policies/warden.cedarschema``.

        Raises:
            PolicyError: a subclass naming the file and line (parse error, schema violation,
                missing or duplicate @id, unreadable file, invalid config). Never falls back.
        """
        if isinstance(config, Path):
            config = PolicyConfig.from_file(config)
        bundle = load_bundle(paths if paths is not None else [DEFAULT_POLICY_PATH], schema_path or DEFAULT_SCHEMA_PATH)
        return cls(bundle, config or PolicyConfig())

    @property
    def config(self) -> PolicyConfig:
        """The limits in force."""
        return self._config

    @property
    def policies(self) -> dict[str, LoadedPolicy]:
        """Loaded policies by ``@id`` (effect, reason, file and line)."""
        return dict(self._bundle.policies)

    @property
    def paths(self) -> list[Path]:
        """The policy files loaded, in load order."""
        return list(self._bundle.paths)

    def _context(self, req: PolicyRequest, approver: str, approved: bool) -> dict[str, object]:
        requester = req.effective_requester
        cfg = self._config
        return {
            "dry_run": req.dry_run,
            "approved": approved,
            "approver": approver,
            "approver_user": {"__entity": {"type": "Warden::User", "id": approver}},
            "requester": requester,
            "approver_is_requester": bool(approver) and approver in (requester, req.principal),
            "reversibility": req.reversibility,
            "autonomy_mode": req.autonomy_mode,
            "warden_drained_last_hour": req.warden_drained_last_hour,
            "partition_gpu_share_pct": math.ceil(req.partition_gpu_share_pct),
            "running_gpu_hours_killed": math.ceil(req.running_gpu_hours_killed),
            "other_users_jobs_touched": req.other_users_jobs_touched,
            "max_partition_gpu_share_pct": cfg.max_partition_gpu_share_pct,
            "max_drains_per_partition_per_hour": cfg.max_drains_per_partition_per_hour,
            "max_running_gpu_hours_killed": cfg.max_running_gpu_hours_killed,
            "max_other_users_jobs_touched": cfg.max_other_users_jobs_touched,
        }

    def _entities(self, req: PolicyRequest, approver: str, approver_groups: list[str] | tuple[str, ...]) -> list[object]:
        users: dict[str, list[str]] = {req.principal: list(req.groups)}
        if approver:
            users.setdefault(approver, []).extend(approver_groups)
        entities: list[object] = [_user(name, groups) for name, groups in users.items()]
        parents = []
        if req.partition is not None and req.resource_type in ("Node", "Job"):
            parents = [{"type": "Warden::Partition", "id": req.partition}]
            entities.append({"uid": parents[0], "attrs": {}, "parents": []})
        if not (req.resource_type == "Partition" and req.resource_id == req.partition):
            entities.append(
                {"uid": {"type": f"Warden::{req.resource_type}", "id": req.resource_id}, "attrs": {}, "parents": parents}
            )
        return entities

    def _authorize(self, req: PolicyRequest, *, hypothetical: bool) -> tuple[cedarpy.AuthzResult, dict[str, object]]:
        if hypothetical:
            approver, groups, approved = _HYPOTHETICAL_APPROVER, _APPROVER_GROUPS, True
        else:
            approver, groups, approved = req.approver, tuple(req.approver_groups), req.approved
        context = self._context(req, approver, approved)
        cedar_request = {
            "principal": {"type": "Warden::User", "id": req.principal},
            "action": {"type": "Warden::Action", "id": req.action},
            "resource": {"type": f"Warden::{req.resource_type}", "id": req.resource_id},
            "context": context,
        }
        result = cedarpy.is_authorized(
            cedar_request, self._bundle.policy_set, self._entities(req, approver, groups), schema=self._bundle.schema
        )
        return result, context

    def _ids_and_reasons(self, result: cedarpy.AuthzResult) -> tuple[list[str], list[str]]:
        by_reason = result.diagnostics.id_annotations_by_reason
        ids = sorted({by_reason.get(r, r) for r in result.diagnostics.reasons})
        reasons = [self._bundle.policies[i].reason if i in self._bundle.policies else "" for i in ids]
        return ids, reasons

    def evaluate(self, request: PolicyRequest) -> PolicyDecision:
        """Decide one request: ``allow``, ``needs_approval`` or ``deny`` (see the module docstring).

        Returns:
            PolicyDecision with the deciding policy ids and their reasons. Never raises for a
            valid PolicyRequest; anything Cedar cannot evaluate is denied (``evaluation-error``).
        """
        resource = f'{request.resource_type}::"{request.resource_id}"'
        result, context = self._authorize(request, hypothetical=False)
        shown = {k: v for k, v in context.items() if k != "approver_user"}

        def decide(kind: DecisionKind, ids: list[str], reasons: list[str]) -> PolicyDecision:
            return PolicyDecision(
                decision=kind,
                policy_ids=ids,
                reasons=reasons,
                action=request.action,
                resource=resource,
                reversibility=request.reversibility,
                dry_run=request.dry_run,
                context=shown,  # type: ignore[arg-type]
            )

        if result.diagnostics.errors:
            return decide("deny", ["evaluation-error"], ["; ".join(result.diagnostics.errors)])
        ids, reasons = self._ids_and_reasons(result)
        if result.allowed:
            return decide("allow", ids, reasons)
        if ids:
            return decide("deny", ids, reasons)

        hypothetical, _ = self._authorize(request, hypothetical=True)
        if hypothetical.diagnostics.errors:
            return decide("deny", ["evaluation-error"], ["; ".join(hypothetical.diagnostics.errors)])
        ids, reasons = self._ids_and_reasons(hypothetical)
        if hypothetical.allowed:
            return decide("needs_approval", ids, reasons)
        if ids:
            return decide("deny", ids, reasons)
        return decide(
            "deny",
            ["implicit-deny"],
            [f"no policy permits {request.action} on {resource}, even with an approval"],
        )


_LIMITS = {
    "partition_gpu_share_pct": "max_partition_gpu_share_pct",
    "warden_drained_last_hour": "max_drains_per_partition_per_hour",
    "running_gpu_hours_killed": "max_running_gpu_hours_killed",
    "other_users_jobs_touched": "max_other_users_jobs_touched",
}


def explain(decision: PolicyDecision) -> str:
    """Render a decision for people: a headline, one line per deciding policy, the blast radius.

    Example::

        deny: drain_node on Node::"gpu017" (reversible)
          - drain-partition-share-limit: taking this node out would put more than ...
          blast radius: partition_gpu_share_pct=38 (limit 25), warden_drained_last_hour=0 (limit 3), ...
    """
    kind = decision.reversibility or "unknown"
    mode = ", dry run" if decision.dry_run else ""
    lines = [f"{decision.decision}: {decision.action} on {decision.resource} ({kind}{mode})"]
    for policy_id, reason in zip(decision.policy_ids, decision.reasons, strict=False):
        lines.append(f"  - {policy_id}: {reason}" if reason else f"  - {policy_id}")
    if decision.decision == "needs_approval":
        who = "a second person in oncall/admins (not the requester)" if kind == "irreversible" else "an oncall member or admin"
        lines.append(f"  approval needed from {who}, bound to this plan's hash")
    facts = [f"{k}={decision.context[k]} (limit {decision.context[v]})" for k, v in _LIMITS.items() if k in decision.context]
    if facts:
        lines.append("  blast radius: " + ", ".join(facts))
    return "\n".join(lines)
