"""check_mdt_metadata_storm: an MDT drowning in open/stat/create calls, attributed to jobs."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig
from tools.facts import Facts
from tools.facts.queries import is_slurm_job_id
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.lustre import JobStatsEntry, MdtStats

__all__ = ["MetadataConfig", "check_mdt_metadata_storm", "METADATA_OPS"]

METADATA_OPS = (
    "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename",
    "getattr", "setattr", "getxattr", "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename",
)


class MetadataConfig(CheckConfig):
    """Thresholds for MDT load."""

    max_ops_per_s: float = 20_000.0
    """Sustained metadata operations per second on one MDT above which it is saturated."""
    min_job_share: float = 0.5
    """Share of an MDT's job_stats ops one job must cause to be named the culprit."""
    min_ops_without_time: int = 10_000_000
    """When no elapsed time is printed, total ops above which the MDT is considered stormed."""
    slow_service_us: float = 200.0
    """Mean service time per metadata op (from the usecs sums Lustre 2.14+ prints) at or above which
    the MDT is struggling. Below it a high rate is load the MDT keeps up with (tens of us per op
    is normal), so it is not a metadata wall; without usecs sums the rate alone decides."""
    common_op_share: float = 0.1
    """An op type carrying at least this share of the ops is judged by its own mean service time too:
    a storm's cheap ops (close, getxattr at a few us) dilute the overall mean while its opens and stats
    queue up."""
    min_victim_ops: int = 1_000
    """Ops of one kind a job must have made before its own mean service time for that kind counts:
    a dozen opens, one of them slow, say nothing about the MDT."""


def _md_ops(counters: dict[str, int]) -> int:
    return sum(v for k, v in counters.items() if k in METADATA_OPS)


def _service_us(counters: dict[str, int], usecs: dict[str, int]) -> tuple[int, int]:
    """(summed service time in us, ops it covers) over metadata ops whose usecs sum is known."""
    ops = [k for k in counters if k in METADATA_OPS and counters[k] and k in usecs]
    return sum(usecs[k] for k in ops), sum(counters[k] for k in ops)


def _slowest_common(counters: dict[str, int], usecs: dict[str, int], share: float) -> tuple[float, str] | None:
    """(mean us, op) of the slowest metadata op type carrying at least ``share`` of the ops."""
    total = _md_ops(counters)
    means = [(usecs[k] / n, k) for k, n in counters.items()
             if k in METADATA_OPS and n and k in usecs and total and n / total >= share]
    return max(means) if means else None


# Ops a client waits on and that are cheap on a healthy MDT; unlink/rmdir/sync may be slow by nature.
_WAITED_OPS = ("open", "close", "getattr", "setattr", "statfs", "mknod", "mkdir")


def _slowest_victim(entries: list[JobStatsEntry], cfg: MetadataConfig) -> tuple[float, str, str] | None:
    """(mean us, op, job id) of the slowest waited-on op any one job sees on an MDT, among the op
    kinds carrying ``common_op_share`` of that job's ops and ``min_victim_ops`` samples, when one other
    job makes ``min_job_share`` of the MDT's ops. A storm by one job (mass unlinks at tens of us each)
    shows as a low MDT-wide mean; the other jobs' opens queued behind it are what the MDT wall costs."""
    worst: tuple[float, str, str] | None = None
    everyone = sum(_md_ops(e.ops) for e in entries)
    top = max(entries, key=lambda e: _md_ops(e.ops), default=None)
    if top is None or not everyone or _md_ops(top.ops) / everyone < cfg.min_job_share:
        return None  # no one job's storm for the others to queue behind
    for e in entries:
        total = _md_ops(e.ops)
        if e is top:
            continue
        for op in _WAITED_OPS:
            n = e.ops.get(op, 0)
            if n >= cfg.min_victim_ops and op in e.usecs and total and n / total >= cfg.common_op_share:
                mean = e.usecs[op] / n
                if worst is None or mean > worst[0]:
                    worst = (mean, op, e.job_id)
    return worst


def _fs_of(target: str) -> str:
    return target.split("-MDT")[0] if "-MDT" in target else target


