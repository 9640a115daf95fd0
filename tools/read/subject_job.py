"""What the evidence says about one job the question names: which of its nodes were read, and how long
its log has been silent. Shared by the evidence-coverage read tool.

A Prometheus ``up`` series is not evidence about a node's health; ``up == 0`` says its exporter did not
answer, so what was read about that node may be stale or missing.
"""

from __future__ import annotations

from tools.facts import Facts
from tools.facts.queries import job_nodes

__all__ = ["NODE_FORMATS", "unread_nodes", "silent_minutes", "exporter_down"]

NODE_FORMATS = frozenset({"kernel-log", "dcgm-prometheus-text", "nvidia-smi-csv", "nvidia-smi-q", "dcgmi-diag-json"})
"""Formats whose files are about one node's own health."""


def _exporters_down(facts: Facts) -> set[str]:
    """Nodes whose exporter answered ``up == 0`` (built once; only the ``up`` series are read: the set of nodes
    with node-level evidence, which this once built beside it from every sample block, artifact and kernel event
    of the snapshot, was read by nobody)."""
    def build() -> set[str]:
        down: set[str] = set()
        for b in facts.sample_blocks("up"):  # columns: no MetricSample made per sample
            down.update(k[1] for k, v in zip(b.keys, b.values) if k[1] and v == 0)
        return down
    return facts.cached("exporters_down", build)


def unread_nodes(facts: Facts, job_id: str) -> list[str]:
    """The job's nodes (at most 16) whose metrics exporter answered Prometheus with ``up == 0``: their
    GPU and host metrics are missing or stale, so nothing can be concluded about them. (Files that could
    not be read or fetched are already in ``Facts.unreadable``; a node nobody collected is not a gap.)"""
    down = _exporters_down(facts)
    return [n for n in job_nodes(facts, job_id) if n in down][:16]


def exporter_down(facts: Facts, node: str) -> bool:
    """Prometheus answered ``up == 0`` for the node's metrics exporter."""
    return node in _exporters_down(facts)


def silent_minutes(facts: Facts, job_id: str) -> float | None:
    """Minutes between the newest timestamped line of the job's logs and the capture; None when its logs
    print no times (or none were read), when that log went on printing training progress without times, or
    when the silence is within one and a half of the log's own reporting interval (JobLogSummary.interval_s)."""
    logs = [s for s in facts.job_logs if s.job == job_id and s.last_timestamp is not None]
    if not logs:
        return None
    latest = max(logs, key=lambda s: s.last_timestamp)  # type: ignore[arg-type, return-value]
    if latest.untimed_progress_after >= 2:
        return None  # it kept printing progress without times after its last timestamp
    newest = latest.last_timestamp
    assert newest is not None
    when = facts.captured_at
    if newest.tzinfo is None and when.tzinfo is not None:
        when = when.replace(tzinfo=None)
    elif newest.tzinfo is not None and when.tzinfo is None:
        newest = newest.replace(tzinfo=None)
    silent = max((when - newest).total_seconds() / 60, 0.0)
    if latest.interval_s is not None and silent * 60 < 1.5 * latest.interval_s:
        return None  # a job that reports hourly is not silent 40 minutes after its last report
    return silent
