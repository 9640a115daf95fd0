"""check_node_not_responding: a node that stopped answering slurmctld, crashed or rebooted under its jobs.

Evidence, per node: Slurm's state (``NOT_RESPONDING`` / sinfo ``*``, DOWN with ``Not responding``, the
reason slurmctld gives a node that registered after an unplanned reboot, ``Node unexpectedly rebooted``),
the kernel's own record of the host going down (``Kernel panic - not syncing``, a fatal APEI/GHES hardware
error, an uncorrected machine check, an EDAC uncorrectable memory error, a hard lockup — also from a pstore
dump of the previous boot), and jobs that ended ``NODE_FAIL`` there (sacct). Jobs Slurm already requeued
(running or pending again) are named but not resubmitted a second time.
"""

from __future__ import annotations

from pydantic import Field

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs, job_nodes, job_state
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import HostFaultEvent
from tools.platform import resubmit_specs

__all__ = ["UnresponsiveConfig", "check_node_not_responding"]


class UnresponsiveConfig(CheckConfig):
    """The reasons slurmctld writes for a node that stopped answering or came back from a crash."""

    reason_text: str = "not responding"
    reboot_reasons: list[str] = Field(default_factory=lambda: ["unexpectedly rebooted"])
    """Reasons (lower-case substrings) slurmctld sets when a node returned from a reboot nobody asked for."""
    resume_failed_reasons: list[str] = Field(default_factory=lambda: ["resumetimeout reached", "resume timeout"])
    """Reasons slurmctld sets when a node that power saving woke (ResumeProgram) did not register within
    slurm.conf's ResumeTimeout: it is marked DOWN, its jobs are requeued elsewhere; the node did not boot."""


def _lost_with_node(facts: Facts, job_id: str, node: str) -> bool:
    """Still allocated there, or ended NODE_FAIL there (what Slurm gives jobs lost with a node); a job a
    user cancelled or that failed on its own earlier was not lost to this node."""
    here = any(j.job_id == job_id for j in facts.jobs_on_node(node, states=None))
    if here and job_state(facts, job_id) in ("RUNNING", "COMPLETING", "SUSPENDED", "NODE_FAIL"):
        return True
    return any(r.job_id == job_id and (r.state or "").startswith("NODE_FAIL") for r in facts.acct_on_node(node))


def _requeued(facts: Facts, job_id: str, node: str) -> bool:
    """Slurm put the job back itself: it is pending or running again, and either counts a restart
    (scontrol ``Restarts=``) or no longer holds this node."""
    if job_state(facts, job_id) not in ("PENDING", "RUNNING", "CONFIGURING"):
        return False
    job = facts.job(job_id)
    return bool(job is not None and (job.restarts or 0) > 0) or node not in job_nodes(facts, job_id)


def _crashes(facts: Facts) -> tuple[dict[str, list[HostFaultEvent]], dict[str, str]]:
    """Fatal host-fault events per node, and the part (FRU) any of the node's hardware records names."""
    out: dict[str, list[HostFaultEvent]] = {}
    parts: dict[str, str] = {}
    for ev in facts.kernel_events_of("host_fault"):
        if isinstance(ev, HostFaultEvent) and ev.node:
            if ev.fatal:
                out.setdefault(ev.node, []).append(ev)
            if ev.fru:
                parts.setdefault(ev.node, ev.fru)
    return out, parts


def _memory_killed_slurmd(facts: Facts, node: str) -> bool:
    """The kernel's OOM killer ended slurmd there: the memory was the node's jobs' (host_oom names them); resubmitting
    the job that ran there would fill the next node the same way."""
    return any(getattr(e, "process", None) == "slurmd" for e in facts.kernel_events_on(node) if e.kind == "oom_kill")


def check_node_not_responding(facts: Facts, cfg: UnresponsiveConfig) -> list[Finding]:
    """node_unresponsive per node that is not responding, came back from an unexpected reboot, or whose
    kernel recorded it going down (see the module docstring). Culprits: the node, then its jobs lost with
    it. Actions: drain the node (a host that crashed once is checked before it takes work again; a DOWN
    node is drained so it does not return to service by itself) and resubmit lost jobs that Slurm did not
    requeue. Strength: direct with a kernel crash record, else state.

    Sources: sinfo / scontrol show node (state flags, reason), sinfo -R; kernel-log (incl. pstore); sacct.
    """
    crashes, parts_named = _crashes(facts)
    findings: list[Finding] = []
    for name in dict.fromkeys([n.name for n in facts.nodes] + list(crashes)):
        node = facts.node(name)
        reason = facts.reason_of(name) or ""
        low = reason.lower()
        state = "+".join([node.state or "?", *node.flags]) if node is not None else None
        down = node is not None and ((node.state or "") == "DOWN" and cfg.reason_text in low or node.not_responding)
        rebooted = any(r in low for r in cfg.reboot_reasons)
        down = down or (node is not None and (node.state or "") == "DOWN"
                        and any(r in low for r in cfg.resume_failed_reasons))
        crashed = crashes.get(name, [])
        if not (down or rebooted or crashed):
            continue
        if node is not None and not down and ((node.state or "") == "INVAL" or "INVALID_REG" in node.flags):
            continue  # it came back and registered with less than configured: node_config_mismatch names that
        jobs = [j for j in affected_jobs(facts, [name]) if _lost_with_node(facts, j, name)]
        requeued = [j for j in jobs if _requeued(facts, j, name)]
        evidence = [kernel_evidence(e) for e in crashed[:3]]
        if node is not None:
            evidence.insert(0, Evidence(text=f"node {name} State={state} Reason={reason or 'none'}",
                                        metric="scontrol show node"))
        what = ("kernel recorded " + ", ".join(sorted({e.what.replace('_', ' ') for e in crashed}))
                + (f" ({parts_named[name]})" if name in parts_named else "")) if crashed else ""
        parts = [f"{name} is {state}" + (f" (reason: {reason})" if reason else "")] if node is not None else [name]
        if what:
            parts.append(what)
        if requeued:
            parts.append(f"Slurm requeued {', '.join(requeued[:4])} itself")
        strength = "direct" if crashed else "state"
        drain = node is not None and "DRAIN" not in (node.flags or []) and (node.state or "") != "DRAINED"
        # Drained by a person with a reason of their own (a PSU fault, a ticket) before it stopped answering, no crash
        # record and no job lost: the node is already out of service under repair; known, not a new fault.
        # A node set DOWN by a person with such a reason (scontrol update State=DOWN Reason=…) is the same.
        in_repair = node is not None and not crashed and not jobs and bool(reason) \
            and not any(w in low for w in (cfg.reason_text, *cfg.reboot_reasons, *cfg.resume_failed_reasons))
        drain = drain and not in_repair
        findings.append(Finding(
            check="node_not_responding", root_cause="node_unresponsive",
            message="; ".join(parts),
            culprits=[f"node:{name}", *job_culprits(jobs)],
            evidence=evidence[:5],
            strength=strength, confidence=confidence(strength, corroborated=bool(jobs) or (bool(crashed) and rebooted),
                                                     informational=in_repair),
            suggested_actions=([ActionSpec(type="drain_node", node=name,
                                           reason="node crashed or stopped responding" if crashed or rebooted
                                           else "slurmd not responding")] if drain else [])
            + ([] if _memory_killed_slurmd(facts, name) else
               resubmit_specs(facts, [j for j in jobs if j not in requeued], [name], f"job lost with {name}")),
        ))
    return findings