def _elapsed(facts: Facts, e: JobStatsEntry) -> float | None:
    """Seconds a job_stats entry covers: as Lustre printed it (2.14+), else from the Slurm job's
    start to the entry's snapshot time (the entry counts since the job's first operation)."""
    if e.elapsed_s:
        return e.elapsed_s
    job = facts.job(e.job_id) or facts.acct_job(e.job_id)
    if job and job.start_time and e.snapshot_time_s:
        span = e.snapshot_time_s - job.start_time.timestamp()
        return span if span > 0 else None
    return None


def _delta(older: MdtStats, newer: MdtStats) -> tuple[float, int, float | None] | None:
    """(ops/s, ops, mean service time in us or None) between two samples of one MDT's md_stats; None
    when they do not make a window (same moment, or the stats were cleared in between)."""
    if older.snapshot_time_s is None or newer.snapshot_time_s is None:
        return None
    span = newer.snapshot_time_s - older.snapshot_time_s
    ops = _md_ops(newer.counters) - _md_ops(older.counters)
    if span <= 0 or ops < 0:
        return None
    us_new, n_new = _service_us(newer.counters, {k: v for k, v in newer.sums.items() if newer.units.get(k) == "usecs"})
    us_old, n_old = _service_us(older.counters, {k: v for k, v in older.sums.items() if older.units.get(k) == "usecs"})
    svc = (us_new - us_old) / (n_new - n_old) if n_new > n_old and us_new >= us_old else None
    return ops / span, ops, svc


def _windowed(samples: list[MdtStats]) -> tuple[float, int, float | None] | None:
    """The rate over the last two samples of one MDT (two reads of md_stats a few seconds apart)."""
    timed = sorted((m for m in samples if m.snapshot_time_s is not None), key=lambda m: m.snapshot_time_s or 0.0)
    return _delta(timed[-2], timed[-1]) if len(timed) >= 2 else None


