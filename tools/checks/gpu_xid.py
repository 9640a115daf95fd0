"""check_gpu_xid: GPU hardware faults from NVRM kernel lines and DCGM error counters."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from pydantic import Field

from tools.checks.base import (CheckConfig, affected_jobs, job_culprits, kernel_event_time, kernel_evidence,
                               resubmit_specs)
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["XidConfig", "check_gpu_xid"]

_DCGM_MEMORY_ERRORS = ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE")


class XidConfig(CheckConfig):
    """Which Xids mean the GPU itself is bad (NVIDIA's Xid catalogue)."""

    hardware_xids: frozenset[int] = Field(default=frozenset({48, 61, 62, 63, 64, 79, 92, 94, 95, 119, 120, 140}))
    """48 DBE, 63/64 row remap, 79 fallen off the bus, 92 high SBE rate, 94/95 contained/uncontained ECC,
    119/120 GSP, 140 unrecovered ECC."""
    min_events: int = 1


def _ended_before(facts: Facts, job_id: str, first_event: datetime | None) -> bool:
    """True when the job had already ended before the node's first GPU error was logged (a job
    cancelled an hour earlier on that node lost nothing to this fault); False when unknown."""
    rec = facts.job(job_id) or facts.acct_job(job_id)
    end = rec.end_time if rec else None
    if first_event is None or end is None or (rec.state or "") in ("RUNNING", "COMPLETING", "SUSPENDED"):
        return False
    return end < first_event - timedelta(minutes=1)


def check_gpu_xid(facts: Facts, cfg: XidConfig) -> list[Finding]:
    """One gpu_hardware_fault Finding per node with hardware Xids, DBE/row-remap errors, or a GPU
    that fell off the bus (including NVRM's multi-line form that carries no Xid number).

    Sources: kernel-log events (dmesg), dcgm-exporter samples (DCGM_FI_DEV_XID_ERRORS,
    DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FI_DEV_ROW_REMAP_FAILURE).
    """
    per_node: dict[str, list[Evidence]] = defaultdict(list)
    xids: dict[str, set[int]] = defaultdict(set)
    first_seen: dict[str, datetime] = {}
    for ev in facts.kernel_events:
        if not ev.node:
            continue
        if (ev.kind == "xid" and ev.xid in cfg.hardware_xids) or ev.kind in ("fallen_off_bus", "gpu_ecc"):
            when = kernel_event_time(facts, ev)
            if when is not None and (ev.node not in first_seen or when < first_seen[ev.node]):
                first_seen[ev.node] = when
        if ev.kind == "xid" and ev.xid in cfg.hardware_xids:
            per_node[ev.node].append(kernel_evidence(ev))
            xids[ev.node].add(ev.xid)
        elif ev.kind in ("fallen_off_bus", "gpu_ecc"):
            per_node[ev.node].append(kernel_evidence(ev))
            if ev.kind == "fallen_off_bus":
                xids[ev.node].add(79)
    for s in facts.gpu_samples:
        if not s.node or s.value <= 0:
            continue
        is_xid = s.name == "DCGM_FI_DEV_XID_ERRORS" and int(s.value) in cfg.hardware_xids
        if not (is_xid or s.name in _DCGM_MEMORY_ERRORS):
            continue
        if is_xid:
            xids[s.node].add(int(s.value))
        per_node[s.node].append(
            Evidence(text=f"{s.name}={s.value:g} on {s.node} GPU {s.gpu}", metric=s.name, value=s.value, unit="count")
        )
    findings: list[Finding] = []
    for node, evidence in per_node.items():
        if len(evidence) < cfg.min_events:
            continue
        jobs = [j for j in affected_jobs(facts, [node]) if not _ended_before(facts, j, first_seen.get(node))]
        what = ", ".join(f"Xid {x}" for x in sorted(xids[node])) or "uncorrectable GPU memory errors"
        actions = [ActionSpec(type="drain_node", node=node, reason=f"GPU hardware fault ({what})")]
        actions += resubmit_specs(facts, jobs, [node], f"work lost to GPU fault on {node}")
        findings.append(
            Finding(
                check="gpu_xid",
                root_cause="gpu_hardware_fault",
                message=f"{len(evidence)} GPU hardware error event(s) on {node}: {what} (threshold {cfg.min_events})",
                culprits=[f"node:{node}", *job_culprits(jobs)],
                evidence=evidence[:5],
                confidence=0.95,
                suggested_actions=actions,
            )
        )
    return findings
