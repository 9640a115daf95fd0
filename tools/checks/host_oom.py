"""check_node_host_oom: the kernel OOM killer ended a job's processes on a node, or Slurm killed a job for
exceeding its own memory limit."""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs, job_state, kernel_event_time, pod_of_cgroup
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import OomKillEvent
from tools.platform import node_ref, take_out_of_service

__all__ = ["HostOomConfig", "check_node_host_oom", "SERVICE_DAEMONS"]

SERVICE_DAEMONS = frozenset({"slurmctld", "slurmdbd", "slurmd", "mariadbd", "mysqld", "munged", "slurmrestd",
                             "kube-apiserver", "etcd"})
"""Cluster services, not jobs: their OOM kill takes the service down (controller_unreachable and the like)."""
RUNTIME_DAEMONS = frozenset({"containerd", "dockerd", "crio", "kubelet", "containerd-shim", "conmon"})
"""The node's container runtime and kubelet: their OOM kill (in their own system.slice cgroup) breaks the node's
software — leaked pod IPs, stuck sandboxes — which the Kubernetes checks name; it is not a job out of memory."""


class HostOomConfig(CheckConfig):
    """No thresholds yet: one OOM kill is enough to explain a dead process."""

    min_kills: int = 1


def _ran_during(facts: Facts, job_id: str, kills: list[OomKillEvent]) -> bool:
    """False when every kill was logged before the job started (dmesg keeps lines since boot:
    an old kill is not the current job's); True when that cannot be told."""
    rec = facts.job(job_id) or facts.acct_job(job_id)
    times = [kernel_event_time(facts, e) for e in kills]
    if not rec or not rec.start_time or None in times:
        return True
    return any(t >= rec.start_time for t in times if t is not None)


def _outside(events: list[OomKillEvent]) -> str:
    """The cgroup of killed processes outside any job (``/system.slice/docker-<id>.scope``), or ''."""
    outside = [e.task_memcg for e in events if e.task_memcg and "/slurm" not in e.task_memcg and "kubepods" not in e.task_memcg
               and "/system.slice/" in e.task_memcg and not e.task_memcg.endswith(".service")]
    return outside[0][:80] if outside else ""


