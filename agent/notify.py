"""notify_owner's two halves that need the evidence: whom to tell, and what to say.

:func:`resolve_owner` finds the owner — Slurm's ``UserId`` of the job (``scontrol``/``sacct``), or
for a pod the ``namespace_owner_label`` of its namespace, read through the Kubernetes client — and
looks them up in ``[notify.directory]``, taking the first channel in ``channels`` order the contact
has. :func:`draft_message` writes what the owner needs: what happened to the job, the evidence,
what Warden did or proposes, and the checkpoint to resume from. Cluster text in it (job names,
log lines) is data: it is cut short and sent as plain text, never as markup that a channel renders.
"""

from __future__ import annotations

import fnmatch
import json
from typing import TYPE_CHECKING

from tools.actions.notify_channels import ChannelKind, Contact, NotifyConfig
from tools.facts import Facts
from tools.models.findings import ActionSpec, Diagnosis

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["Resolution", "resolve_owner", "draft_message"]

_MAX_EVIDENCE = 4


class Resolution:
    """The owner found for a notification, and how to reach them (``channel`` None: no contact)."""

    def __init__(self, user: str | None, channel: ChannelKind | None, recipient: str | None, problem: str | None):
        self.user, self.channel, self.recipient, self.problem = user, channel, recipient, problem


def _read_namespace(kube: ApiClient, namespace: str) -> bytes:
    from kubernetes.client import CoreV1Api  # the Kubernetes client only when a namespace is read (not per import)

    return CoreV1Api(kube).read_namespace(namespace, _preload_content=False, _request_timeout=15).data


def _api_error() -> type[Exception]:
    from kubernetes.client.exceptions import ApiException

    return ApiException


def _namespace_owner(kube: ApiClient | None, namespace: str, label: str) -> tuple[str | None, str | None]:
    if kube is None:
        return None, f"namespace {namespace}: no Kubernetes client configured to read its {label!r} label"
    try:
        raw = _read_namespace(kube, namespace)
    except _api_error() as e:
        return None, f"namespace {namespace}: cannot be read (HTTP {e.status})"
    labels = (json.loads(raw).get("metadata") or {}).get("labels") or {}
    owner = labels.get(label)
    return (owner, None) if owner else (None, f"namespace {namespace} has no {label!r} label naming its owner")


def _pick(contact: Contact, order: list[ChannelKind], user: str) -> tuple[ChannelKind | None, str | None]:
    for ch in order:
        if ch == "slack" and contact.slack:
            return "slack", contact.slack
        if ch == "email" and contact.email:
            return "email", contact.email
        if ch == "webhook" and contact.webhook:
            return "webhook", user
    return None, None


def resolve_owner(spec: ActionSpec, facts: Facts | None, cfg: NotifyConfig | None,
                  kube: ApiClient | None = None) -> Resolution:
    """Who owns the job or pod ``spec`` names, and their contact; ``problem`` says why not found."""
    user: str | None = None
    problem: str | None = None
    if spec.job:
        j = facts.job(spec.job) if facts else None
        a = facts.acct_job(spec.job) if facts else None
        user = (j.user if j else None) or (a.user if a else None)
        if not user:
            problem = f"job {spec.job}: its owner (UserId) is not in the evidence"
    elif spec.pod:
        label = cfg.namespace_owner_label if cfg else "owner"
        user, problem = _namespace_owner(kube, spec.namespace or "default", label)
    elif spec.node:
        owners = cfg.node_owners if cfg else {}
        user = next((who for pattern, who in owners.items() if fnmatch.fnmatchcase(spec.node, pattern)),
                    cfg.oncall if cfg else None)
        if not user:
            problem = f"{spec.node}: no [notify] node_owners pattern matches it and no oncall is set"
    else:
        problem = "notify_owner names neither a job, a pod nor a node"
    if user is None:
        return Resolution(None, None, None, problem)
    if cfg is None:
        return Resolution(user, None, None, "no [notify] table in warden.toml: no channel to reach owners")
    contact = cfg.directory.get(user)
    if contact is None:
        return Resolution(user, None, None, f"no contact for {user!r} in [notify.directory]")
    channel, recipient = _pick(contact, cfg.channels, user)
    if channel is None:
        return Resolution(user, None, None, f"contact {user!r} has none of the channels {', '.join(cfg.channels)}")
    return Resolution(user, channel, recipient, None)


def _checkpoint(d: Diagnosis | None, facts: Facts | None, job: str) -> str:
    for a in d.proposed_actions if d else []:
        if a.spec.job == job and a.spec.checkpoint:
            return a.spec.checkpoint
    saved = [e for e in (facts.job_log_events if facts else []) if e.job == job and e.kind == "checkpoint_saved"]
    path = getattr(saved[-1], "path", None) if saved else None  # a typed CheckpointEvent (tools/models/logs.py)
    if path:
        return f"{path} (newest saved per the job log; not verified)"
    return "none known: the job logged no checkpoint"


def _line(text: str, n: int = 240) -> str:
    return " ".join(str(text).split())[:n]


def draft_message(spec: ActionSpec, facts: Facts | None, diagnosis: Diagnosis | None) -> str:
    """The notification text: first line a summary (the e-mail subject), then what happened, the
    evidence, what Warden did or proposes, and the checkpoint to resume from."""
    if spec.job:
        j = facts.job(spec.job) if facts else None
        what = f"job {spec.job}" + (f" ({_line(j.name, 60)})" if j and j.name else "")
    elif spec.pod:
        what = f"pod {spec.namespace or 'default'}/{spec.pod}"
    else:
        what = f"{spec.node or 'a host'}"
    cause = diagnosis.root_cause if diagnosis else "a problem"
    lines = [f"Warden: {what} — {_line(spec.reason or cause, 160)}", ""]
    if diagnosis:
        lines += ["What happened: " + _line(diagnosis.summary, 600), ""]
    ev = list(diagnosis.evidence[:_MAX_EVIDENCE]) if diagnosis else []
    if ev:
        lines.append("Evidence:")
        lines += [f"  - {_line(e.text)}" + (f" ({e.file}" + (f":{e.line}" if e.line else "") + ")" if e.file else "")
                  for e in ev]
        lines.append("")
    others = [a for a in (diagnosis.proposed_actions if diagnosis else []) if a.spec.type != "notify_owner"]
    if others:
        lines.append("What Warden did or proposes (each under policy and, where needed, approval):")
        lines += [f"  - {_line(a.description, 200)}" for a in others[:6]]
        lines.append("")
    if spec.job:
        lines.append(f"Checkpoint to resume from: {_checkpoint(diagnosis, facts, spec.job)}")
    return "\n".join(lines).strip() + "\n"
