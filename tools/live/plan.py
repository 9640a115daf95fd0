"""Which artifacts a live snapshot fetches, bounded so it stays small on a large cluster.

Two phases. ``first_requests`` is the scheduler's view and the fleet-wide GPU view (the PromQL
anomaly queries of tools/live/promql.py), one call per command or query whatever the cluster's
size. ``slurm_requests`` is the scheduler's part::

    scontrol show job | scontrol show node | squeue -a | sinfo | sinfo -R | sacct -a -X -p (window) | sdiag

(``sacct -X``: one row per job allocation, which is all the checks read; a large cluster's steps
would triple the output for nothing.)

``followup_requests`` then looks at what that view says and fetches evidence only for what
matters: the nodes the GPU first pass names (Xid, memory errors, held-down clocks, heat, utilisation
outliers and their job's peers), then nodes that are not idle and healthy, then the nodes of failed
and running jobs (at most ``bounds.max_nodes``) get their kernel logs and their full DCGM series
(each node's exporter page when ``exporter_url`` is set, else one Prometheus instant query for the
fields the checks read, plus a range query of utilisation); running and recently failed jobs (at
most ``bounds.max_job_logs``) get the tail of their StdOut/StdErr; Lustre outputs are fetched as
configured. Every request carries the snapshot-relative ``path`` it is recorded under.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timedelta, timezone

import httpx

from tools.facts.queries import same_run_jobs
from tools.facts import Facts
from tools.live.guard import describe_guarded, job_log_argv, safe_user, under_roots
from tools.live.model import LivePlanInput
from tools.live.promql import anomalous_nodes, first_pass_requests, safe_host
from tools.parsers.gpu.dcgm_prometheus_text import DCGM_CHECKED_FIELDS
from tools.models.slurm import SlurmJob, SlurmNode
from tools.sources.base import FetchRequest

__all__ = ["DCGM_FIELDS", "SACCT_FORMAT", "slurm_requests", "first_requests", "nodes_that_matter",
           "jobs_that_matter", "followup_requests", "safe_name"]

DCGM_FIELDS: tuple[str, ...] = DCGM_CHECKED_FIELDS
"""The DCGM fields Warden's checks read (tools/checks), queried at the capture instant."""

SACCT_FORMAT = ("JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,NNodes,"
                "AllocTRES,NodeList,WorkDir")

