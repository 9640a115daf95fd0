"""check_checkpoint_stall: a job that stands still for a large share of its time writing checkpoints.

A synchronous checkpoint stops every rank until the last byte is on the file system; when the file system
is slow for the checkpoint's size (tens of GB per save over a few OSTs), the job spends minutes of every
interval saving while its GPUs idle. Training frameworks say how long each save took (torchtitan's
``Finished saving the checkpoint … in N seconds``, ``saved … (98 GB, 266 s)``). The remedy is the owner's:
asynchronous checkpointing, fewer saves, or wider striping — the GPUs and the nodes are fine.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from tools.checks.base import CheckConfig, job_culprits, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import CheckpointEvent

__all__ = ["CheckpointStallConfig", "check_checkpoint_stall"]


class CheckpointStallConfig(CheckConfig):
    """When saving is too large a share of the job's time."""

    min_share: float = 0.2
    """Share of wall time between the first and last timed save spent in saves."""
    min_save_s: float = 60.0
    """Median save time below which saves are no stall worth reporting, whatever their share."""
    idle_util_pct: float = 10.0
    """GPU utilisation samples below this count as the GPUs waiting (corroboration)."""


def _idle_share(facts: Facts, nodes: list[str], cfg: CheckpointStallConfig) -> float | None:
    samples = [s.value for s in facts.samples("DCGM_FI_DEV_GPU_UTIL") if s.node in nodes]
    return sum(v < cfg.idle_util_pct for v in samples) / len(samples) if len(samples) >= 10 else None


def check_checkpoint_stall(facts: Facts, cfg: CheckpointStallConfig) -> list[Finding]:
    """io_bandwidth_bound per running job whose timed checkpoint saves (job-log checkpoint_saved events with
    ``save_s``) take at least ``min_share`` of the wall time between the first and the last, each taking
    ``min_save_s`` or more; GPU utilisation samples idle for about that share corroborate.

    Sources: job logs (save lines with their durations and times), DCGM_FI_DEV_GPU_UTIL series.
    """
    saves: dict[str, list[CheckpointEvent]] = defaultdict(list)
    for e in facts.job_events_of("checkpoint_saved"):
        if isinstance(e, CheckpointEvent) and e.job and e.save_s and e.timestamp:
            saves[e.job].append(e)
    findings: list[Finding] = []
    for job, timed in saves.items():
        timed.sort(key=lambda e: e.timestamp)  # type: ignore[arg-type, return-value]
        if len(timed) < 2 or median(e.save_s or 0.0 for e in timed) < cfg.min_save_s:
            continue
        span = (timed[-1].timestamp - timed[0].timestamp).total_seconds()  # type: ignore[operator]
        spent = sum(e.save_s or 0.0 for e in timed[1:])
        if span <= 0 or spent / span < cfg.min_share:
            continue
        share = spent / span
        idle = _idle_share(facts, job_nodes(facts, job), cfg)
        evidence = [log_evidence(e) for e in timed[-2:]]
        if idle is not None:
            evidence.append(Evidence(text=f"DCGM_FI_DEV_GPU_UTIL below {cfg.idle_util_pct:.0f}% in {idle:.0%} of the "
                                          "job's samples", metric="DCGM_FI_DEV_GPU_UTIL", value=round(idle, 3), unit="ratio"))
        every = span / (len(timed) - 1) / 60
        findings.append(Finding(
            check="checkpoint_stall", root_cause="io_bandwidth_bound",
            message=f"job {job} spends {share:.0%} of its time saving checkpoints: {median(e.save_s or 0 for e in timed):.0f} s "
                    f"per save every {every:.0f} min (threshold {cfg.min_share:.0%}, {cfg.min_save_s:.0f} s)"
                    + (f"; its GPUs idle in {idle:.0%} of samples" if idle is not None else ""),
            culprits=job_culprits([job]), evidence=evidence,
            strength="heuristic",
            confidence=confidence("heuristic", corroborated=idle is not None and idle >= cfg.min_share / 2),
            suggested_actions=[ActionSpec(type="notify_owner", job=job, reason=(
                f"synchronous checkpoints take {share:.0%} of the job's time: save asynchronously, less often, "
                "or stripe the checkpoint directory over more OSTs"))],
        ))
    return findings