def check_mdt_metadata_storm(facts: Facts, cfg: MetadataConfig) -> list[Finding]:
    """metadata_wall per MDT whose metadata op rate (md_stats over its elapsed time, or the jobs'
    job_stats rates) exceeds ``max_ops_per_s``; the job causing most of it is the culprit (a
    ``procname.uid`` job_stats entry is only quoted: it names a process, not a Slurm job).
    md_stats without elapsed time (counters since mount) are not a rate and are not used; job_stats
    entries without it are timed from the Slurm job's start when known. Where Lustre prints service
    times (usecs sums), the MDT must also be slow (mean at or above ``slow_service_us``).

    Sources: lctl get_param mdt.*.md_stats and mdt.*.job_stats; squeue for the job's user.
    """
    jobs_by_mdt: dict[str, list[JobStatsEntry]] = defaultdict(list)
    for e in facts.job_stats:
        if "-MDT" in e.target:
            jobs_by_mdt[e.target].append(e)
    rates: dict[str, tuple[float | None, int]] = {}
    service: dict[str, float] = {}
    slowest: dict[str, tuple[float, str]] = {}  # from job_stats: the slowest common op and its mean
    by_target: dict[str, list[MdtStats]] = defaultdict(list)
    for m in facts.md_stats:
        by_target[m.target].append(m)
    windowed = {t: w for t, ms in by_target.items() if (w := _windowed(ms)) is not None}
    for m in facts.md_stats:
        us, n = _service_us(m.counters, {k: v for k, v in m.sums.items() if m.units.get(k) == "usecs"})
        if n:
            service[m.target] = us / n
        # Without start/elapsed time (Lustre 2.12) the counters run since the MDT was mounted:
        # billions on any healthy MDS after weeks, so they say nothing about load now.
        if m.target in windowed:
            # Two samples: the rate and service time now, whatever the counters' age.
            rate, ops, svc = windowed[m.target]
            rates[m.target] = (rate, ops)
            if svc is not None:
                service[m.target] = svc
        elif m.elapsed_s:
            rates[m.target] = (_md_ops(m.counters) / m.elapsed_s, _md_ops(m.counters))
    for target, entries in jobs_by_mdt.items():
        # md_stats may cover weeks (elapsed since mount); job_stats cover the jobs' own, recent
        # windows. A storm shows in the busier of the two views: judge by that view's rate and
        # that view's service time.
        timed = [(e, t) for e in entries if (t := _elapsed(facts, e))]
        job_rate = sum(_md_ops(e.ops) / t for e, t in timed) if timed else None
        md_rate, md_ops = rates.get(target, (None, 0))
        if target in windowed and (job_rate is None or windowed[target][0] >= job_rate):
            continue  # the two-sample window is the busier view: keep it
        summed_ops: dict[str, int] = defaultdict(int)
        summed_us: dict[str, int] = defaultdict(int)
        for e in entries:
            for k, v in e.ops.items():
                summed_ops[k] += v
            for k, v in e.usecs.items():
                summed_us[k] += v
        worst = _slowest_common(summed_ops, summed_us, cfg.common_op_share)
        parts = [_service_us(e.ops, e.usecs) for e in entries]
        job_svc = sum(us for us, _ in parts) / sum(n for _, n in parts) if sum(n for _, n in parts) else None
        use_jobs = job_rate is not None and (md_rate is None or job_rate > md_rate)
        rates[target] = (job_rate if use_jobs else md_rate, max(md_ops, sum(_md_ops(e.ops) for e in entries)))
        if job_svc is not None and (use_jobs or target not in service):
            service[target] = job_svc
            if worst is not None:  # judged by the jobs' view: their slowest common op too
                slowest[target] = worst
    findings: list[Finding] = []
    for target, (rate, ops) in sorted(rates.items()):
        stormed = rate > cfg.max_ops_per_s if rate is not None else ops > cfg.min_ops_without_time
        svc = service.get(target)
        victim = _slowest_victim(jobs_by_mdt.get(target, []), cfg) if stormed else None
        if victim is not None and victim[0] >= cfg.slow_service_us and svc is not None and svc < cfg.slow_service_us:
            slowest[target] = max(slowest.get(target, (0.0, "")), (victim[0], f"job {victim[2]}'s {victim[1]}"))
        if not stormed or (svc is not None and svc < cfg.slow_service_us
                           and slowest.get(target, (0.0, ""))[0] < cfg.slow_service_us):
            continue
        fs = _fs_of(target)
        shown = f"{rate:,.0f} ops/s" if rate is not None else f"{ops:,} ops"
        limit = f"{cfg.max_ops_per_s:,.0f} ops/s" if rate is not None else f"{cfg.min_ops_without_time:,} ops"
        if svc is not None:
            shown += f" at {svc:,.0f} us mean service time"
            limit += f", {cfg.slow_service_us:,.0f} us"
            if svc < cfg.slow_service_us and target in slowest:
                shown += f" ({slowest[target][1]} at {slowest[target][0]:,.0f} us)"
        evidence = [Evidence(text=f"{target}: {shown} of metadata operations", metric="md_stats", value=rate or ops,
                             unit="ops/s" if rate is not None else "ops")]
        culprits = [f"mdt:{target}", f"fs:{fs}"]
        actions: list[ActionSpec] = []
        entries = jobs_by_mdt.get(target, [])
        total = sum(_md_ops(e.ops) for e in entries)
        if entries and total:
            top = max(entries, key=lambda e: _md_ops(e.ops))
            share = _md_ops(top.ops) / total
            busiest = sorted(top.ops.items(), key=lambda kv: -kv[1])[:3]
            evidence.append(Evidence(
                text=f"job_stats on {target}: job_id {top.job_id} made {share:.0%} of metadata ops "
                + ", ".join(f"{k}={v:,}" for k, v in busiest),
                metric="job_stats", value=round(share * 100, 1), unit="%"))
            if share >= cfg.min_job_share and is_slurm_job_id(top.job_id):
                job = facts.job(top.job_id)
                culprits.insert(0, f"job:{top.job_id}")
                if job and job.user:
                    culprits.append(f"user:{job.user}")
                actions.append(ActionSpec(type="notify_owner", job=top.job_id,
                                          reason=f"job causes {share:.0%} of metadata load on {target}"))
        findings.append(Finding(
            check="mdt_metadata_storm", root_cause="metadata_wall",
            message=f"{target} serves {shown} (threshold {limit})",
            culprits=culprits, evidence=evidence, strength="direct",
            confidence=confidence("direct", corroborated=len(culprits) > 2),
            suggested_actions=actions))
    return findings