_FAILED = {"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
_BUSY_OK = {"IDLE", "ALLOCATED", "MIXED"}
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(text: str) -> str:
    """A file-name-safe form of a node or job name (cluster text never becomes a path component)."""
    return _SAFE.sub("_", text).lstrip(".")[:80] or "_"


def slurm_requests(cfg: LivePlanInput, now: datetime | None = None) -> list[FetchRequest]:
    """The scheduler's view (phase one). scontrol comes first: squeue's text truncates names, and
    facts keep the first non-empty value."""
    now = now or datetime.now(timezone.utc)
    t = cfg.bounds.timeout_s
    start = (now - timedelta(hours=cfg.bounds.sacct_window_h)).astimezone().strftime("%Y-%m-%dT%H:%M:%S")
    return [
        FetchRequest(format="scontrol-job-text", argv=["scontrol", "show", "job"], path="slurm/scontrol_show_job.txt",
                     timeout_s=t),
        FetchRequest(format="scontrol-node-text", argv=["scontrol", "show", "node"],
                     path="slurm/scontrol_show_node.txt", timeout_s=t),
        FetchRequest(format="squeue-text", argv=["squeue", "-a"], path="slurm/squeue.txt", timeout_s=t),
        FetchRequest(format="sinfo-text", argv=["sinfo"], path="slurm/sinfo.txt", timeout_s=t),
        FetchRequest(format="sinfo-reasons-text", argv=["sinfo", "-R"], path="slurm/sinfo_R.txt", timeout_s=t),
        FetchRequest(format="sacct-text", argv=["sacct", "-a", "-X", "-p", "-S", start, f"--format={SACCT_FORMAT}"],
                     path="slurm/sacct.txt", timeout_s=t),
        FetchRequest(format="sdiag-text", argv=["sdiag"], path="slurm/sdiag.txt", timeout_s=t),
        # the QOS limits a QOS*PerJob pending reason names (one accounting call, fleet size independent)
        FetchRequest(format="sacctmgr-qos-text", argv=["sacctmgr", "show", "qos", "-P"], path="slurm/sacctmgr_qos.txt",
                     timeout_s=t),
    ]


def first_requests(cfg: LivePlanInput, now: datetime | None = None) -> list[FetchRequest]:
    """Phase one: the scheduler's view and the fleet-wide GPU first pass."""
    now = now or datetime.now(timezone.utc)
    return [*slurm_requests(cfg, now), *first_pass_requests(cfg, now)]


def _unhealthy(n: SlurmNode) -> bool:
    return (n.state or "") not in _BUSY_OK or bool(set(n.flags) - {"RESERVED"})


def jobs_that_matter(facts: Facts, limit: int) -> list[SlurmJob]:
    """Jobs that ended badly (FAILED, TIMEOUT, NODE_FAIL …), running jobs, then earlier jobs of the
    failed jobs' runs (tools.facts.queries.same_run_jobs), newest first in each group, at most ``limit``."""
    def newest(j: SlurmJob) -> float:
        when = j.end_time or j.start_time or j.submit_time
        return when.timestamp() if when else 0.0

    running = sorted((j for j in facts.jobs if j.state in ("RUNNING", "COMPLETING")), key=newest, reverse=True)
    failed = sorted((j for j in facts.jobs if (j.state or "") in _FAILED), key=newest, reverse=True)
    # Earlier jobs of a failed job's run (same user, and name or working directory): their logs say
    # which checkpoints were saved, which is what a resubmission resumes from. Only for the failed
    # jobs that can make the list.
    run_ids = {r for j in failed[:limit] for r in same_run_jobs(facts, j.job_id)}
    earlier = sorted((j for j in facts.jobs if j.job_id in run_ids and j not in failed and j not in running),
                     key=newest, reverse=True)
    return (failed + running + earlier)[:limit] if limit else []


def nodes_that_matter(facts: Facts, limit: int) -> list[str]:
    """The nodes the GPU first pass names (tools.live.promql.anomalous_nodes), then nodes not
    idle-and-healthy (down, drained, not responding …), then the nodes of failed and running jobs,
    newest first; at most ``limit``, in that order. Linear in nodes and jobs."""
    out: list[str] = anomalous_nodes(facts)
    out += [n.name for n in facts.nodes if _unhealthy(n)]

    def newest(j: SlurmJob) -> float:
        when = j.end_time or j.start_time or j.submit_time
        return when.timestamp() if when else 0.0

    failed = sorted((j for j in facts.jobs if (j.state or "") in _FAILED), key=newest, reverse=True)
    running = sorted((j for j in facts.jobs if j.state in ("RUNNING", "COMPLETING")), key=newest, reverse=True)
    seen = dict.fromkeys(out)
    for j in failed + running:
        if len(seen) >= limit:  # enough: the rest cannot make the list
            break
        seen.update(dict.fromkeys(j.nodes))
    return list(seen)[:limit]


def _prom(cfg: LivePlanInput, nodes: list[str], now: datetime) -> list[FetchRequest]:
    nodes = [n for n in nodes if safe_host(n)]  # node names go into a PromQL regex or a URL
    if cfg.exporter_url and nodes:
        return [FetchRequest(format="dcgm-prometheus-text", url=cfg.exporter_url.replace("{node}", n), node=n,
                             path=f"gpu/{safe_name(n)}.prom", timeout_s=cfg.bounds.timeout_s) for n in nodes]
    if not cfg.prometheus_url or not nodes:
        return []
    base = cfg.prometheus_url.rstrip("/")
    hosts = "|".join(re.escape(n) for n in nodes)
    names = "|".join(DCGM_FIELDS)
    instant = f'{{__name__=~"{names}",Hostname=~"{hosts}"}}'
    util = f'DCGM_FI_DEV_GPU_UTIL{{Hostname=~"{hosts}"}}'
    end = now.timestamp()
    start = end - cfg.bounds.range_window_min * 60
    t = cfg.bounds.timeout_s
    return [
        FetchRequest(format="prometheus-query-json", path="gpu/prometheus_dcgm_instant.json", timeout_s=t,
                     url=str(httpx.URL(f"{base}/api/v1/query", params={"query": instant, "time": f"{end:.3f}"}))),
        FetchRequest(format="prometheus-query-json", path="gpu/prometheus_util_range.json", timeout_s=t,
                     url=str(httpx.URL(f"{base}/api/v1/query_range", params={
                         "query": util, "start": f"{start:.3f}", "end": f"{end:.3f}",
                         "step": str(cfg.bounds.range_step_s)}))),
    ]


def _fill(argv: list[str], **values: str) -> list[str]:
    """Fill ``{node}``/``{since}``… in each argument separately (values never split or re-parsed)."""
    out = []
    for a in argv:
        for k, v in values.items():
            a = a.replace("{" + k + "}", v)
        out.append(a)
    return out


def _kernel(cfg: LivePlanInput, nodes: list[str], now: datetime) -> list[FetchRequest]:
    k = cfg.kernel_logs
    out: list[FetchRequest] = []
    since = (now - timedelta(hours=k.since_h)).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    for node in nodes:
        if not safe_host(node):  # a node name goes into a file path or a host name: never "../" or options
            continue
        path = f"kernel/{safe_name(node)}.log"
        if k.kind == "file" and k.path:
            argv = ["tail", "-n", str(k.max_lines), k.path.replace("{node}", node)]
        elif k.kind == "command":
            argv = _fill(k.argv, node=node, since=since)
        else:
            continue
        out.append(FetchRequest(format="kernel-log", argv=argv, path=path, node=node, timeout_s=cfg.bounds.timeout_s))
    return out


def _job_logs(cfg: LivePlanInput, jobs: list[SlurmJob], refused: list[tuple[FetchRequest, str]]) -> list[FetchRequest]:
    """Each job's StdOut/StdErr, read through the checks of tools/live/guard.py; a path that cannot
    pass them is not fetched and goes to ``refused`` with the reason (unreadable evidence)."""
    jl = cfg.job_logs
    if not jl.enabled:
        return []
    out: list[FetchRequest] = []
    for j in jobs:
        for p in dict.fromkeys(x for x in (j.stdout_path, j.stderr_path) if x):
            name = safe_name(p.rsplit("/", 1)[-1])
            node = j.batch_host or (j.nodes[0] if j.nodes else None)
            req = FetchRequest(format="job-log", argv=["tail", "-c", str(jl.max_bytes), p],
                               path=f"logs/{safe_name(j.job_id)}/{name}", job=j.job_id, node=node,
                               timeout_s=cfg.bounds.timeout_s)
            why = None
            if not jl.roots:
                why = "not fetched: job_logs.roots is empty (name the directories job logs may be read from)"
            elif not under_roots(p, jl.roots):
                why = f"refused: {p} is not under job_logs.roots ({', '.join(jl.roots)})"
            elif jl.owner_check and not safe_user(j.user):
                why = f"refused: the job's user ({j.user!r}) is unknown, so the owner check cannot be made"
            if why:
                refused.append((req, why))
                continue
            owner = j.user if jl.owner_check else None
            out.append(req.model_copy(update={"argv": job_log_argv(p, jl.max_bytes, owner, jl.roots)}))
    return out


def _lustre(cfg: LivePlanInput) -> list[FetchRequest]:
    out: list[FetchRequest] = []
    for item in cfg.lustre:
        argv = item.argv or (["cat", item.path] if item.path else [])
        if not argv:
            continue
        fname = safe_name(item.format.replace("-", "_")) + ".txt"
        out.append(FetchRequest(format=item.format, argv=argv, path=f"lustre/{safe_name(item.fs)}/{fname}",
                                timeout_s=cfg.bounds.timeout_s))
    return out


def followup_requests(cfg: LivePlanInput, facts: Facts, now: datetime | None = None,
                      refused: list[tuple[FetchRequest, str]] | None = None) -> list[FetchRequest]:
    """Phase two, from the scheduler's view in ``facts``: Prometheus, kernel logs, job logs, Lustre.

    ``refused`` receives the job logs not fetched (no roots configured, a path outside them, an
    unknown user) with the reason."""
    now = now or datetime.now(timezone.utc)
    nodes = nodes_that_matter(facts, cfg.bounds.max_nodes)
    jobs = jobs_that_matter(facts, cfg.bounds.max_job_logs)
    logs = _job_logs(cfg, jobs, refused if refused is not None else [])
    return [*_prom(cfg, nodes, now), *_kernel(cfg, nodes, now), *logs, *_lustre(cfg)]


def display(req: FetchRequest) -> str:
    """How a request is shown in progress lines and manifests: the quoted command (a guarded read as
    the command it stands for) or the URL."""
    if req.argv:
        return describe_guarded(req.argv) or shlex.join(req.argv)
    return req.url or req.path or req.format
