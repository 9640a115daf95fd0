"""Follow-up answers Warden gives itself, from the Diagnosis and the read tools (no model call).

The built-in model answers diagnosis requests only; these answers make its chat useful, and any
model's chat falls back to them when the model fails. Each reads the session's evidence through
the read tools (:meth:`agent.deps.WardenDeps.call`: audited, recorded in the run store), never
re-reads the cluster, and says where every line comes from (``path:line``).

    why not NODE? / what about NODE?   what was read about NODE, and why it was not named
    what about job J?                   the job's state, findings, log events, GPU-hours
    show the log lines                  the cited lines with paths and times, the culprits' log events
    what would draining cost?           per plan (or for draining a named node): capacity, work killed
    what should we do?                  the plans, numbered for /plan N and /approve N
    why? / how sure?                    the summary, confidence and the signals set aside
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.chat.impact import impact_lines
from agent.chat.subjects import Asked, read_question
from agent.deps import WardenDeps
from agent.render.view import DiagnosisView, EvidenceLine, build_view
from tools import read
from tools.models.findings import Diagnosis

__all__ = ["answer_followup"]


def _ev(e: EvidenceLine) -> str:
    when = f"{e.when}  " if e.when else ""
    return f"  {when}{e.where or '(no location)'}\n      {e.text}"


def _culprits(d: Diagnosis, kind: str) -> list[str]:
    return [c.split(":", 1)[1] for c in d.culprits if c.startswith(kind + ":")]


def _node(deps: WardenDeps, d: Diagnosis, view: DiagnosisView, node: str) -> list[str]:
    cov = deps.call("get_evidence_coverage", read.get_evidence_coverage, subjects=[node]).subjects[0]
    found = deps.call("get_findings", read.get_findings, culprit=node, limit=10).findings
    kern = deps.call("get_kernel_events", read.get_kernel_events, node=node, limit=5)
    gpu = deps.call("get_gpu_metrics", read.get_gpu_metrics, node=node, limit=1).nodes
    named = node in _culprits(d, "node") or node in _culprits(d, "k8snode")
    out = [f"{node} is named as a culprit of {d.root_cause}." if named
           else f"{node} is not named: the diagnosis is {d.root_cause} on {', '.join(d.culprits) or 'nothing'}."]
    out.append("What was read about it:")
    out.append(f"  scheduler: {cov.state}" if cov.known and cov.state else
               ("  scheduler: no Slurm or Kubernetes record of it" if not cov.known else "  scheduler: known, no state"))
    if gpu:
        g = gpu[0]
        xid = f", last Xid {g.xid}" if g.xid else ", no Xid"
        out.append(f"  DCGM: {g.gpus} GPUs, utilisation {g.util_pct}%, SM clock {g.sm_clock_mhz} MHz, "
                   f"temperature {g.temp_c} C{xid}")
    else:
        out.append("  DCGM: no GPU samples for it")
    kinds = ", ".join(f"{k} {n}" for k, n in kern.by_kind.items())
    out.append(f"  kernel log: {kern.total} events ({kinds})" if kern.total else "  kernel log: no classified event")
    for e in kern.events[:3]:
        out.append(f"      {e.file}:{e.line}  {e.text}")
    if found:
        out.append("Findings about it:")
        for f in found:
            role = "the root cause" if f.root_cause == d.root_cause else "set aside: a symptom or a lesser cause"
            out.append(f"  {f.root_cause} {f.confidence:.2f} ({role}): {f.message}")
    else:
        out.append("No check found a fault on it.")
    if not named and view.evidence:
        out.append("What the named culprit has instead:")
        out += [_ev(e) for e in view.evidence[:3]]
    return out


def _job(deps: WardenDeps, d: Diagnosis, job: str) -> list[str]:
    jobs = deps.call("get_jobs", read.get_jobs, job_id=job, limit=1).jobs
    acct = deps.call("get_accounting", read.get_accounting, job_id=job, limit=1).rows
    found = deps.call("get_findings", read.get_findings, culprit=job, limit=10).findings
    logs = deps.call("get_job_log_events", read.get_job_log_events, job=job, limit=5)
    lost = deps.call("get_gpu_hours_lost", read.get_gpu_hours_lost, job_ids=[job])
    j = jobs[0] if jobs else None
    a = acct[0] if acct else None
    named = job in _culprits(d, "job")
    out = [f"job {job} is {'named' if named else 'not named'} in the diagnosis ({d.root_cause})."]
    if j is not None:
        out.append(f"  queue: {j.state} {j.name or ''} user {j.user or '?'} on {', '.join(j.nodes) or '-'} "
                   f"({j.num_gpus or '?'} GPUs)" + (f", reason {j.reason}" if j.reason else ""))
    if a is not None:
        out.append(f"  accounting: {a.state or '?'} exit {a.exit_code or '?'} after {a.elapsed_s or 0} s on "
                   f"{', '.join(a.nodes) or '-'}")
    out.append(f"  GPU-hours lost: {lost.total_gpu_hours:g}")
    kinds = ", ".join(f"{k} {n}" for k, n in logs.by_kind.items())
    out.append(f"  job log: {logs.total} events ({kinds})" if logs.total else "  job log: no classified event")
    for e in logs.events[:3]:
        out.append(f"      {e.file}:{e.line}  {e.text}")
    for f in found:
        out.append(f"  finding {f.root_cause} {f.confidence:.2f}: {f.message}")
    return out


_ROUTINE = ("checkpoint_saved", "progress")
"""Job-log kinds that are routine: only the newest one is quoted."""


def _kinds(deps: WardenDeps, tool: str, fn: Any, key: str, subject: str) -> list[str]:
    """Up to three events of each kind about ``subject`` (of routine kinds only the newest), by kind."""
    first = deps.call(tool, fn, **{key: subject}, limit=1)
    out = [f"{'Kernel' if tool == 'get_kernel_events' else 'Job'} log of {subject}: {first.total} events"
           + (" (" + ", ".join(f"{k} {n}" for k, n in first.by_kind.items()) + ")" if first.total else "")]
    for kind, n in first.by_kind.items():
        if kind == "other":
            continue
        routine = kind in _ROUTINE
        got = deps.call(tool, fn, **{key: subject}, kind=kind, limit=1 if routine else 3,
                        more=f"@{n - 1}" if routine and n > 1 else None)
        label = " (the newest)" if routine and n > 1 else ""
        out += [f"  {e.file}:{e.line}  {e.text}{label}" for e in got.events]
    return out


def _logs(deps: WardenDeps, d: Diagnosis, view: DiagnosisView, asked: Asked) -> list[str]:
    out = ["The lines the diagnosis cites:"] + ([_ev(e) for e in view.evidence] or ["  (none)"])
    for sig in view.signals:
        if sig.first is not None:
            out += [f"Other signal, {sig.root_cause}:", _ev(sig.first)]
    for node in (asked.nodes or _culprits(d, "node"))[:3]:
        out += _kinds(deps, "get_kernel_events", read.get_kernel_events, "node", node)
    for job in (asked.jobs or _culprits(d, "job"))[:3]:
        out += _kinds(deps, "get_job_log_events", read.get_job_log_events, "job", job)
    return out


def _plans(view: DiagnosisView) -> list[str]:
    if not view.plans:
        return [f"No fix is proposed ({view.root_cause})."]
    out = ["Proposed fixes (nothing runs until you approve one):"]
    out += [f"  {p.number}. {p.title} [{p.reversibility}]" for p in view.plans]
    out.append("Show the exact commands with /plan N; approve with /approve N, refuse with /deny N.")
    return out


def _explain(view: DiagnosisView) -> list[str]:
    out = [view.headline(), view.summary]
    if view.evidence:
        out.append("It rests on:")
        out += [_ev(e) for e in view.evidence[:5]]
    if view.signals:
        out.append("Set aside (symptoms or lesser causes):")
        out += [f"  {s.root_cause} {s.confidence:.2f}: {s.message}" for s in view.signals]
    return out


def answer_followup(question: str, d: Diagnosis, deps: WardenDeps, *, root: Path | None = None,
                    requester: str = "") -> str | None:
    """Warden's own answer to a follow-up about ``d``, or None when the question matches no rule.

    Args:
        deps: the session's dependencies (its ReadContext, run store, run id and audit log).
        root: the snapshot directory the evidence paths are relative to (for openable paths).
        requester: who would act (for the blast radius of a plan).
    """
    asked = read_question(question, deps.read.facts)
    if asked.intent is None:
        return None
    view = build_view(d, root=root)
    if asked.intent == "cost":
        lines = impact_lines(d, deps, asked.nodes, requester=requester, question=question)
    elif asked.intent == "logs":
        lines = _logs(deps, d, view, asked)
    elif asked.intent == "node":
        lines = [line for n in asked.nodes[:3] for line in _node(deps, d, view, n)]
    elif asked.intent == "job":
        lines = [line for j in asked.jobs[:3] for line in _job(deps, d, j)]
    elif asked.intent == "plans":
        lines = _plans(view)
    else:
        lines = _explain(view)
    return "\n".join(lines)
