"""The investigation queue of ``warden serve``: grouped, bounded, worked by a fixed pool.

An alert storm must not become a diagnosis storm. Alerts that a runbook groups together (equal
``group_by`` labels) are one :class:`Job`; while a job waits, alerts of the same group merge into it
(its node set grows, its alert count too) instead of queueing again. At most ``max_queued`` jobs wait
and ``workers`` run at once; a new group beyond that is dropped and counted (Alertmanager will repeat
it at its ``repeat_interval``, and the cool-down of the nodes it named was not taken). So a burst of
1,000 alerts for 1,000 nodes under one rule is one job, one diagnosis.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from agent.runbooks.model import Runbook

__all__ = ["Job", "InvestigationQueue", "Offer", "MAX_NODES_PER_JOB"]

log = logging.getLogger("warden.serve")
MAX_NODES_PER_JOB = 10_000
Offer = Literal["queued", "merged", "dropped"]


@dataclass
class Job:
    """One grouped investigation waiting or running."""

    key: tuple[str, ...]
    runbook: Runbook
    alertname: str
    labels: dict[str, str]
    """The group's labels (its ``group_by`` values), for the question."""
    summary: str
    nodes: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)
    """Cool-down keys this job holds (released if it fails)."""
    alerts: int = 0
    queued_at: float = field(default_factory=time.monotonic)
    received_at: float = field(default_factory=time.time)
    """When the first alert of the job arrived (UNIX seconds)."""


class InvestigationQueue:
    """Grouped jobs, ``workers`` threads running ``run(job)``, at most ``max_queued`` waiting."""

    def __init__(self, run: Callable[[Job], None], *, workers: int = 2, max_queued: int = 64) -> None:
        self._run = run
        self._pending: OrderedDict[tuple[str, ...], Job] = OrderedDict()
        self._cv = threading.Condition()
        self._busy = 0
        self._closed = False
        self.max_queued = max_queued
        self.stats = {"queued": 0, "merged": 0, "dropped": 0, "started": 0, "done": 0, "failed": 0}
        self._threads = [threading.Thread(target=self._work, name=f"warden-serve-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def offer(self, job: Job) -> Offer:
        """Queue ``job``, merge it into a waiting job of the same key, or drop it when full."""
        with self._cv:
            waiting = self._pending.get(job.key)
            if waiting is not None:
                room = MAX_NODES_PER_JOB - len(waiting.nodes)
                have = set(waiting.nodes)
                waiting.nodes.extend([n for n in job.nodes if n not in have][:max(room, 0)])
                waiting.claimed.extend(job.claimed)
                waiting.alerts += job.alerts
                self.stats["merged"] += 1
                return "merged"
            if len(self._pending) >= self.max_queued or self._closed:
                self.stats["dropped"] += 1
                return "dropped"  # the intake logs one line per request, not one per group
            self._pending[job.key] = job
            self.stats["queued"] += 1
            self._cv.notify()
            return "queued"

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._closed:
                    self._cv.wait()
                if self._closed and not self._pending:
                    return
                _, job = self._pending.popitem(last=False)
                self._busy += 1
                self.stats["started"] += 1
            try:
                self._run(job)
                ok = True
            except Exception:  # noqa: BLE001 - one failed investigation must not stop the worker
                log.exception("investigation %s failed", job.key)
                ok = False
            with self._cv:
                self._busy -= 1
                self.stats["done" if ok else "failed"] += 1
                self._cv.notify_all()

    def waiting(self) -> int:
        """Jobs waiting (not yet started)."""
        with self._cv:
            return len(self._pending)

    def join(self, timeout_s: float = 60.0) -> bool:
        """Wait until nothing waits or runs; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the workers after the jobs already queued."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for t in self._threads:
            t.join(timeout_s)
