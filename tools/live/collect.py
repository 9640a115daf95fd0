"""Fetch a live snapshot through Warden's sources and hand it to a ReadContext.

Commands run through one *runner* (a LocalSource, or an SSHSource to a login node), Prometheus
through an HTTPSource, kernel-log commands over SSH on the node itself when configured so. A fetch
that fails is not fatal: a failed Slurm command is kept as the error text it printed (the
controller being unreachable is evidence), other failures are reported to ``on_error`` and skipped,
so one dead node's log does not hide the rest of the cluster.

Each phase's fetches run in parallel in a bounded pool (``bounds.parallel``); each has its own
timeout (``bounds.timeout_s``, enforced by the source, and here too: a fetch that has not answered
well after it is reported as failed and not waited for). Fetches through one SSH connection take
turns. Results keep the plan's order, so the facts are built the same way whatever finished first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timezone

from tools.errors import CommandError, HTTPSourceError, SourceError
from tools.facts import build_facts
from tools.live.guard import describe_guarded, guarded_failure
from tools.limits import bounded, input_limits
from tools.live.model import LivePlanInput
from tools.models.unreadable import Unreadable
from tools.parsers.slurm.client_error import SLURM_FORMATS, client_error
from tools.live.plan import display, first_requests, followup_requests
from tools.read.context import ProgressFn, ReadContext
from tools.sources.base import FetchRequest, RawArtifact, Source
from tools.sources.http import HTTPSource
from tools.sources.ssh import SSHSource

__all__ = ["LiveCollector", "live_context", "unreadable_of"]

ErrorFn = Callable[[FetchRequest, Exception], None]


class LiveCollector:
    """Collects one live snapshot.

    Args:
        cfg: how to reach the cluster (see tools.live.model).
        runner: the Source that runs Slurm, ``tail`` and Lustre commands (LocalSource or SSHSource).
        http: the Source for Prometheus (default: a new HTTPSource).
        slurm: the Source for the Slurm phase when it is not ``runner`` (e.g. a PyslurmSource).
        on_progress: called with a short line per fetch.
        on_error: called with each request that failed and was skipped.
    """

    def __init__(self, cfg: LivePlanInput, runner: Source, *, http: Source | None = None,
                 slurm: Source | None = None, on_progress: ProgressFn | None = None,
                 on_error: ErrorFn | None = None) -> None:
        self.cfg = cfg
        self.runner = runner
        self.http = http or HTTPSource()
        self.slurm = slurm or runner
        self.on_progress = on_progress
        self.on_error = on_error
        self.captured_at = datetime.now(timezone.utc)
        self.failures: list[tuple[FetchRequest, str]] = []
        self.cuts: list[tuple[FetchRequest, str]] = []
        """Fetches read only in part (tools/limits.py caps), with what was cut."""
        self.timed: list[tuple[FetchRequest, str]] = []
        """Fetches not made because the run's time limit was reached (``collect(stop=...)``)."""
        self._node_ssh: dict[str, SSHSource] = {}
        self._turns: dict[int, threading.Lock] = {}
        self._failures_lock = threading.Lock()

    def _source_for(self, req: FetchRequest) -> Source:
        if req.url:
            return self.http
        if req.format == "kernel-log" and self.cfg.kernel_logs.kind == "command" and req.node:
            host = self.cfg.kernel_logs.host.replace("{node}", req.node)
            if host not in self._node_ssh:
                s = self.cfg.slurm
                self._node_ssh[host] = SSHSource(host, user=s.user, port=s.port, key_filename=s.key_file)
            return self._node_ssh[host]
        return self.runner

    def _fetch(self, req: FetchRequest, source: Source) -> RawArtifact | None:
        if self.on_progress:
            self.on_progress(f"fetching {display(req)}")
        try:
            art = source.fetch(req)
        except CommandError as e:
            if (e.returncode is not None and req.format in SLURM_FORMATS
                    and client_error(e.stderr, path=req.path or "", format=req.format) is not None):
                # Keep what the client printed (e.g. "Unable to contact slurm controller"): parsers
                # turn it into a SlurmClientError, which is evidence.
                return RawArtifact(format=req.format, data=e.stderr.encode(), path=req.path or display(req),
                                   command=display(req), node=req.node, job=req.job)
            if describe_guarded(e.argv):  # a checked read: say why, not the checking script's text
                self._failed(req, guarded_failure(e))
                return None
            self._failed(req, e)
            return None
        except (HTTPSourceError, SourceError) as e:
            self._failed(req, e)
            return None
        try:  # the same caps as a replayed file: one output cannot cost minutes to parse
            data, cut = bounded(art.format, art.data, len(art.data), input_limits())
        except ValueError as e:
            self._failed(req, str(e))
            return None
        if cut:
            with self._failures_lock:
                self.cuts.append((req, cut))
        return art.model_copy(update={"path": req.path or art.path, "data": data,
                                      "command": display(req) if req.argv else art.command})

    def _failed(self, req: FetchRequest, e: Exception | str) -> None:
        with self._failures_lock:
            self.failures.append((req, str(e)))
        if self.on_error:
            self.on_error(req, e if isinstance(e, Exception) else SourceError(str(e)))

    def _turn(self, source: Source) -> threading.Lock | None:
        """One lock per SSH connection or other stateful client (a Fabric connection runs one command
        at a time); None for sources safe to use from several threads (local processes, HTTP)."""
        if getattr(source, "name", "") in ("local", "http", "snapshot"):
            return None
        return self._turns.setdefault(id(source), threading.Lock())

    def _fetch_turn(self, req: FetchRequest, source: Source, turn: threading.Lock | None) -> RawArtifact | None:
        if turn is None:
            return self._fetch(req, source)
        with turn:
            return self._fetch(req, source)

    def _phase(self, reqs: list[tuple[FetchRequest, Source]]) -> list[RawArtifact]:
        """Fetch ``reqs`` in the bounded pool; the artifacts in request order."""
        if not reqs:
            return []
        pool = ThreadPoolExecutor(max_workers=min(self.cfg.bounds.parallel, len(reqs)), thread_name_prefix="warden-fetch")
        try:
            futures: list[Future[RawArtifact | None]] = [
                pool.submit(self._fetch_turn, r, s, self._turn(s)) for r, s in reqs]
            out: list[RawArtifact] = []
            for (req, _), fut in zip(reqs, futures):
                # Queued fetches wait their turn; the source enforces each fetch's own timeout, this
                # only bounds the wait for one that hangs past it.
                wait = req.timeout_s * (1 + len(reqs) / self.cfg.bounds.parallel) + 5
                try:
                    art = fut.result(timeout=wait)
                except FutureTimeout:
                    self._failed(req, f"{display(req)}: no answer after {wait:.0f} s")
                    continue
                if art is not None:
                    out.append(art)
            return out
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def collect(self, stop: Callable[[], str | None] | None = None) -> list[RawArtifact]:
        """Fetch phase one (Slurm and the fleet-wide GPU queries), parse it, then phase two
        (evidence for the nodes and jobs that matter), each phase in parallel.

        Args:
            stop: asked before phase two; a reason (the run's time limit) skips it, each of its
                fetches recorded in ``timed`` with the reason.
        """
        first = self._phase([(r, self.http if r.url else self.slurm) for r in first_requests(self.cfg, self.captured_at)])
        view = build_facts(first, captured_at=self.captured_at, cluster=self.cfg.cluster)
        refused: list[tuple[FetchRequest, str]] = []
        reqs = followup_requests(self.cfg, view, self.captured_at, refused)
        for req, why in refused:  # job logs Warden will not read: unreadable evidence, never fetched
            self._failed(req, why)
        why = stop() if stop is not None else None
        if why:  # the run's time is up: what phase one read is diagnosed, the rest listed
            self.timed.extend((req, why) for req in reqs)
            return first
        second = self._phase([(r, self._source_for(r)) for r in reqs])  # sources made here, not in threads
        return first + second

    def close(self) -> None:
        """Close SSH connections opened to nodes."""
        for s in self._node_ssh.values():
            s.close()


def unreadable_of(collector: LiveCollector) -> list[Unreadable]:
    """The collector's failed fetches, those read only in part and those the time limit skipped, as
    unreadable evidence (command or URL, format, node or job, why)."""
    return [Unreadable(kind=kind, command=display(req), format=req.format, node=req.node, job=req.job,
                       reason=why[:300])
            for kind, pairs in (("fetch", collector.failures), ("cut", collector.cuts), ("time", collector.timed))
            for req, why in pairs]


def live_context(collector: LiveCollector) -> ReadContext:
    """A ReadContext whose evidence is fetched live (once, on first use)."""
    def collect() -> Iterator[RawArtifact]:
        try:
            yield from collector.collect(stop=ctx.stop_reading)  # the run's time limit, when the agent set one
        finally:
            collector.close()

    ctx = ReadContext(collect, captured_at=collector.captured_at, cluster=collector.cfg.cluster,
                      on_progress=collector.on_progress, checks=[c.model_dump() for c in collector.cfg.checks],
                      unreadable=lambda: unreadable_of(collector))
    return ctx
