"""check_gpu_busy_unowned: a GPU at work on a node where the scheduler runs nothing — a process outside Slurm or
Kubernetes (one left behind by an ended job, or out-of-band work). Which it is needs the node's process list, so
the answer is ``inconclusive`` with the node named and what to read next; nothing is drained or killed on it —
unless jobs sent there failed because the device is busy (exclusive compute mode): then the stray process is the
node's fault (``node_software_fault``, drained, its victims resubmitted).

Sources: nvidia-smi ``--query-gpu`` CSV (utilization.gpu, memory.used) and DCGM_FI_DEV_GPU_UTIL /
DCGM_FI_DEV_FB_USED samples (exporter pages or Prometheus queries, the newest per GPU); sinfo/scontrol node
state and squeue jobs; pods bound to a Kubernetes node with GPU requests.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import printed_on
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["GpuBusyUnownedConfig", "check_gpu_busy_unowned"]

_BUSY = re.compile(r"busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE|all CUDA-capable "
                   r"devices are busy", re.IGNORECASE)
"""CUDA refusing a GPU that another process holds in exclusive compute mode."""


class GpuBusyUnownedConfig(CheckConfig):
    """What counts as a GPU at work."""

    min_util_pct: float = 50.0
    min_memory_mib: float = 2048.0
    """Framebuffer in use above a driver's idle footprint (a few MiB) and any persistence-mode context."""


def _busy_gpus(facts: Facts, cfg: GpuBusyUnownedConfig) -> dict[str, dict[str, tuple[float | None, float | None]]]:
    """{node: {gpu: (utilization %, memory used MiB)}} of GPUs over either threshold (newest reading each)."""
    newest: dict[tuple[str, str, str], tuple[float, float]] = {}
    # A node the scheduler runs something on is never reported (check_gpu_busy_unowned asks _unowned of each node
    # it returns): a block of one such node's GPUs is not read sample by sample (most of a busy cluster's pages).
    owned: dict[str, bool] = {}
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        for b in facts.sample_blocks(name):  # columns: no MetricSample made per sample
            if b.node:
                skip = owned.get(b.node)
                if skip is None:
                    skip = owned[b.node] = not _unowned(facts, b.node)
                if skip:
                    continue
            times = b.times
            for i, (k, v) in enumerate(zip(b.keys, b.values)):
                if k[1] and k[2] is not None:
                    key = (k[1], k[2], name)
                    t = (times[i] if times is not None else None) or 0
                    if key not in newest or t >= newest[key][0]:
                        newest[key] = (t, v)
    readings: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(lambda: [None, None]))
    for (node, gpu, name), (_, value) in newest.items():
        readings[node][gpu][0 if name.endswith("UTIL") else 1] = value
    for g in facts.gpu_status:
        if g.node and g.index is not None and not g.lost:
            pair = readings[g.node][str(g.index)]
            pair[0] = g.utilization_gpu_pct if g.utilization_gpu_pct is not None else pair[0]
            pair[1] = g.memory_used_mib if g.memory_used_mib is not None else pair[1]
    return {node: {gpu: (u, m) for gpu, (u, m) in gpus.items()
                   if (u is not None and u >= cfg.min_util_pct) or (m is not None and m >= cfg.min_memory_mib)}
            for node, gpus in readings.items()}


def _unowned(facts: Facts, node: str) -> bool:
    """The scheduler runs nothing on the node and it is plainly idle (not completing, draining or down: an
    epilog's diagnostic or an admin's burn-in on a drained node is work someone asked for)."""
    if facts.k8s_node(node) is not None and facts.node(node) is None:
        return not any(p.gpu_request and p.phase in ("Running", "Pending", None) for p in facts.pods_on(node))
    n = facts.node(node)
    if n is None or facts.jobs_on_node(node):
        return False
    return (n.state or "") == "IDLE" and not n.drained and not set(n.flags) - {"RESERVED"}


def check_gpu_busy_unowned(facts: Facts, cfg: GpuBusyUnownedConfig) -> list[Finding]:
    """inconclusive per idle node with a GPU over ``min_util_pct`` or ``min_memory_mib``; the node is the
    culprit, no action (only its process list can tell a leftover from sanctioned work). node_software_fault
    instead when a job there logged CUDA's ``busy or unavailable``: drain, resubmit its victims."""
    findings: list[Finding] = []
    refused_on: dict[str, list] = defaultdict(list)  # jobs' "device busy" CUDA errors by the node that printed them
    for e in facts.job_events_of("cuda_error"):
        if _BUSY.search(e.message) and (where := printed_on(facts, e)) is not None:
            refused_on[where].append(e)
    for node, gpus in sorted(_busy_gpus(facts, cfg).items()):
        if not gpus or not _unowned(facts, node):
            continue
        shown = ", ".join(f"GPU {g} at " + " with ".join(part for part in (
            f"{u:.0f} %" if u is not None else "", f"{m:,.0f} MiB in use" if m is not None else "") if part)
            for g, (u, m) in sorted(gpus.items())[:4])
        ended = sorted((r for r in facts.acct_on_node(node) if r.end_time is not None), key=lambda r: r.end_time)[-1:]
        evidence = [Evidence(text=f"{node}: {shown} while the scheduler runs no job there", metric="gpu")]
        refused = refused_on.get(node, [])
        if refused:
            # Jobs sent there fail because the GPU is taken: the stray process is the node's fault, not a question.
            ref = node_ref(facts, node)
            jobs = list(dict.fromkeys(e.job for e in refused if e.job))
            culprits, follow = victims(facts, ref, f"its GPU is held by a process outside the scheduler on {node}", jobs=jobs)
            findings.append(Finding(
                check="gpu_busy_unowned", root_cause="node_software_fault",
                message=f"{shown} on {node}, where the scheduler runs nothing, and job(s) {', '.join(jobs[:3])} failed "
                        "there because the device is busy (exclusive compute mode held by a process outside Slurm): "
                        "drain it, end the stray process (nvidia-smi --query-compute-apps), then resume",
                culprits=[ref.culprit, *culprits], strength="direct", confidence=confidence("direct", corroborated=True),
                evidence=evidence + [log_evidence(e) for e in refused[:2]],
                suggested_actions=take_out_of_service(facts, ref, "a GPU held by a stray process") + follow))
            continue
        if ended:
            evidence.append(Evidence(text=f"sacct: job {ended[0].job_id} ({ended[0].state}) ended on {node} at "
                                          f"{ended[0].end_time:%H:%M}: its processes may have outlived it", metric="sacct"))
        findings.append(Finding(
            check="gpu_busy_unowned", root_cause="inconclusive",
            message=f"{shown} on {node}, where the scheduler runs nothing: a process outside it (left behind by an "
                    "ended job, or out-of-band work); read next: nvidia-smi --query-compute-apps=pid,process_name,"
                    "used_memory and ps on the node",
            culprits=[node_ref(facts, node).culprit], evidence=evidence, strength="heuristic", confidence=0.5))
    return findings
