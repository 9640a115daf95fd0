"""Facts: everything parsed from one snapshot (or one live collection), gathered once.

Checks and read tools work on Facts and never fetch, so replay runs them unchanged (like NHC's
"data gathered once, checks named in config").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from pydantic import BaseModel, Field

from tools.models.gpu import GpuStatus, MetricSample
from tools.models.k8s import K8sEvent, K8sNode, K8sPod
from tools.models.logs import JobLogEvent, JobLogSummary, KernelEvent
from tools.models.lustre import JobStatsEntry, LfsDfRow, MdtStats
from tools.models.slurm import NodeReason, SacctRecord, SlurmClientError, SlurmJob, SlurmNode
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

__all__ = ["ArtifactInfo", "Facts", "build_facts"]


class ArtifactInfo(BaseModel):
    """Which file (or command) a fact came from, for citing evidence."""

    path: str
    format: str
    node: str | None = None
    job: str | None = None
    command: str | None = None


class Facts(BaseModel):
    """All parsed evidence about a cluster at one moment.

    ``jobs`` and ``nodes`` merge what squeue/sinfo/scontrol reported (later sources fill fields the
    earlier ones left empty). ``captured_at`` is "now" for every time computation.
    """

    captured_at: datetime
    cluster: str | None = None
    artifacts: list[ArtifactInfo] = Field(default_factory=list)
    jobs: list[SlurmJob] = Field(default_factory=list)
    nodes: list[SlurmNode] = Field(default_factory=list)
    node_reasons: list[NodeReason] = Field(default_factory=list)
    acct: list[SacctRecord] = Field(default_factory=list)
    slurm_errors: list[SlurmClientError] = Field(default_factory=list)
    """Slurm commands that printed an error instead of output (controller or slurmdbd unreachable)."""
    md_stats: list[MdtStats] = Field(default_factory=list)
    job_stats: list[JobStatsEntry] = Field(default_factory=list)
    lfs_df: list[LfsDfRow] = Field(default_factory=list)
    gpu_samples: list[MetricSample] = Field(default_factory=list)
    gpu_status: list[GpuStatus] = Field(default_factory=list)
    kernel_events: list[KernelEvent] = Field(default_factory=list)
    job_log_events: list[JobLogEvent] = Field(default_factory=list)
    job_logs: list[JobLogSummary] = Field(default_factory=list)
    k8s_nodes: list[K8sNode] = Field(default_factory=list)
    k8s_pods: list[K8sPod] = Field(default_factory=list)
    k8s_events: list[K8sEvent] = Field(default_factory=list)
    other: list[BaseModel] = Field(default_factory=list)
    """Parsed records of kinds no check reads yet (sdiag, ...)."""

    def job(self, job_id: str) -> SlurmJob | None:
        """The job with this id (array tasks as ``123_4``), or None."""
        for j in self.jobs:
            if j.job_id == job_id:
                return j
        return None

    def node(self, name: str) -> SlurmNode | None:
        """The node with this name, or None."""
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    def jobs_on_node(self, name: str, *, states: Iterable[str] = ("RUNNING", "COMPLETING")) -> list[SlurmJob]:
        """Jobs whose allocation includes ``name`` and whose state is in ``states``."""
        wanted = set(states)
        return [j for j in self.jobs if name in j.nodes and (j.state or "") in wanted]

    def acct_job(self, job_id: str) -> SacctRecord | None:
        """The accounting row of the job itself (not a step)."""
        for r in self.acct:
            if r.job_id == job_id:
                return r
        return None


_ROUTES: dict[type, str] = {
    SlurmJob: "jobs",
    SlurmNode: "nodes",
    NodeReason: "node_reasons",
    SacctRecord: "acct",
    SlurmClientError: "slurm_errors",
    MdtStats: "md_stats",
    JobStatsEntry: "job_stats",
    LfsDfRow: "lfs_df",
    MetricSample: "gpu_samples",
    GpuStatus: "gpu_status",
    KernelEvent: "kernel_events",
    JobLogEvent: "job_log_events",
    JobLogSummary: "job_logs",
    K8sNode: "k8s_nodes",
    K8sPod: "k8s_pods",
    K8sEvent: "k8s_events",
}


def _merge(existing: BaseModel, new: BaseModel) -> BaseModel:
    """Fill fields unset (None / empty) in ``existing`` from ``new``."""
    update = {}
    for name in type(existing).model_fields:
        old = getattr(existing, name)
        if old in (None, [], {}, ""):
            val = getattr(new, name)
            if val not in (None, [], {}, ""):
                update[name] = val
    return existing.model_copy(update=update) if update else existing


def build_facts(artifacts: Iterable[RawArtifact], *, captured_at: datetime | None = None, cluster: str | None = None) -> Facts:
    """Parse every artifact and gather the results into one Facts.

    Args:
        artifacts: raw artifacts from any source (snapshot replay or live).
        captured_at: the moment the facts describe; defaults to the newest artifact's capture time.

    Raises:
        ParseError / UnknownFormatError: from the first artifact that does not parse (names the file).
    """
    arts = list(artifacts)
    when = captured_at or max((a.captured_at for a in arts), default=datetime.now(timezone.utc))
    facts = Facts(captured_at=when, cluster=cluster)
    jobs: dict[str, SlurmJob] = {}
    nodes: dict[str, SlurmNode] = {}
    for art in arts:
        facts.artifacts.append(
            ArtifactInfo(path=art.path, format=art.format, node=art.node, job=art.job, command=art.command)
        )
        for rec in parse_artifact(art):
            if isinstance(rec, SlurmJob):
                jobs[rec.job_id] = _merge(jobs[rec.job_id], rec) if rec.job_id in jobs else rec
            elif isinstance(rec, SlurmNode):
                nodes[rec.name] = _merge(nodes[rec.name], rec) if rec.name in nodes else rec
            else:
                getattr(facts, _ROUTES.get(type(rec), "other")).append(rec)
    facts.jobs = list(jobs.values())
    facts.nodes = list(nodes.values())
    return facts
