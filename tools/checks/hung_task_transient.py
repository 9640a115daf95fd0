"""check_hung_task_transient: one short burst of the kernel's ``INFO: task X blocked for more than 120
seconds`` on a node whose running jobs kept logging long after it — a task that waited on slow I/O (a large
fsync of a checkpoint to a parallel file system, a busy local disk) and went on, not a hang. With no file-system
error on the node, nothing to act on; said so that the warning does not leave the answer inconclusive.

A real hang looks different: reports repeating, the job's log silent since, or file-system errors beside them
(fs_unavailable's). Sources: kernel-log hung_task records (and the call-trace lines printed with them), job
logs' newest time, squeue/scontrol for the jobs on the node.
"""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig, kernel_evidence
from tools.checks.unexplained import node_signal
from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.models.findings import Evidence, Finding

__all__ = ["HungTaskConfig", "check_hung_task_transient"]

_TRACE_LINES = 60
"""Lines after a hung-task report that belong to its call trace."""


class HungTaskConfig(CheckConfig):
    """What a single episode is."""

    max_reports: int = 4
    episode_min: float = 30.0
    went_on_min: float = 10.0
    """The jobs' logs must go on at least this long after the last report."""


def check_hung_task_transient(facts: Facts, cfg: HungTaskConfig) -> list[Finding]:
    """healthy per node whose hung-task reports are at most ``max_reports`` within ``episode_min``, with no
    other error-level line there than their call traces, while every job running there has its log read,
    no traceback, and lines at least ``went_on_min`` after the last report."""
    findings: list[Finding] = []
    nodes = sorted({e.node for e in facts.kernel_events_of("hung_task") if e.node})
    logs = {s.job: s for s in facts.job_logs if s.job} if nodes else {}
    for node in nodes:
        reports = [e for e in facts.kernel_events_on(node) if e.kind == "hung_task"]
        times = [t for e in reports if (t := kernel_event_time(facts, e)) is not None]
        if not reports or len(reports) > cfg.max_reports or len(times) != len(reports):
            continue
        if max(times) - min(times) > timedelta(minutes=cfg.episode_min):
            continue
        starts = [(e.file, e.line or 0) for e in reports]
        others = [e for e in facts.kernel_events_on(node) if node_signal(e) and e.kind != "hung_task"
                  and not any(e.file == f and 0 < (e.line or 0) - line <= _TRACE_LINES for f, line in starts)]
        if others or facts.kernel_events_of("fs_client", "lustre_error") and any(
                e.node == node for e in facts.kernel_events_of("fs_client", "lustre_error")):
            continue
        jobs = facts.jobs_on_node(node, states=None)
        last = max(times)
        if not jobs or any((j.state or "") != "RUNNING" or j.job_id not in logs
                           or logs[j.job_id].last_timestamp is None
                           or logs[j.job_id].last_timestamp - last < timedelta(minutes=cfg.went_on_min)
                           or any(ev.kind == "traceback" for ev in facts.job_events(j.job_id)) for j in jobs):
            continue
        ids = [j.job_id for j in jobs]
        findings.append(Finding(
            check="hung_task_transient", root_cause="healthy",
            message=f"{len(reports)} hung-task report(s) on {node} at {min(times):%H:%M} (a task waiting on I/O over "
                    f"{reports[0].message.split('more than ')[-1].rstrip('.') if 'more than ' in reports[0].message else '120 s'}), "
                    f"then job(s) {', '.join(ids[:3])} went on logging: a slow write that finished, not a hang",
            culprits=[f"node:{node}"], strength="state", confidence=0.3,
            evidence=[kernel_evidence(reports[0])] + [Evidence(
                text=f"job {j} logged until {logs[j].last_timestamp:%H:%M}", metric="job log") for j in ids[:2]]))
    return findings
