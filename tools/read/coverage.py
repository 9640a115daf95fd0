"""Read tool: what evidence was read, what could not be, and what the snapshot says about named subjects.

"healthy" is a claim (DESIGN.md): it needs the evidence a question depends on to have been read. This
tool tells a model what was read (record counts per evidence family), what could not be read (file or
fetch or check, and why), and for each subject the question names (a job, node, pod) whether anything
is known of it and its state — so an answer can say "job 73590 is pending on Priority" or "nothing was
recorded about gpu005" instead of guessing.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from tools.facts import Facts
from tools.facts.queries import idle_fit_unread, job_nodes, job_state, job_user
from tools.read.subject_job import silent_minutes, unread_nodes
from tools.read.subject_k8s import unmonitored_nodes, workload_pods, workload_state
from tools.read.context import ReadContext

__all__ = ["EvidenceCoverage", "SubjectStatus", "UnreadableBrief", "get_evidence_coverage", "FAMILIES"]

FAMILIES: dict[str, tuple[str, ...]] = {
    "scheduler_jobs": ("jobs",),
    "scheduler_nodes": ("nodes", "node_reasons"),
    "accounting": ("acct",),
    "gpu_metrics": ("gpu_samples", "gpu_status"),
    "kernel_logs": ("kernel_events",),
    "job_logs": ("job_logs",),
    "lustre": ("md_stats", "job_stats", "lfs_df"),
    "kubernetes": ("k8s_nodes", "k8s_pods", "k8s_events", "k8s_workloads", "k8s_quotas"),
}
"""Evidence families and the Facts lists that hold them."""

_FAMILY_FORMATS: dict[str, tuple[str, ...]] = {
    "scheduler_jobs": ("squeue-json", "squeue-text", "scontrol-job-text"),
    "scheduler_nodes": ("sinfo-json", "sinfo-text", "sinfo-reasons-text", "scontrol-node-text"),
    "accounting": ("sacct-json", "sacct-text"),
    "gpu_metrics": ("dcgm-prometheus-text", "prometheus-query-json", "nvidia-smi-csv", "nvidia-smi-q"),
    "kernel_logs": ("kernel-log",),
    "job_logs": ("job-log",),
    "lustre": ("lctl-md-stats", "lctl-job-stats", "lfs-df", "lfs-df-inodes"),
    "kubernetes": ("k8s-json", "k8s-events-text"),
}


_ENDED_BADLY = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL")


class UnreadableBrief(BaseModel):
    """One piece of evidence that could not be read."""

    what: str
    """The file, command or check."""
    kind: str
    reason: str


class SubjectStatus(BaseModel):
    """What the evidence says about one subject the question names."""

    subject: str
    known: bool
    """False when no record of it was read (a job absent from queue and accounting, an unknown node)."""
    kind: str | None = None
    """``job``, ``node``, ``k8snode``, ``pod`` or ``workload`` (a Kubernetes controller's pods, by its name)."""
    state: str | None = None
    """Its state as read (``PENDING (Priority)``, ``MIXED``, ``Running``)."""
    nodes: list[str] = Field(default_factory=list)
    """For a job: the nodes it holds or held (at most 8), from squeue/scontrol or sacct NodeList; for a pod or
    workload, the nodes its pods are bound to."""
    unread_nodes: list[str] = Field(default_factory=list)
    """Its nodes whose metrics exporter is down (``up == 0``; on Kubernetes also a DCGM exporter pod not running)
    while other nodes' metrics were read."""
    silent_min: float | None = None
    """For a job with logs: minutes since its newest timestamped log line."""
    owner: str | None = None
    """For a job: the user it belongs to (squeue/scontrol/sacct User)."""
    cancelled_by: str | None = None
    """For a cancelled job: who cancelled it, as sacct says (``CANCELLED by 0``: a uid, 0 being root)."""
    crashed: list[str] = Field(default_factory=list)
    """For a pod or workload: its pods whose container ended with a non-zero exit code (``ns/pod exit 139
    (Error)``, at most 4) — a program that died, as opposed to a pod refused at admission that never ran."""
    idle_fit_unread: list[str] = Field(default_factory=list)
    """For a job pending on Resources whose request was not read: idle nodes of its partition it seems to fit
    (tools.facts.queries.idle_fit_unread), at most 8."""


class EvidenceCoverage(BaseModel):
    """Counts only: sizes stay constant whatever the cluster size."""

    read: dict[str, int]
    """Records read per evidence family (0 = nothing of that kind was read)."""
    collected: dict[str, int]
    """Files collected per evidence family, readable or not."""
    unreadable_total: int
    unreadable: list[UnreadableBrief] = Field(default_factory=list)
    """At most 10."""
    nothing_read: bool
    """True when not one record of any family was read: there is no evidence to answer from."""
    subjects: list[SubjectStatus] = Field(default_factory=list)
    ended_badly: int = 0
    """Jobs accounting shows ended FAILED, NODE_FAIL, OUT_OF_MEMORY or BOOT_FAIL (sacct job rows)."""
    ended_badly_logs: int = 0
    """Of those, the jobs whose own log was read."""


def _subject(facts: Facts, raw: str) -> SubjectStatus:
    name = raw.split(":", 1)[-1]
    job = facts.job(name)
    if job is not None or facts.acct_job(name) is not None:
        state = job_state(facts, name)
        reason = job.reason if job is not None and job.state == "PENDING" else None
        acct = facts.acct_job(name)
        return SubjectStatus(subject=raw, known=True, kind="job", state=f"{state} ({reason})" if reason else state,
                             nodes=job_nodes(facts, name)[:8], unread_nodes=unread_nodes(facts, name),
                             silent_min=silent_minutes(facts, name), owner=job_user(facts, name),
                             cancelled_by=acct.cancelled_by if acct is not None and state == "CANCELLED" else None,
                             idle_fit_unread=idle_fit_unread(facts, name)[:8])
    tasks = facts.array_tasks(name)
    if tasks:  # an array job: its tasks are the records
        states = Counter(job_state(facts, t) or "UNKNOWN" for t in tasks)
        return SubjectStatus(subject=raw, known=True, kind="job",
                             state=f"array of {len(tasks)} task(s): "
                                   + ", ".join(f"{n} {s}" for s, n in states.most_common()))
    node = facts.node(name)
    if node is not None:
        return SubjectStatus(subject=raw, known=True, kind="node", state="+".join([node.state or "UNKNOWN", *node.flags])
                             + (f" Reason={node.reason}" if node.reason else ""))
    k = facts.k8s_node(name)
    if k is not None:
        return SubjectStatus(subject=raw, known=True, kind="k8snode",
                             state=f"Ready={k.ready_status}" + (" cordoned" if k.unschedulable else ""))
    short = name.rsplit("/", 1)[-1]
    pod = next((p for p in facts.k8s_pods if p.name == short), None)
    if pod is not None:
        state = pod.phase if pod.deletion_timestamp is None else \
            f"{pod.phase or 'Unknown'} (Terminating since {pod.deletion_timestamp:%Y-%m-%dT%H:%M:%SZ})"
        return SubjectStatus(subject=raw, known=True, kind="pod", state=state, nodes=[pod.node] if pod.node else [],
                             unread_nodes=unmonitored_nodes(facts, [pod.node] if pod.node else []),
                             crashed=_crashed([pod]))
    pods = workload_pods(facts, short)
    if pods:  # a Kubernetes workload (Deployment, Job, PyTorchJob ...) named by its own name
        nodes = list(dict.fromkeys(p.node for p in pods if p.node))
        return SubjectStatus(subject=raw, known=True, kind="workload", state=workload_state(pods), nodes=nodes[:8],
                             unread_nodes=unmonitored_nodes(facts, nodes), crashed=_crashed(pods))
    low = name.lower()
    targets = facts.cached("lustre_names", lambda: {t.lower() for t in [m.target for m in facts.md_stats]
                                                    + [e.target for e in facts.job_stats]
                                                    + [r.uuid.removesuffix("_UUID") for r in facts.lfs_df]}
                           | {(r.fs or "").lower() for r in facts.lfs_df})
    if low in targets:
        return SubjectStatus(subject=raw, known=True, kind="fs")
    if facts.jobs_of_user(name) or facts.acct_of_user(name):
        return SubjectStatus(subject=raw, known=True, kind="user")
    partitions = facts.cached("partitions", lambda: {p.lower() for n in facts.nodes for p in n.partitions})
    if low in partitions:
        return SubjectStatus(subject=raw, known=True, kind="partition")
    if any(j.name == name for j in facts.jobs) or any(r.name == name for r in facts.acct_jobs()):
        return SubjectStatus(subject=raw, known=True, kind="job_name")
    seen = bool(facts.kernel_events_on(name)) or bool(facts.job_events(name))
    if not seen and (group := _node_group(facts, name)):
        states = Counter((n.state or "UNKNOWN") for n in group)
        return SubjectStatus(subject=raw, known=True, kind="nodes", nodes=[n.name for n in group[:8]],
                             state=f"{len(group)} node(s): " + ", ".join(f"{c} {s}" for s, c in states.most_common()))
    return SubjectStatus(subject=raw, known=seen, kind=_guess(facts, name) if not seen else None, state=None)


def _crashed(pods: list) -> list[str]:
    """``ns/pod exit N (reason)`` for pods whose container's current or last run ended non-zero, at most 4; pods
    the kubelet stopped (a ``status.reason``: Evicted, OutOfnvidia.com/gpu, UnexpectedAdmissionError) are not."""
    out: list[str] = []
    for p in pods:
        if p.status_reason:
            continue  # stopped by the kubelet (Evicted, refused at admission, NodeLost): not the program dying
        for c in p.containers:
            code, why = (c.exit_code, c.state_reason) if c.state == "terminated" else (
                c.last_terminated_exit_code, c.last_terminated_reason)
            if code not in (None, 0):
                out.append(f"{p.namespace}/{p.name} exit {code}" + (f" ({why})" if why else ""))
                break
    return out[:4]


def _node_group(facts: Facts, name: str) -> list:
    """The known nodes a name without its number stands for ("the ib-g nodes", "gpu-a"): at least two nodes
    whose names are the name followed by digits (an optional dash between); else []."""
    stem = name.lower()
    if not stem or stem[-1].isdigit() or len(stem) < 2:
        return []
    out = []
    for n in facts.nodes:
        low = n.name.lower()
        if low.startswith(stem) and low[len(stem):].lstrip("-").isdigit():
            out.append(n)
    return out if len(out) >= 2 else []


def _guess(facts: Facts, name: str) -> str | None:
    """``job`` for a job-id-like subject, ``node`` when it looks like the cluster's node names (same
    leading letters as a known node), else None (a word of the question that names nothing here)."""
    if name.replace("_", "").isdigit():
        return "job"
    stem = name.rstrip("0123456789-").lower()
    if stem and any(n.lower().startswith(stem) for n in list(facts.node_names())[:10_000]):
        return "node"
    return None


def get_evidence_coverage(ctx: ReadContext, *, subjects: list[str] | None = None) -> EvidenceCoverage:
    """Which kinds of evidence were read (records per family: scheduler jobs and nodes, accounting, GPU
    metrics, kernel logs, job logs, Lustre, Kubernetes), which files/fetches/checks could not be read and
    why (at most 10 listed), and for each of ``subjects`` (at most 10: job ids, node or pod names the
    question names) whether it is known and its state."""
    facts = ctx.facts
    _ = ctx.findings  # checks that raise are recorded as unreadable too
    read = {fam: sum(len(getattr(facts, f)) for f in fields) for fam, fields in FAMILIES.items()}
    per_format = Counter(a.format for a in facts.artifacts)  # one pass over the files (20,000 at 10,000 nodes)
    collected = {fam: sum(per_format[f] for f in dict.fromkeys(fmts)) for fam, fmts in _FAMILY_FORMATS.items()}
    slurm_said = len(facts.slurm_errors)
    bad = [r for r in facts.acct_jobs() if (r.state or "").split(" ")[0] in _ENDED_BADLY]
    logged = {s.job for s in facts.job_logs if s.job}
    return EvidenceCoverage(
        read=read, collected=collected, unreadable_total=len(facts.unreadable),
        unreadable=[UnreadableBrief(what=u.where(), kind=u.kind, reason=u.reason[:200]) for u in facts.unreadable[:10]],
        nothing_read=not any(read.values()) and not slurm_said,
        subjects=[_subject(facts, s) for s in (subjects or [])[:10]],
        ended_badly=len(bad), ended_badly_logs=sum(1 for r in bad if r.job_id in logged),
    )
