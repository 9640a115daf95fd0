"""Read tool over Lustre: MDT load, top jobs by metadata ops, fullest targets."""

from __future__ import annotations

from pydantic import BaseModel

from tools.checks.metadata_wall import METADATA_OPS
from tools.read.context import ReadContext

__all__ = ["MdtBrief", "JobOpsBrief", "TargetFill", "LustreSummary", "get_lustre_stats"]


class MdtBrief(BaseModel):
    """One MDT: total metadata ops, and ops/s when the stats print their elapsed time."""

    target: str
    metadata_ops: int
    ops_per_s: float | None = None
    top_ops: dict[str, int]


class JobOpsBrief(BaseModel):
    """One job_stats entry: metadata ops and bytes written/read."""

    target: str
    job_id: str
    metadata_ops: int
    write_bytes: int = 0
    read_bytes: int = 0


class TargetFill(BaseModel):
    """One OST/MDT fill level from `lfs df` / `lfs df -i`."""

    uuid: str
    use_pct: float
    inodes: bool


class LustreSummary(BaseModel):
    """MDT loads, the ``limit`` busiest jobs, and the ``limit`` fullest targets."""

    mdts: list[MdtBrief]
    top_jobs: list[JobOpsBrief]
    fullest: list[TargetFill]


def get_lustre_stats(ctx: ReadContext, *, limit: int = 5) -> LustreSummary:
    """Lustre metadata and capacity (lctl get_param mdt.*.md_stats / *.job_stats, lfs df [-i]).
    ``limit`` (1–50) caps the job and target lists."""
    limit = max(1, min(limit, 50))
    f = ctx.facts
    mdts = []
    for m in f.md_stats:
        ops = sum(v for k, v in m.counters.items() if k in METADATA_OPS)
        top = dict(sorted(((k, v) for k, v in m.counters.items() if k in METADATA_OPS), key=lambda kv: -kv[1])[:4])
        mdts.append(MdtBrief(target=m.target, metadata_ops=ops,
                             ops_per_s=round(ops / m.elapsed_s, 1) if m.elapsed_s else None, top_ops=top))
    jobs = [JobOpsBrief(target=e.target, job_id=e.job_id,
                        metadata_ops=sum(v for k, v in e.ops.items() if k in METADATA_OPS),
                        write_bytes=e.bytes.get("write_bytes", 0), read_bytes=e.bytes.get("read_bytes", 0))
            for e in f.job_stats]
    jobs.sort(key=lambda j: -(j.metadata_ops + j.write_bytes // 1_000_000))
    fill = sorted((TargetFill(uuid=r.uuid, use_pct=r.use_pct, inodes=r.inodes) for r in f.lfs_df),
                  key=lambda t: -t.use_pct)
    return LustreSummary(mdts=mdts, top_jobs=jobs[:limit], fullest=fill[:limit])
