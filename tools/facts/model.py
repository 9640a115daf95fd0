"""Facts: everything parsed from one snapshot (or one live collection), gathered once, indexed.

Checks and read tools work on Facts and never fetch, so replay runs them unchanged (like NHC's
"data gathered once, checks named in config"). Lookups by job, node, user, event kind and metric
name go through indexes built on first use, so no check scans every job per job (a 100,000-job
cluster is read in linear time).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field, PrivateAttr

from tools.facts.sample_store import SampleStore, SampleView
from tools.models.gpu import GpuStatus, MetricSample
from tools.models.gpu_columns import SampleBlock
from tools.models.k8s import K8sEvent, K8sNode, K8sPod
from tools.models.k8s_objects import K8sResourceQuota, K8sWorkload
from tools.models.logs import JobLogEvent, JobLogSummary, KernelEvent
from tools.models.lustre import JobStatsEntry, LfsDfRow, MdtStats
from tools.models.slurm import NodeReason, SacctRecord, SlurmClientError, SlurmJob, SlurmNode, SlurmQos
from tools.models.unreadable import Unreadable

__all__ = ["ArtifactInfo", "Facts"]

T = TypeVar("T")


class ArtifactInfo(BaseModel):
    """Which file (or command) a fact came from, for citing evidence."""

    path: str
    format: str
    node: str | None = None
    job: str | None = None
    command: str | None = None
    records: int = 0
    """Records the parser returned (0 for an empty queue, or a file that could not be read)."""
    read: bool = True
    """False when the file could not be read (it is then also in ``Facts.unreadable``)."""


class Facts(BaseModel):
    """All parsed evidence about a cluster at one moment.

    ``jobs`` and ``nodes`` merge what squeue/sinfo/scontrol reported (later sources fill fields the
    earlier ones left empty). ``captured_at`` is "now" for every time computation. Lists are the
    records in file order; the lookup methods below are indexed (built once, on first use), so
    treat a Facts as read-only once built.
    """

    captured_at: datetime
    cluster: str | None = None
    artifacts: list[ArtifactInfo] = Field(default_factory=list)
    jobs: list[SlurmJob] = Field(default_factory=list)
    nodes: list[SlurmNode] = Field(default_factory=list)
    node_reasons: list[NodeReason] = Field(default_factory=list)
    acct: list[SacctRecord] = Field(default_factory=list)
    qos: list[SlurmQos] = Field(default_factory=list)
    """QOS limits from ``sacctmgr show qos``."""
    slurm_errors: list[SlurmClientError] = Field(default_factory=list)
    """Slurm commands that printed an error instead of output (controller or slurmdbd unreachable)."""
    md_stats: list[MdtStats] = Field(default_factory=list)
    job_stats: list[JobStatsEntry] = Field(default_factory=list)
    lfs_df: list[LfsDfRow] = Field(default_factory=list)
    gpu_status: list[GpuStatus] = Field(default_factory=list)
    kernel_events: list[KernelEvent] = Field(default_factory=list)
    job_log_events: list[JobLogEvent] = Field(default_factory=list)
    job_logs: list[JobLogSummary] = Field(default_factory=list)
    k8s_nodes: list[K8sNode] = Field(default_factory=list)
    k8s_pods: list[K8sPod] = Field(default_factory=list)
    k8s_events: list[K8sEvent] = Field(default_factory=list)
    k8s_workloads: list[K8sWorkload] = Field(default_factory=list)
    """Objects that create pods (Jobs, Deployments, operators' jobs such as PyTorchJob), as read."""
    k8s_quotas: list[K8sResourceQuota] = Field(default_factory=list)
    other: list[BaseModel] = Field(default_factory=list)
    """Parsed records of kinds no check reads yet (sdiag, ...)."""
    unreadable: list[Unreadable] = Field(default_factory=list)
    """Evidence that could not be read: files that failed to parse, fetches that failed, checks that raised."""

    _index: dict[str, Any] = PrivateAttr(default_factory=dict)
    _samples: SampleStore = PrivateAttr(default_factory=SampleStore)

    def __init__(self, **data: Any) -> None:
        samples = data.pop("gpu_samples", None)
        super().__init__(**data)
        if samples:
            self._samples = SampleStore(samples)

    @property
    def gpu_samples(self) -> SampleView:
        """GPU/Prometheus samples (dcgm-exporter pages, Prometheus query results), in file order: a read-only
        sequence of MetricSample. Kept as columns (tools.facts.sample_store) and made into objects only when
        iterated; checks read ``sample_blocks`` / ``samples`` instead."""
        return SampleView(self._samples)

    @gpu_samples.setter
    def gpu_samples(self, samples: Iterable[MetricSample]) -> None:
        self._samples = SampleStore(samples)
        self._index = {}

    @property
    def sample_store(self) -> SampleStore:
        """Where the samples are kept (build_facts adds to it)."""
        return self._samples

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Facts:
        """A copy with its derived indexes dropped: a copy is made to be changed (a what-if, a test adding
        a job), and an index carried over from the original would hide the change."""
        copy = super().model_copy(update=update, deep=deep)
        copy._index = {}
        return copy

    def cached(self, name: str, build: Callable[[], T]) -> T:
        """A value derived from these facts, computed once (an index, a per-node table): ``build()`` on
        first use. Facts are read-only once built, so the value stays valid."""
        index = (self.__pydantic_private__ or {}).get("_index")  # not self._index: pydantic's __getattr__ for a
        if index is None:  # private attribute costs more than the lookup (this runs per job and node lookup)
            index = self._index
        if name not in index:
            index[name] = build()
        return index[name]

    @staticmethod
    def _group(items: Iterable[Any], key: Callable[[Any], Iterable[Any]]) -> dict[Any, list[Any]]:
        out: dict[Any, list[Any]] = defaultdict(list)
        for item in items:
            for k in key(item):
                out[k].append(item)
        return dict(out)

    @staticmethod
    def _group_by(items: Iterable[Any], attr: str, *, empty: bool = False) -> dict[Any, list[Any]]:
        """``items`` by the value of one attribute, those whose value is empty (None, "") left out unless
        ``empty``: the one-key case of ``_group`` without a key list per item (1.2 million DCGM samples at
        10,000 nodes)."""
        out: dict[Any, list[Any]] = {}
        for item in items:
            k = getattr(item, attr)
            if k or empty:
                bucket = out.get(k)
                if bucket is None:
                    out[k] = [item]
                else:
                    bucket.append(item)
        return out

    # ------------------------------------------------------------------ Slurm
    def job(self, job_id: str) -> SlurmJob | None:
        """The job with this id (array tasks as ``123_4``), or None."""
        return self.cached("job", lambda: {j.job_id: j for j in self.jobs}).get(job_id)

    def node(self, name: str) -> SlurmNode | None:
        """The Slurm node with this name, or None."""
        return self.cached("node", lambda: {n.name: n for n in self.nodes}).get(name)

    def jobs_on_node(self, name: str, *, states: Iterable[str] | None = ("RUNNING", "COMPLETING")) -> list[SlurmJob]:
        """Jobs whose allocation includes ``name`` (squeue/scontrol) and whose state is in ``states``
        (every state when None)."""
        on = self.cached("jobs_on", lambda: self._group(self.jobs, lambda j: dict.fromkeys(j.nodes))).get(name, [])
        if states is None:
            return list(on)
        wanted = set(states)
        return [j for j in on if (j.state or "") in wanted]

    def jobs_of_user(self, user: str) -> list[SlurmJob]:
        """Jobs of ``user`` in the queue view (squeue/scontrol)."""
        return self.cached("jobs_user", lambda: self._group_by(self.jobs, "user")).get(user, [])

    def array_tasks(self, array_id: str) -> list[str]:
        """The task ids (``123_4``) of array job ``123`` seen in the queue or accounting, in order; [] when
        ``array_id`` is not an array's id. A pending range (``123_[5-9]``) counts as one entry."""
        def build() -> dict[str, list[str]]:
            ids = dict.fromkeys([j.job_id for j in self.jobs] + [r.job_id for r in self.acct if not r.is_step])
            return self._group((i for i in ids if "_" in i), lambda i: [i.split("_", 1)[0]])
        return self.cached("array_tasks", build).get(array_id, [])

    def qos_named(self, name: str | None) -> SlurmQos | None:
        """The QOS ``name`` from sacctmgr (names are lower case in the accounting database), or None."""
        if not name:
            return None
        return self.cached("qos_by_name", lambda: {q.name.lower(): q for q in self.qos}).get(name.lower())

    def acct_job(self, job_id: str) -> SacctRecord | None:
        """The accounting row of the job itself (not a step)."""
        return self.cached("acct", lambda: {r.job_id: r for r in self.acct if not r.is_step}).get(job_id)

    def acct_jobs(self) -> list[SacctRecord]:
        """Accounting rows of jobs (no steps), in file order."""
        return self.cached("acct_rows", lambda: [r for r in self.acct if not r.is_step])

    def acct_on_node(self, name: str) -> list[SacctRecord]:
        """Accounting job rows whose node list includes ``name``."""
        return self.cached("acct_on", lambda: self._group(self.acct_jobs(), lambda r: dict.fromkeys(r.nodes))).get(name, [])

    def acct_of_user(self, user: str) -> list[SacctRecord]:
        """Accounting job rows of ``user``."""
        return self.cached("acct_user", lambda: self._group_by(self.acct_jobs(), "user")).get(user, [])

    def reason_of(self, node: str) -> str | None:
        """The node's reason: scontrol/sinfo's, else the `sinfo -R` row naming it."""
        n = self.node(node)
        if n is not None and n.reason:
            return n.reason
        rows = self.cached("reasons", lambda: {name: r for r in self.node_reasons for name in r.nodes})
        return rows[node].reason if node in rows else None

    # ------------------------------------------------------------------ events and metrics
    def kernel_events_on(self, node: str) -> list[Any]:
        """Kernel/system log events of ``node``, in file order."""
        return self.cached("kev_node", lambda: self._group_by(self.kernel_events, "node")).get(node, [])

    def kernel_events_of(self, *kinds: str) -> list[Any]:
        """Kernel/system log events of the given kinds, in file order."""
        by = self.cached("kev_kind", lambda: self._group_by(self.kernel_events, "kind", empty=True))
        if len(kinds) == 1:
            return by.get(kinds[0], [])
        wanted = set(kinds)
        return [e for e in self.kernel_events if e.kind in wanted]

    def job_events(self, job: str) -> list[Any]:
        """Job-log events of ``job``, in file order."""
        return self.cached("jev_job", lambda: self._group_by(self.job_log_events, "job")).get(job, [])

    def job_events_of(self, *kinds: str) -> list[Any]:
        """Job-log events of the given kinds, in file order."""
        by = self.cached("jev_kind", lambda: self._group_by(self.job_log_events, "kind", empty=True))
        if len(kinds) == 1:
            return by.get(kinds[0], [])
        wanted = set(kinds)
        return [e for e in self.job_log_events if e.kind in wanted]

    def log_hosts(self, job: str) -> set[str]:
        """Hosts a job's own log lines name as the printer (NCCL ``host:pid:tid``, UCX ``[host:pid:...]``):
        where the job ran when the queue and accounting views do not say (sacct's default columns)."""
        return self.cached("log_hosts", self._log_hosts).get(job, set())

    def _log_hosts(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for e in self.job_log_events:
            if e.job and getattr(e, "host", None):
                out[e.job].add(e.host)
            elif e.job and e.kind == "slurm_message" and getattr(e, "tasks", None) and getattr(e, "node", None):
                out[e.job].add(e.node)  # srun's "srun: error: NODE: task N: Exited with exit code 1"
        for s in self.job_logs:
            if s.job:
                out[s.job].update(s.hosts)
        return dict(out)

    def jobs_logged_on(self, node: str) -> list[str]:
        """Jobs whose logs name ``node`` as a printing host (see ``log_hosts``)."""
        return self.cached("jobs_logged_on", lambda: self._group(
            list(self._log_hosts()), lambda j: self.log_hosts(j))).get(node, [])

    def samples(self, *names: str) -> list[MetricSample]:
        """GPU/Prometheus samples with one of these metric names (file order; of several names, name by name)."""
        store = self._samples
        if len(names) == 1:
            return store.samples(names[0])
        return [s for n in names for s in store.samples(n)]

    def sample_blocks(self, *names: str) -> list[SampleBlock]:
        """The samples of these metric names as columns (tools.models.gpu_columns.SampleBlock), in the order
        ``samples(*names)`` gives them: what checks that sum or scan a metric over every GPU read."""
        return self._samples.blocks(*names)

    def sampled_nodes(self) -> set[str]:
        """Every node some GPU/Prometheus sample is about."""
        return self.cached("sample_nodes", self._samples.nodes)

    def metric_names(self) -> set[str]:
        """Every metric name present."""
        return self._samples.names()

    # ------------------------------------------------------------------ Kubernetes
    def k8s_node(self, name: str) -> K8sNode | None:
        """The Kubernetes node with this name, or None."""
        return self.cached("k8s_node", lambda: {n.name: n for n in self.k8s_nodes}).get(name)

    def pods_on(self, node: str) -> list[K8sPod]:
        """Pods bound to ``node`` (any phase)."""
        return self.cached("pods_on", lambda: self._group_by(self.k8s_pods, "node")).get(node, [])

    def events_about(self, kind: str, name: str) -> list[K8sEvent]:
        """Kubernetes events whose involved object is ``kind``/``name``."""
        return self.cached("k8s_ev", lambda: self._group(
            self.k8s_events, lambda e: [(e.object_kind, e.object_name)])).get((kind, name), [])

    # ------------------------------------------------------------------ what was read
    def formats_read(self) -> set[str]:
        """Format ids of the artifacts that were read (parsed without error)."""
        return {a.format for a in self.artifacts if a.read}

    def records_read(self) -> int:
        """Records of evidence read (queue, nodes, accounting, metrics, events, objects; a Slurm command's
        recorded error output counts: it is evidence). 0 means nothing could be read at all."""
        lists = ("jobs", "nodes", "node_reasons", "acct", "slurm_errors", "md_stats", "job_stats", "lfs_df",
                 "gpu_samples", "gpu_status", "kernel_events", "job_log_events", "job_logs", "k8s_nodes",
                 "k8s_pods", "k8s_events", "k8s_workloads", "k8s_quotas", "other")
        return sum(len(getattr(self, name)) for name in lists) + sum(1 for a in self.artifacts if a.read)

    def node_names(self) -> set[str]:
        """Every node name known from Slurm or Kubernetes."""
        return self.cached("names", lambda: {n.name for n in self.nodes} | {n.name for n in self.k8s_nodes})
