"""Per-node GPU metric summaries and peer groups, shared by the GPU performance checks."""

from __future__ import annotations

from bisect import bisect_left

from collections import defaultdict
from collections.abc import Iterator
from statistics import median

from tools.facts import Facts
from tools.knowledge.dcgm import UTIL_FIELDS
from tools.models.findings import Evidence
from tools.models.gpu_columns import SeriesKey

__all__ = ["PeerMedians", "node_means", "node_values", "sample_rows", "utilisation", "peer_groups", "peer_median", "metric_evidence", "UTIL_METRICS", "SM_CLOCK", "TEMP",
           "gpu_activity", "ACTIVITY_METRICS"]

UTIL_METRICS = UTIL_FIELDS
"""Utilisation fields in order of preference; PROF ratios (0..1) are scaled to percent."""
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
ACTIVITY_METRICS = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
"""Profiling ratios that tell a busy GPU from a slow one; DCGM_FI_DEV_GPU_UTIL reads 100 % on both (it counts
time with any kernel running, not how much of the GPU works)."""
TEMP = "DCGM_FI_DEV_GPU_TEMP"


def sample_rows(facts: Facts, *names: str) -> Iterator[tuple[SeriesKey, float]]:
    """(series key (labels, node, gpu), value) of every sample of these metrics, in ``facts.samples(*names)``
    order, read from the columns (no MetricSample made)."""
    for b in facts.sample_blocks(*names):
        yield from zip(b.keys, b.values)


def node_values(facts: Facts, metric: str) -> dict[str, list[float]]:
    """{node: values of ``metric`` there, in file order} (samples without a node left out); built once per metric."""
    def build() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for b in facts.sample_blocks(metric):
            if b.node:
                out.setdefault(b.node, []).extend(b.values)
            elif b.node is None:
                for k, v in zip(b.keys, b.values):
                    if k[1]:
                        out.setdefault(k[1], []).append(v)
        return out

    return facts.cached(f"node_values:{metric}", build)


def node_means(facts: Facts, metric: str) -> dict[str, float]:
    """Mean of ``metric`` over each node's GPUs (and time points), in the metric's unit.

    PROF fields that DCGM reports as ratios are returned in percent. Computed once per metric and shared by
    the checks that read it (read-only).
    """
    def build() -> dict[str, float]:
        vals: dict[str, list[float]] = {}
        prof = metric.startswith("DCGM_FI_PROF_")
        for b in facts.sample_blocks(metric):  # columns: a block of one node's GPUs is added at once
            values = [v * 100.0 for v in b.values] if prof else b.values
            if b.node:
                vals.setdefault(b.node, []).extend(values)
            elif b.node is None:
                for k, v in zip(b.keys, values):
                    if k[1]:
                        vals.setdefault(k[1], []).append(v)
        return {n: sum(v) / len(v) for n, v in vals.items() if v}  # statistics.mean is ~10x slower on floats

    return facts.cached(f"node_means:{metric}", build)


def utilisation(facts: Facts) -> tuple[str | None, dict[str, float]]:
    """The first utilisation field present and its per-node means (percent)."""
    for m in UTIL_METRICS:
        means = node_means(facts, m)
        if means:
            return m, means
    return None, {}


def peer_groups(facts: Facts, nodes_with_data: set[str]) -> list[list[str]]:
    """Groups of nodes that should perform alike: the nodes of each running multi-node job.

    Without any running job that spans nodes with data, all nodes with data form one group, but
    only when the scheduler view is absent (idle nodes are not stragglers).
    """
    groups: list[list[str]] = []
    for j in facts.jobs:
        if (j.state or "") == "RUNNING":
            members = [n for n in j.nodes if n in nodes_with_data]
            if len(members) >= 3 and members not in groups:
                groups.append(members)
    if not groups and not facts.jobs and len(nodes_with_data) >= 3:
        groups.append(sorted(nodes_with_data))
    return groups


def peer_median(values: dict[str, float], group: list[str], exclude: str) -> float | None:
    """Median of ``values`` over ``group`` without ``exclude``."""
    return PeerMedians(values, group).without(exclude)


class PeerMedians:
    """The median of ``values`` over a peer group with one member left out, for every member in O(log n) each
    (sorted once): a 10,000-node group is not re-scanned per node. Same figure as ``statistics.median`` of the
    others (the two middle values' mean for an even count)."""

    def __init__(self, values: dict[str, float], group: list[str]) -> None:
        members = dict.fromkeys(n for n in group if n in values)
        self._values = values
        self._members = members
        self._sorted = sorted(values[n] for n in members)

    def without(self, exclude: str) -> float | None:
        """The median of the others (None when no other member has a value)."""
        s = self._sorted
        skip = bisect_left(s, self._values[exclude]) if exclude in self._members else len(s)
        k = len(s) - (skip < len(s))
        if k == 0:
            return None

        def at(i: int) -> float:
            return s[i] if i < skip else s[i + 1]
        return at(k // 2) if k % 2 else (at(k // 2 - 1) + at(k // 2)) / 2


def metric_evidence(metric: str, node: str, value: float, peers: float | None, unit: str) -> Evidence:
    """Evidence for a node's metric against its peers' median."""
    vs = f" vs peer median {peers:.0f} {unit}" if peers is not None else ""
    return Evidence(text=f"{metric} mean on {node} = {value:.0f} {unit}{vs}", metric=metric, value=round(value, 2), unit=unit)


def gpu_activity(facts: Facts) -> tuple[str | None, dict[tuple[str, str], float]]:
    """The first profiling activity field present and its mean per (node, GPU index), in percent."""
    for m in ACTIVITY_METRICS:
        blocks = facts.sample_blocks(m)
        pairs = [(k[1], k[2]) for b in blocks for k in b.keys]
        scaled = [0 + v * 100.0 for b in blocks for v in b.values]  # 0 + : what sum() of one point gives (-0.0 -> 0.0)
        if all(n and g is not None for n, g in pairs):
            once = dict(zip(pairs, scaled))
            if len(once) == len(pairs):  # one point per GPU (one scrape per node): its mean is that point
                if once:
                    return m, once
                continue
        vals: dict[tuple[str, str], list[float]] = defaultdict(list)
        for (n, g), v in zip(pairs, scaled):
            if n and g is not None:
                vals[(n, g)].append(v)
        if vals:  # sum/len, not statistics.mean (exact Fractions, ~10x slower): the same for one or two points
            return m, {k: sum(v) / len(v) for k, v in vals.items()}
    return None, {}
