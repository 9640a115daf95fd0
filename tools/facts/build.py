"""build_facts: parse raw artifacts into one Facts, one file's failure never hiding the rest."""

from __future__ import annotations

import gc
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel

from tools.errors import ParseError, UnknownFormatError
from tools.facts.model import ArtifactInfo, Facts
from tools.facts.offload import Offload
from tools.models.gpu import GpuStatus, MetricSample
from tools.models.gpu_columns import SampleBlock
from tools.models.k8s import K8sEvent, K8sNode, K8sPod
from tools.models.k8s_objects import K8sResourceQuota, K8sWorkload
from tools.models.logs import JobLogEventBase, JobLogSummary, KernelEventBase
from tools.models.lustre import JobStatsEntry, LfsDfRow, MdtStats
from tools.models.slurm import NodeReason, SacctRecord, SlurmClientError, SlurmJob, SlurmNode, SlurmQos
from tools.models.unreadable import Unreadable
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

__all__ = ["build_facts"]

_ROUTES: dict[type, str] = {
    NodeReason: "node_reasons",
    SacctRecord: "acct",
    SlurmClientError: "slurm_errors",
    SlurmQos: "qos",
    MdtStats: "md_stats",
    JobStatsEntry: "job_stats",
    LfsDfRow: "lfs_df",
    GpuStatus: "gpu_status",
    JobLogSummary: "job_logs",
    K8sNode: "k8s_nodes",
    K8sPod: "k8s_pods",
    K8sEvent: "k8s_events",
    K8sWorkload: "k8s_workloads",
    K8sResourceQuota: "k8s_quotas",
}


def _route(rec: BaseModel) -> str:
    if isinstance(rec, KernelEventBase):
        return "kernel_events"
    if isinstance(rec, JobLogEventBase):
        return "job_log_events"
    return _ROUTES.get(type(rec), "other")


def _query_of(url: str | None) -> str | None:
    """The PromQL ``query=`` of a recorded Prometheus API URL (at most 300 characters), or None."""
    if not url or "query" not in url:
        return None
    values = parse_qs(urlsplit(url).query).get("query")
    return values[0][:300] if values else None


def _merge(existing: BaseModel, new: BaseModel) -> BaseModel:
    """Fill fields unset (None / empty) in ``existing`` from ``new``."""
    empty = (None, [], {}, "")
    given = new.__dict__  # the fields (these models allow no extra keys): no per-field getattr
    update = {name: given[name] for name, old in existing.__dict__.items()
              if old in empty and name in given and given[name] not in empty}
    return existing.model_copy(update=update) if update else existing


def build_facts(artifacts: Iterable[RawArtifact], *, captured_at: datetime | None = None, cluster: str | None = None,
                unreadable: Iterable[Unreadable] = (), strict: bool = False) -> Facts:
    """Parse every artifact and gather the results into one Facts.

    A file that fails to parse (malformed, empty, not UTF-8, unknown format) becomes an
    ``Unreadable(kind="file")`` record and the rest are still read (DESIGN.md: partial evidence).

    Args:
        artifacts: raw artifacts from any source (snapshot replay or live).
        captured_at: the moment the facts describe; defaults to the newest artifact's capture time.
        unreadable: evidence already known to be unreadable (absent files, failed fetches).
        strict: raise on the first file that does not parse instead of recording it.

    Raises:
        ParseError / UnknownFormatError: only with ``strict``, from the first artifact that does not parse.
    """
    # The parsers allocate millions of objects (a DCGM sample per GPU and field at 10,000 nodes) and no
    # reference cycles; the cyclic collector's full passes over that growing heap cost more than the
    # parsing, during the build and again in every check after it. So the collector is off while
    # building, and the facts are then frozen out of its passes (gc.freeze) until they are dropped,
    # when everything frozen returns to it (refcounting frees the facts either way: they hold no cycles).
    paused = gc.isenabled()
    gc.disable()
    try:
        facts = _build(artifacts, captured_at=captured_at, cluster=cluster, unreadable=unreadable, strict=strict)
    finally:
        if paused:
            gc.enable()
    if paused:
        gc.freeze()
        weakref.finalize(facts, gc.unfreeze)
    return facts


