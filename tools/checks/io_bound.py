"""check_io_bandwidth_bound: OSTs saturated by one job's reads/writes while GPUs wait."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import utilisation
from tools.facts import Facts
from tools.facts.queries import is_slurm_job_id
from tools.knowledge.host import iowait_nodes
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["IoBoundConfig", "check_io_bandwidth_bound"]


class IoBoundConfig(CheckConfig):
    """Thresholds for OST bandwidth."""

    heavy_gib_per_s: float = 5.0
    """A job moving more than this through the OSTs (read + write, over job_stats' elapsed time)."""
    min_share: float = 0.5
    """...and at least this share of all OST traffic recorded."""
    starved_util_pct: float = 40.0
    """GPUs of running jobs below this mean utilisation count as waiting on I/O."""


def check_io_bandwidth_bound(facts: Facts, cfg: IoBoundConfig) -> list[Finding]:
    """io_bandwidth_bound when one job dominates OST bandwidth (obdfilter job_stats read/write bytes
    over elapsed time) at more than ``heavy_gib_per_s`` and running jobs' GPUs sit idle.

    Sources: lctl get_param obdfilter.*.job_stats; DCGM utilisation; squeue allocations.
    """
    rate: dict[str, float] = defaultdict(float)
    for e in facts.job_stats:
        if "-OST" not in e.target or not e.elapsed_s:
            continue
        rate[e.job_id] += (e.bytes.get("read_bytes", 0) + e.bytes.get("write_bytes", 0)) / e.elapsed_s
    total = sum(rate.values())
    if not total:
        return []
    top, top_rate = max(rate.items(), key=lambda kv: kv[1])
    gib = top_rate / 2**30
    if gib < cfg.heavy_gib_per_s or top_rate / total < cfg.min_share:
        return []
    metric, util = utilisation(facts)
    starved = sorted(n for n, u in util.items() if u < cfg.starved_util_pct and facts.jobs_on_node(n, states=("RUNNING",)))
    waiting = iowait_nodes(facts, starved)
    if util and not starved:
        return []
    slurm_job = is_slurm_job_id(top)  # else a process (procname.uid), quoted in evidence only
    job = facts.job(top)
    fss = sorted({e.target.split("-OST")[0] for e in facts.job_stats if e.job_id == top and "-OST" in e.target})
    evidence = [Evidence(text=f"obdfilter job_stats: job_id {top} moves {gib:.1f} GiB/s, "
                              f"{top_rate / total:.0%} of all OST traffic", metric="obdfilter job_stats",
                         value=round(gib, 2), unit="GiB/s")]
    if starved:
        evidence.append(Evidence(text=f"{metric} below {cfg.starved_util_pct:.0f}% on {', '.join(starved[:6])}",
                                 metric=metric))
    return [Finding(
        check="io_bandwidth_bound", root_cause="io_bandwidth_bound",
        message=f"job {top} saturates the OSTs at {gib:.1f} GiB/s (threshold {cfg.heavy_gib_per_s} GiB/s); "
        f"{len(starved)} node(s) with GPUs waiting",
        culprits=([f"job:{top}"] if slurm_job else []) + [f"fs:{fs}" for fs in fss]
        + ([f"user:{job.user}"] if job and job.user else []),
        evidence=evidence, strength="heuristic", confidence=confidence("heuristic", corroborated=bool(starved or waiting)),
        suggested_actions=[ActionSpec(type="notify_owner", job=top, reason="job saturates Lustre OST bandwidth")]
        if slurm_job else [],
    )]
