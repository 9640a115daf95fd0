""""What would draining cost?": each plan's blast radius, read from the evidence, in words.

For every proposed plan (or, when the question names a node no plan drains, for draining that node
as a hypothetical), from :func:`agent.blast.blast_radius` and the facts: the GPUs it takes out of
service and the partition's share out with it, the running jobs on the node (a Slurm DRAIN lets
them finish; a cordon likewise), the GPU-hours of running work it would end, the jobs of other users
it touches, and Warden's recent drains in that partition. Then the GPU-hours already lost by the
culprit jobs (the get_gpu_hours_lost read tool).
"""

from __future__ import annotations

from agent.blast import blast_radius
from agent.deps import WardenDeps
from tools import read
from tools.actions import ACTION_FACTS
from tools.facts import Facts
from tools.models.findings import ActionSpec, Diagnosis

__all__ = ["impact_lines"]


def _running_on(facts: Facts, node: str) -> str:
    jobs = facts.jobs_on_node(node)
    if not jobs:
        return "no running job there"
    shown = ", ".join(f"{j.job_id} ({j.user or '?'}, {j.num_gpus or '?'} GPUs)" for j in jobs[:5])
    return f"running there: {shown}" + (f" and {len(jobs) - 5} more" if len(jobs) > 5 else "")


def _spec_lines(spec: ActionSpec, title: str, facts: Facts, deps: WardenDeps, requester: str) -> list[str]:
    f = ACTION_FACTS[spec.type]
    br = blast_radius(spec, facts, requester=requester, audit=deps.audit)
    out = [f"{title} [{f.reversibility}]:"]
    if f.takes_out_of_service and spec.node:
        node = facts.node(spec.node)
        gpus = node.gpus_total if node and node.gpus_total is not None else "?"
        where = f"partition {br.partition}" if br.partition else "its group"
        out.append(f"  takes {gpus} GPUs of {where} out of service; with it {br.partition_gpu_share_pct:.0f}% of the "
                   f"partition's GPUs would be out (down or drained)")
        out.append(f"  {_running_on(facts, spec.node)}; a drain ends none of them, new jobs stop landing there")
        out.append(f"  Warden drained {br.warden_drained_last_hour} other node(s) of it in the last hour")
    if f.kills_jobs:
        out.append(f"  ends running work worth {br.running_gpu_hours_killed:g} GPU-hours")
    if f.touches_job:
        out.append(f"  touches {br.other_users_jobs_touched} job(s) of users other than {requester or 'you'}")
    if f.reversibility == "irreversible":
        out.append("  cannot be undone: it needs a second person's approval")
    if not (f.takes_out_of_service or f.kills_jobs or f.touches_job):
        out.append("  changes no job and no node's service")
    return out


_VERBS = {"drain": ("drain_node", "drain_k8s_node", "cordon_node"), "cordon": ("cordon_node", "drain_k8s_node"),
          "resubmit": ("resubmit_from_checkpoint", "resize_job"), "requeue": ("requeue_job",),
          "cancel": ("cancel_job",), "evict": ("evict_pod",), "hold": ("hold_job",)}


def _wanted(question: str) -> set[str] | None:
    """The action types a question asks about ("what would draining cost?"), None for any."""
    low = question.lower()
    types = {t for verb, ts in _VERBS.items() if verb in low for t in ts}
    return types or None


def impact_lines(d: Diagnosis, deps: WardenDeps, nodes: list[str], *, requester: str = "",
                 question: str = "") -> list[str]:
    """The answer's lines (see the module docstring)."""
    facts = deps.read.facts
    out: list[str] = []
    types = _wanted(question)
    drained = {a.spec.node for a in d.proposed_actions if ACTION_FACTS[a.spec.type].takes_out_of_service}
    plans = [(i, a) for i, a in enumerate(d.proposed_actions, 1)
             if (types is None or a.spec.type in types)
             and (not nodes or a.spec.node in nodes or a.spec.job in {j.job_id for n in nodes for j in facts.jobs_on_node(n)})]
    for i, a in plans:
        out += _spec_lines(a.spec, f"{i}. {a.description}", facts, deps, requester)
    for node in nodes if types is None or "drain_node" in types else []:
        if node not in drained and facts.node(node) is not None:
            spec = ActionSpec(type="drain_node", node=node, reason="warden: hypothetical")
            out.append(f"Warden does not propose draining {node}. If it were drained:")
            out += _spec_lines(spec, f"drain {node}", facts, deps, requester)[1:]
    if not out:
        out.append(f"No fix is proposed ({d.root_cause}), so nothing would be taken out of service.")
    jobs = [c.split(":", 1)[1] for c in d.culprits if c.startswith("job:")]
    about_culprits = not nodes or any(f"node:{n}" in d.culprits for n in nodes)
    if jobs and about_culprits:
        lost = deps.call("get_gpu_hours_lost", read.get_gpu_hours_lost, job_ids=jobs[:50])
        per = "; ".join(f"job {j.job_id}: {j.gpus} GPUs x {j.hours:g} h ({j.basis})" for j in lost.jobs)
        out.append(f"Already lost: {lost.total_gpu_hours:g} GPU-hours ({per}).")
    return out
