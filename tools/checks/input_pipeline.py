"""check_input_pipeline_bound: every GPU of a job is under-used alike, with no fault to explain it."""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import utilisation
from tools.facts import Facts
from tools.knowledge.host import cpu_busy_nodes
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["InputPipelineConfig", "check_input_pipeline_bound"]


class InputPipelineConfig(CheckConfig):
    """Thresholds for a starved job."""

    low_util_pct: float = 40.0
    min_util_pct: float = 5.0
    """Below this the GPUs are idle (an interactive session, a hung job), not starved by a loader."""
    """Mean utilisation over the job's nodes below which the GPUs are starved."""
    evenness: float = 0.6
    """Lowest node mean at least this share of the highest: all nodes alike (not one straggler)."""
    min_gpus: int = 4


def check_input_pipeline_bound(facts: Facts, cfg: InputPipelineConfig) -> list[Finding]:
    """input_pipeline_bound per running job whose nodes all show low, even GPU utilisation (the data
    loader cannot feed them); high CPU load on its nodes corroborates.

    Sources: DCGM utilisation per node; squeue allocations; sinfo/scontrol CPU load.
    """
    metric, util = utilisation(facts)
    findings: list[Finding] = []
    for job in facts.jobs:
        if job.state != "RUNNING" or (job.num_gpus or 0) < cfg.min_gpus:
            continue
        vals = {n: util[n] for n in job.nodes if n in util}
        if not vals or len(vals) < len(job.nodes):
            continue
        mean = sum(vals.values()) / len(vals)
        if not cfg.min_util_pct <= mean < cfg.low_util_pct or min(vals.values()) < cfg.evenness * max(vals.values()):
            continue
        busy_cpu = cpu_busy_nodes(facts, job.nodes)
        evidence = [Evidence(text=f"{metric} mean {mean:.0f}% over job {job.job_id}'s {len(vals)} node(s) "
                                  f"(min {min(vals.values()):.0f}%, max {max(vals.values()):.0f}%)",
                             metric=metric, value=round(mean, 1), unit="%")]
        if busy_cpu:
            evidence.append(Evidence(text=f"CPU load at or above allocated CPUs on {', '.join(busy_cpu[:4])}",
                                     metric="CPULoad"))
        findings.append(Finding(
            check="input_pipeline_bound", root_cause="input_pipeline_bound",
            message=f"job {job.job_id}: GPUs {mean:.0f}% busy on average, evenly on all nodes "
            f"(threshold {cfg.low_util_pct:.0f}%)" + ("; CPUs saturated" if busy_cpu else ""),
            culprits=[f"job:{job.job_id}"], evidence=evidence,
            strength="heuristic", confidence=confidence("heuristic", corroborated=bool(busy_cpu)),
            suggested_actions=[ActionSpec(type="notify_owner", job=job.job_id,
                                          reason="GPUs starved by the input pipeline (more loader workers, prefetch)")],
        ))
    return findings