def _build(artifacts: Iterable[RawArtifact], *, captured_at: datetime | None, cluster: str | None,
           unreadable: Iterable[Unreadable], strict: bool) -> Facts:
    # Parsed as they arrive (a snapshot's files are read one by one in between, so a source that
    # stops at the run's time limit leaves what it read parsed); only a missing captured_at needs all first.
    arts: Iterable[RawArtifact] = artifacts
    if captured_at is None:
        arts = list(artifacts)
    when = captured_at or max((a.captured_at for a in arts), default=datetime.now(timezone.utc))
    facts = Facts(captured_at=when, cluster=cluster, unreadable=list(unreadable))
    jobs: dict[str, SlurmJob] = {}
    nodes: dict[str, SlurmNode] = {}
    # A large cluster's Slurm outputs and kernel logs are parsed in a second process meanwhile
    # (tools.facts.offload); their records are used in the artifacts' order all the same.
    offload = None if strict else Offload()
    waiting: deque[tuple[RawArtifact | _Meta, ArtifactInfo, Any]] = deque()
    try:
        for art in arts:
            info = ArtifactInfo(path=art.path, format=art.format, node=art.node, job=art.job, command=art.command)
            facts.artifacts.append(info)
            if offload is not None and offload.wants(art):
                waiting.append((art, info, offload.submit(art)))
                continue
            if not waiting:
                _apply(facts, jobs, nodes, art, info, lambda a=art: parse_artifact(a, columnar=True), strict=strict)
                continue
            ticket = _parsed_here(art)
            waiting.append((ticket[2], info, ticket))
            while waiting and Offload.ready(waiting[0][2]):
                _apply_waiting(facts, jobs, nodes, waiting.popleft(), offload, strict=strict)
        while waiting:
            _apply_waiting(facts, jobs, nodes, waiting.popleft(), offload, strict=strict)
    except BaseException:
        if offload is not None:
            offload.close(wait=False)  # interrupted (or strict's first error): the worker's rest is not waited for
        raise
    if offload is not None:
        offload.close()
    facts.jobs = list(jobs.values())
    facts.nodes = list(nodes.values())
    return facts


class _Meta(NamedTuple):
    """What _apply reads of an artifact besides its bytes (kept while it waits, without the bytes)."""

    path: str
    format: str
    node: str | None
    job: str | None
    command: str | None
    url: str | None


def _parsed_here(art: RawArtifact) -> tuple[None, list[BaseModel] | BaseException, _Meta]:
    """A ticket for an artifact parsed in this process while earlier ones are still in the worker."""
    meta = _Meta(art.path, art.format, art.node, art.job, art.command, art.url)
    try:
        return (None, parse_artifact(art, columnar=True), meta)
    except Exception as e:  # noqa: BLE001 - raised again, in order, by _apply
        return (None, e, meta)


def _apply_waiting(facts: Facts, jobs: dict[str, SlurmJob], nodes: dict[str, SlurmNode],
                   item: tuple[RawArtifact | _Meta, ArtifactInfo, Any], offload: Offload | None, *, strict: bool) -> None:
    art, info, ticket = item

    def records() -> list[BaseModel]:
        if ticket[0] is None:  # parsed here
            if isinstance(ticket[1], BaseException):
                raise ticket[1]
            return ticket[1]
        assert offload is not None
        return offload.records(ticket)

    _apply(facts, jobs, nodes, art, info, records, strict=strict)


def _apply(facts: Facts, jobs: dict[str, SlurmJob], nodes: dict[str, SlurmNode], art: RawArtifact | _Meta,
           info: ArtifactInfo, parse: Callable[[], list[BaseModel]], *, strict: bool) -> None:
    """Parse one artifact (``parse``) and route its records into ``facts`` (jobs and nodes merged by id)."""
    try:
        records = parse()
    except (ParseError, UnknownFormatError) as e:
        if strict:
            raise
        info.read = False
        facts.unreadable.append(Unreadable(kind="file", path=art.path, format=art.format, node=art.node,
                                           job=art.job, command=art.command, reason=str(e)[:300]))
        return
    except Exception as e:  # noqa: BLE001 - a parser's own bug on one file degrades the run, never aborts it
        if strict:
            raise
        info.read = False
        facts.unreadable.append(Unreadable(kind="file", path=art.path, format=art.format, node=art.node,
                                           job=art.job, command=art.command,
                                           reason=f"parser failed ({type(e).__name__}): {str(e)[:240]}"))
        return
    info.records = len(records)
    query = _query_of(art.url)
    kind = type(records[0]) if records else None
    if kind is SampleBlock and all(type(rec) is SampleBlock for rec in records):  # a DCGM page, as columns
        info.records = sum(len(b.values) for b in records)
        facts.sample_store.add_blocks(records)
        return
    if kind is MetricSample and not query and all(type(rec) is MetricSample for rec in records):
        facts.sample_store.add_samples(records)
        return
    if (kind is not None and not issubclass(kind, (SlurmJob, SlurmNode)) and not (query and issubclass(kind, MetricSample))
            and all(type(rec) is kind for rec in records)):
        getattr(facts, _route(records[0])).extend(records)  # one kind (a DCGM page, a log's events): one route
        return
    samples: list[MetricSample] = []
    for rec in records:
        if query and isinstance(rec, MetricSample) and not rec.name:
            rec.name = query  # a PromQL expression's result (rate(...), 100 - avg(...)) is named by it
        if isinstance(rec, MetricSample):
            samples.append(rec)
        elif isinstance(rec, SampleBlock):
            if samples:
                facts.sample_store.add_samples(samples)
                samples = []
            facts.sample_store.add_blocks([rec])
        elif isinstance(rec, SlurmJob):
            jobs[rec.job_id] = _merge(jobs[rec.job_id], rec) if rec.job_id in jobs else rec
        elif isinstance(rec, SlurmNode):
            nodes[rec.name] = _merge(nodes[rec.name], rec) if rec.name in nodes else rec
        else:
            getattr(facts, _route(rec)).append(rec)
    facts.sample_store.add_samples(samples)
