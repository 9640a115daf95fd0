"""check_job_cuda_oom: jobs that died of CUDA out-of-memory."""

from __future__ import annotations

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.logs import CudaOomEvent
from tools.models.findings import Finding
from tools.platform import log_owner

__all__ = ["GpuOomConfig", "check_job_cuda_oom"]


class GpuOomConfig(CheckConfig):
    """Fragmentation threshold."""

    fragmentation_ratio: float = 0.3
    """reserved-but-unallocated GiB over total capacity above which the OOM is called fragmentation."""


def check_job_cuda_oom(facts: Facts, cfg: GpuOomConfig) -> list[Finding]:
    """gpu_oom per job whose log shows CUDA out of memory; notes allocator fragmentation when the
    message shows much memory reserved by PyTorch but not allocated.

    Sources: job-log events of kind cuda_oom (fields tried_gib, total_gib, allocated_gib, reserved_gib, free_gib).
    """
    by_job: dict[str, list] = {}
    for e in facts.job_events_of("cuda_oom"):
        by_job.setdefault(e.job or "?", []).append(e)
    findings: list[Finding] = []
    for job, events in by_job.items():
        first = events[0]
        note = ""
        total, reserved, allocated = (first.total_gib, first.reserved_gib, first.allocated_gib) \
            if isinstance(first, CudaOomEvent) else (None, None, None)
        if total and reserved is not None and allocated is not None \
                and (reserved - allocated) / total >= cfg.fragmentation_ratio:
            note = (f"; {reserved - allocated:.2f} GiB reserved but unallocated of {total:.2f} GiB: "
                    "allocator fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)")
        culprit, notify = log_owner(facts, job, "CUDA out of memory" + note)  # a Slurm job, or a pod's log
        findings.append(Finding(
            check="job_cuda_oom", root_cause="gpu_oom",
            message=f"{culprit.split(':', 1)[0]} {job}: {len(events)} CUDA out-of-memory error(s){note}",
            culprits=[culprit] if job != "?" else [],
            evidence=[log_evidence(e) for e in events[:3]],
            strength="symptom", confidence=confidence("symptom", corroborated=True),
            suggested_actions=[notify] if job != "?" else [],
        ))
    return findings
