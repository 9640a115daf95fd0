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
    one_ost_share: float = 0.8
    """A job whose OST traffic goes this much through one OST is limited by that one OST (striping)..."""
    min_osts: int = 4
    """...when the file system has at least this many OSTs to spread it over..."""
    slow_io_ms: float = 10.0
    """...and that OST serves its reads/writes this slowly (mean per op), or its nodes wait on I/O."""


def check_io_bandwidth_bound(facts: Facts, cfg: IoBoundConfig) -> list[Finding]:
    """io_bandwidth_bound for OSTs that `lfs df` flags degraded (``D``: a RAID rebuild) while running jobs read
    from them (obdfilter job_stats), and when one job dominates OST bandwidth (obdfilter job_stats read/write bytes
    over elapsed time) at more than ``heavy_gib_per_s`` and running jobs' GPUs sit idle.

    Sources: lctl get_param obdfilter.*.job_stats; DCGM utilisation; squeue allocations.
    """
    return _degraded_targets(facts) + _bandwidth(facts, cfg)


def _bandwidth(facts: Facts, cfg: IoBoundConfig) -> list[Finding]:
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
        return _one_ost(facts, cfg, rate)
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


def _one_ost(facts: Facts, cfg: IoBoundConfig, rate: dict[str, float]) -> list[Finding]:
    """io_bandwidth_bound for a job limited by one OST: its traffic almost all on one of many OSTs (a file
    striped over one OST), served slowly or with its nodes in iowait, and its GPUs under-used."""
    osts = {r.uuid for r in facts.lfs_df if r.kind == "OST" and not r.inodes}
    out: list[Finding] = []
    for job_id, job_rate in sorted(rate.items(), key=lambda kv: -kv[1])[:3]:
        entries = [e for e in facts.job_stats if e.job_id == job_id and "-OST" in e.target and e.elapsed_s]
        per_ost = defaultdict(float)
        for e in entries:
            per_ost[e.target] += (e.bytes.get("read_bytes", 0) + e.bytes.get("write_bytes", 0)) / (e.elapsed_s or 1)
        if not per_ost or not job_rate:
            continue
        target, busiest = max(per_ost.items(), key=lambda kv: kv[1])
        share = busiest / job_rate
        if share < cfg.one_ost_share or len(osts) < cfg.min_osts:
            continue
        ops = sum(e.ops.get(op, 0) for e in entries if e.target == target for op in ("read", "write"))
        usecs = sum(e.usecs.get(op, 0) for e in entries if e.target == target for op in ("read", "write"))
        ms = usecs / ops / 1000 if ops else None
        nodes = facts.job(job_id).nodes if facts.job(job_id) else []
        waiting = iowait_nodes(facts, nodes)
        metric, util = utilisation(facts)
        starved = [n for n in nodes if n in util and util[n] < cfg.starved_util_pct]
        slow = ms is not None and ms >= cfg.slow_io_ms
        if not (slow or waiting) or (util and nodes and not starved):
            continue
        evidence = [Evidence(text=f"obdfilter job_stats: job_id {job_id} moves {busiest / 2**30:.2f} GiB/s, {share:.0%} "
                                  f"of its OST traffic, through {target} alone ({len(osts)} OSTs in lfs df)"
                                  + (f"; {ms:.0f} ms per read/write there" if ms is not None else ""),
                             metric="obdfilter job_stats", value=round(share * 100, 1), unit="%")]
        if waiting:
            evidence.append(Evidence(text=f"CPU iowait at or above 20% on {', '.join(waiting[:4])}", metric="node_cpu_seconds_total"))
        if starved:
            evidence.append(Evidence(text=f"{metric} below {cfg.starved_util_pct:.0f}% on {', '.join(starved[:4])}",
                                     metric=metric))
        slurm_job = is_slurm_job_id(job_id)
        out.append(Finding(
            check="io_bandwidth_bound", root_cause="io_bandwidth_bound",
            message=f"job {job_id} is limited by one OST: {share:.0%} of its I/O goes through {target} "
                    f"(threshold {cfg.one_ost_share:.0%} of one of {len(osts)} OSTs)"
                    + (f" at {ms:.0f} ms per op" if ms is not None else ""),
            culprits=[f"job:{job_id}"] if slurm_job else [],
            evidence=evidence, strength="heuristic", confidence=confidence("heuristic", corroborated=slow and bool(waiting or starved)),
            suggested_actions=[ActionSpec(type="notify_owner", job=job_id,
                                          reason=f"all I/O goes through {target}: stripe the data over more OSTs (lfs setstripe -c)")]
            if slurm_job else [],
        ))
    return out


def _degraded_targets(facts: Facts) -> list[Finding]:
    """An OST the file system flags degraded (`lfs df` ``D``: its RAID rebuilding or a disk failed) serves every
    read at a fraction of its speed; the running jobs whose job_stats show I/O on it wait on it."""
    out: list[Finding] = []
    for row in facts.lfs_df:
        if row.kind != "OST" or "D" not in (row.flags or ""):
            continue
        target = row.uuid.removesuffix("_UUID")
        jobs = list(dict.fromkeys(e.job_id for e in facts.job_stats if e.target == target and is_slurm_job_id(e.job_id)
                                  and (j := facts.job(e.job_id)) is not None and (j.state or "") == "RUNNING"))
        if not jobs:
            continue
        out.append(Finding(
            check="io_bandwidth_bound", root_cause="io_bandwidth_bound",
            message=f"{target} is degraded (lfs df flag D: a RAID rebuild or a failed disk); "
                    f"{len(jobs)} running job(s) read from it and wait on its reduced bandwidth",
            culprits=[f"ost:{target}", *[f"job:{j}" for j in jobs[:4]]],
            evidence=[Evidence(text=f"lfs df: {row.uuid} {row.use_pct:.0f}% used on {row.mount}, flags {row.flags}",
                               metric="lfs df")],
            strength="state", confidence=confidence("state", corroborated=len(jobs) >= 1),
            suggested_actions=[],
        ))
    return out
