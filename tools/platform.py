"""The platform seam: which platform owns a node, how it is named, and how it is taken out of service.

Slurm and Kubernetes differ in how a node is named in a culprit (``node:gpu017`` / ``k8snode:ip-10-0-0-1``),
what "take it out of service" means (``drain_node`` / ``cordon_node``), and who the victims of its fault are
(jobs to resubmit from a checkpoint / pods). A check asks this seam instead of keeping a Slurm copy and a
Kubernetes copy of itself (one platform-aware GPU-fault check, not ``gpu_xid`` + ``k8s_gpu_xid``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tools.facts import Facts
from tools.facts.queries import affected_jobs, newest_checkpoint
from tools.models.findings import ActionSpec

__all__ = ["PlatformName", "NodeRef", "platform_of", "node_ref", "take_out_of_service", "victims", "resubmit_specs",
           "job_culprits_collapsed", "log_owner", "evacuate", "evict_hurt"]

PlatformName = Literal["slurm", "kubernetes"]

_POD_ACTIVE = ("Pending", "Running", "Unknown", "Failed", None)


@dataclass(frozen=True)
class NodeRef:
    """A node as one platform knows it."""

    name: str
    platform: PlatformName

    @property
    def culprit(self) -> str:
        """``node:<name>`` on Slurm, ``k8snode:<name>`` on Kubernetes."""
        return f"{'k8snode' if self.platform == 'kubernetes' else 'node'}:{self.name}"


def platform_of(facts: Facts, node: str) -> PlatformName:
    """Kubernetes when the API listed the node and Slurm did not; Slurm otherwise (a node named only by a
    log line on a Slurm cluster is still Slurm's)."""
    if facts.k8s_node(node) is not None and facts.node(node) is None:
        return "kubernetes"
    if not facts.nodes and not facts.acct and facts.k8s_nodes:
        return "kubernetes"
    return "slurm"


def node_ref(facts: Facts, node: str) -> NodeRef:
    """The node as its platform names it."""
    return NodeRef(node, platform_of(facts, node))


def take_out_of_service(facts: Facts, ref: NodeRef, reason: str) -> list[ActionSpec]:
    """The reversible step that stops new work landing on the node: ``drain_node`` on Slurm, ``cordon_node``
    on Kubernetes; nothing when the node is already out of service (drained or cordoned)."""
    if ref.platform == "kubernetes":
        k = facts.k8s_node(ref.name)
        if k is not None and k.unschedulable:
            return []
        return [ActionSpec(type="cordon_node", node=ref.name, reason=reason)]
    n = facts.node(ref.name)
    if n is not None and n.drained:
        return []
    return [ActionSpec(type="drain_node", node=ref.name, reason=reason)]


def evacuate(facts: Facts, ref: NodeRef, reason: str) -> list[ActionSpec]:
    """The step before a node is rebooted or its GPUs reset: on Kubernetes ``drain_k8s_node`` (cordon, then evict
    its pods through the Eviction API so their controllers place them elsewhere); nothing more on Slurm, where
    ``drain_node`` already keeps new jobs off and the jobs hit are resubmitted."""
    if ref.platform == "kubernetes":
        return [ActionSpec(type="drain_k8s_node", node=ref.name, reason=reason)]
    return []


def resubmit_specs(facts: Facts, job_ids: list[str], exclude_nodes: list[str], reason: str) -> list[ActionSpec]:
    """resubmit_from_checkpoint proposals for jobs whose work was lost on ``exclude_nodes``, each from its
    run's newest saved checkpoint; where no log names a checkpoint, the owner is told too (the resubmitted
    job starts over, which is the owner's call to make)."""
    out: list[ActionSpec] = []
    for j in job_ids:
        ckpt = newest_checkpoint(facts, j)
        out.append(ActionSpec(type="resubmit_from_checkpoint", job=j, exclude_nodes=sorted(exclude_nodes),
                              checkpoint=ckpt, reason=reason))
        if ckpt is None:
            out.append(ActionSpec(type="notify_owner", job=j,
                                  reason=f"{reason}; no saved checkpoint found in the job's logs"))
    return out


def victims(facts: Facts, ref: NodeRef, reason: str, *, since: datetime | None = None,
            jobs: list[str] | None = None, max_pods: int = 10) -> tuple[list[str], list[ActionSpec]]:
    """(culprits, actions) for the work a node's fault hurt: on Slurm the jobs running there or ended badly
    there since the fault (resubmitted from their newest checkpoint, excluding the node); on Kubernetes the
    GPU pods bound there (named), and those of them crash-looping there evicted so their controllers place
    them elsewhere (a cordon alone leaves a bound pod where it is).

    Args:
        jobs: the Slurm victims when the caller already knows them (otherwise ``affected_jobs``).
    """
    if ref.platform == "kubernetes":
        pods = [p for p in facts.pods_on(ref.name) if p.gpu_request and p.phase in _POD_ACTIVE]
        # A cordon keeps new pods off, but a pod crash-looping on the bad GPU stays bound there: evict it (only
        # one a controller recreates) so it is scheduled elsewhere.
        return [f"pod:{p.namespace}/{p.name}" for p in pods[:max_pods]], evict_hurt(pods, ref.name, reason, max_pods)
    ids = list(dict.fromkeys(jobs if jobs is not None else affected_jobs(facts, [ref.name], since=since)))
    return job_culprits_collapsed(ids), resubmit_specs(facts, ids, [ref.name], reason)


_START_FAILURES = frozenset({"CrashLoopBackOff", "CreateContainerError", "RunContainerError", "StartError",
                             "ContainerCreating", "CreateContainerConfigError"})


def evict_hurt(pods: list, node: str, reason: str, max_pods: int = 10) -> list[ActionSpec]:
    """``evict_pod`` for the controller-owned pods (a controller recreates them) that the node's fault keeps
    failing where they are bound: crash-looping or unable to start there, or restarted in place after a failed
    run (on the same GPU). A cordon keeps new pods off but leaves these bound to the node."""
    def hurt(p: object) -> bool:
        cs = getattr(p, "containers", [])
        return any(c.state_reason in _START_FAILURES or (c.restart_count and c.last_terminated_exit_code not in (None, 0))
                   for c in cs) or (getattr(p, "phase", None) == "Pending" and not cs)
    return [ActionSpec(type="evict_pod", pod=p.name, namespace=p.namespace, reason=f"failing on {node}: {reason}")
            for p in pods if p.owner_name and hurt(p)][:max_pods]


def job_culprits_collapsed(ids: list[str], *, max_tasks: int = 1) -> list[str]:
    """``job:<id>`` culprits, with the tasks of one array named by the array (``job:90311`` for
    ``90311_479``, ``90311_480`` ...) when more than ``max_tasks`` of its tasks are hit."""
    arrays: dict[str, list[str]] = {}
    for j in ids:
        if "_" in j:
            arrays.setdefault(j.split("_", 1)[0], []).append(j)
    out: list[str] = []
    for j in ids:
        base = j.split("_", 1)[0]
        name = base if "_" in j and len(arrays.get(base, [])) > max_tasks else j
        if f"job:{name}" not in out:
            out.append(f"job:{name}")
    return out


def log_owner(facts: Facts, key: str, reason: str) -> tuple[str, ActionSpec]:
    """(culprit, notify_owner proposal) for the workload a job-log file was recorded for: a Slurm job id, or on
    Kubernetes the ``namespace/pod`` whose container log it is (``kubectl logs``), named and told as a pod."""
    ns, _, pod = key.rpartition("/")
    if ns and any(p.namespace == ns and p.name == pod for p in facts.k8s_pods):
        return f"pod:{key}", ActionSpec(type="notify_owner", pod=pod, namespace=ns, reason=reason)
    return f"job:{key}", ActionSpec(type="notify_owner", job=key, reason=reason)