_STEP_OVER = re.compile(r"(?:Step|Job) (?P<step>[\d._]+) exceeded memory limit \((?P<used>\d+) > (?P<limit>\d+)\), being killed")
"""Slurm killing a step for its own memory, with the figures: jobacct_gather's ``Step 4242.0 exceeded memory limit
(52917772 > 20971520), being killed`` (OverMemoryKill, KiB). Not task/cgroup's bare ``Detected 1 oom_kill event``
(the kernel's cgroup kill, which its own kernel line shows; without that line and with a MaxRSS far below the
request it is contradicted), nor ``Exceeded job memory limit at some point``, which a completed job prints for
page cache it was charged."""
_ENDED_BADLY = ("FAILED", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL")


def _job_memory_kills(facts: Facts, named: set[str]) -> list[Finding]:
    """host_oom for jobs that ended badly after Slurm said it killed them for exceeding their memory (the job's
    own log); the job's owner asks for more memory (``--mem``) or uses less."""
    out: list[Finding] = []
    seen: set[str] = set()
    for e in facts.job_events_of("slurm_message"):
        if not e.job or e.job in seen or e.job in named or not (m := _STEP_OVER.search(e.message)):
            continue
        if not job_state(facts, e.job).startswith(_ENDED_BADLY):
            continue
        seen.add(e.job)
        used = f" ({int(m['used']) / 2**20:.1f} GiB used against a {int(m['limit']) / 2**20:.1f} GiB limit)"
        out.append(Finding(
            check="node_host_oom", root_cause="host_oom",
            message=f"Slurm killed job {e.job} for exceeding its memory{used}: the job asked for less memory than it "
                    "uses (the node is fine)",
            culprits=job_culprits([e.job]), evidence=[log_evidence(e)], strength="direct",
            confidence=confidence("direct"),
            suggested_actions=[ActionSpec(type="notify_owner", job=e.job,
                                          reason=f"killed for exceeding its memory{used}: request more (--mem / "
                                                 "--mem-per-cpu) or use less")],
        ))
    return out


_HUGE_SHARE = 0.2
"""Unused reserved huge pages, as a share of the node's memory, that make them the reason memory ran out."""


def _reserved_hugepages(facts: Facts, node: str, events: list[OomKillEvent]) -> int:
    """KiB of unused reserved huge pages a system-wide OOM report of ``node`` printed, when they are at least
    ``_HUGE_SHARE`` of its memory (RealMemory from scontrol/sinfo; without it, at least the killed task's RSS); else 0."""
    free = max((e.hugepages_free_kib or 0 for e in events if e.scope != "memcg"), default=0)
    n = facts.node(node)
    total_kib = (n.real_memory_mib or 0) * 1024 if n else 0
    rss = max((e.anon_rss_kib or 0 for e in events), default=0)
    return free if free and free >= (_HUGE_SHARE * total_kib if total_kib else max(rss, 1)) else 0


def check_node_host_oom(facts: Facts, cfg: HostOomConfig) -> list[Finding]:
    """host_oom per node where the kernel OOM killer fired; sacct OUT_OF_MEMORY jobs corroborate.

    Sources: kernel-log events of kind oom_kill (fields.slurm_job from the cgroup path names the
    job); sacct job states; squeue/sacct allocations when the kill names no job.
    """
    kills: dict[str, list[OomKillEvent]] = defaultdict(list)
    node_daemon: dict[str, OomKillEvent] = {}
    for ev in facts.kernel_events_of("oom_kill"):
        if ev.node and (ev.process or "") == "slurmd":
            node_daemon.setdefault(ev.node, ev)
        if ev.node and (ev.process or "") not in SERVICE_DAEMONS | RUNTIME_DAEMONS:  # a killed slurmctld is the controller's story
            kills[ev.node].append(ev)
    oom_jobs = {r.job_id for r in facts.acct_jobs() if (r.state or "").startswith("OUT_OF_MEMORY")}
    findings: list[Finding] = []
    for node, events in kills.items():
        if len(events) < cfg.min_kills:
            continue
        # The kill line's cgroup (task_memcg=/slurm/uid_N/job_4242/...) names the job whose memory
        # ran out; on a shared node the other jobs there are bystanders.
        named = list(dict.fromkeys(e.slurm_job for e in events if e.slurm_job))
        pods = list({(p.namespace, p.name): p for e in events if (p := pod_of_cgroup(facts, e.task_memcg))}.values())
        jobs = [j for j in affected_jobs(facts, [node]) if _ran_during(facts, j, events)]
        jobs = named or [f"{p.namespace}/{p.name}" for p in pods] or [j for j in jobs if j in oom_jobs] or jobs
        evidence: list[Evidence] = [kernel_evidence(e) for e in events[:3]]
        evidence += [Evidence(text=f"sacct: job {j} state OUT_OF_MEMORY", metric="sacct") for j in jobs if j in oom_jobs]
        if node in node_daemon:
            # The kernel killed slurmd too: the node no longer answers slurmctld, whoever filled its memory (often a
            # process outside every job cgroup, e.g. a container started with docker run): drain it, tell the owner.
            findings.append(Finding(
                check="node_host_oom", root_cause="node_unresponsive",
                message=f"the OOM killer ended slurmd on {node} ({len(events)} other kill(s)): the node stopped answering "
                        "slurmctld; memory was exhausted on the host"
                        + (f", by processes in {_outside(events)}" if _outside(events) else ""),
                culprits=[node_ref(facts, node).culprit, *job_culprits(jobs)],
                evidence=[kernel_evidence(node_daemon[node])] + evidence[:3], strength="direct",
                confidence=confidence("direct", corroborated=True),
                suggested_actions=take_out_of_service(facts, node_ref(facts, node), "OOM killer ended slurmd")
                + [ActionSpec(type="notify_owner", job=j, reason=f"host memory exhausted on {node}; slurmd was killed")
                   for j in jobs if "/" not in j],
            ))
            continue
        reserved = _reserved_hugepages(facts, node, events)
        if reserved:
            # The kernel could not give memory that sits reserved as unused huge pages (vm.nr_hugepages left set by
            # a benchmark or a DPDK/HPC setup): the node is misconfigured, every job there is at risk.
            gib = reserved / 2**20
            findings.append(Finding(
                check="node_host_oom", root_cause="host_oom",
                message=f"{len(events)} OOM-killer kill(s) on {node} while {gib:,.0f} GiB sat reserved as unused huge "
                        "pages (hugepages_free in the OOM report): that memory no process can use; release it "
                        "(vm.nr_hugepages=0) before the node runs jobs again",
                culprits=[node_ref(facts, node).culprit, *job_culprits(jobs)],
                evidence=evidence, strength="direct", confidence=confidence("direct", corroborated=True),
                suggested_actions=take_out_of_service(facts, node_ref(facts, node),
                                                      f"{gib:,.0f} GiB reserved in unused huge pages")
                + [ActionSpec(type="notify_owner", job=j, reason=f"killed by the OOM killer on {node}: its memory was "
                              "held in huge pages; rerun elsewhere") for j in jobs if "/" not in j]))
            continue
        findings.append(Finding(
            check="node_host_oom", root_cause="host_oom",
            message=f"{len(events)} OOM-killer kill(s) on {node} (threshold {cfg.min_kills})",
            culprits=[*job_culprits(jobs), node_ref(facts, node).culprit],
            evidence=evidence, strength="direct",
            confidence=confidence("direct", corroborated=bool(named or pods or oom_jobs)),
            # The pod the kill's cgroup names grew past the node's memory: its owner sets a memory limit.
            suggested_actions=[ActionSpec(type="notify_owner", pod=p.name, namespace=p.namespace,
                                          reason=f"host memory exhausted on {node} by this pod: set a memory "
                                          "request/limit that covers it (data-loader workers included)") for p in pods]
            or [ActionSpec(type="notify_owner", job=j, reason=f"host memory exhausted on {node}") for j in jobs],
        ))
    return findings + _job_memory_kills(facts, {c.split(":", 1)[1] for f in findings for c in f.culprits})
