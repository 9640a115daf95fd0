"""Host CPU utilisation and I/O wait, from whatever the snapshot holds: Slurm's CPULoad, node_exporter
samples (``node_cpu_seconds_total`` per mode in a range query, ``node_load1``) or a recorded PromQL
expression's result (a series named by its query, e.g. ``100 - avg by (instance)
(rate(node_cpu_seconds_total{mode="idle"}[5m])) * 100``).

Source: node_exporter's cpu collector (seconds per CPU and mode, a counter) and the usual PromQL for CPU
busy / iowait share.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # facts import the parsers, which read this module's field list
    from tools.facts import Facts

__all__ = ["cpu_busy_share", "cpu_busy_nodes", "iowait_nodes", "mode_shares", "load_per_cpu", "CREDENTIAL_TIME",
           "CLOCK_TROUBLE", "NIC_DRIVERS", "nic_driver"]

NIC_DRIVERS = ("mlx5_core", "mlx4_core", "bnxt_en", "bnxt_re", "ice", "irdma", "i40e", "ixgbe", "hfi1", "cxi_core",
               "cxi_ss1", "efa", "qede", "qedr", "ionic", "sfc", "mlx5_ib")
"""Linux drivers of InfiniBand / RoCE / Ethernet / Slingshot / Omni-Path adapters: a kernel line they print
about a PCI address is about a network adapter, not a GPU."""


def nic_driver(message: str) -> str | None:
    """The network-adapter driver that printed a kernel line (its first word, ``mlx5_core 0000:4b:00.0: …``)."""
    first = message.split(" ", 1)[0].rstrip(":")
    return first if first in NIC_DRIVERS else None

CREDENTIAL_TIME = ("expired credential", "rewound credential", "credential replayed")
"""MUNGE refusing a credential for its time (``Munge decode failed: Expired credential``): a clock is off by
more than the credential's TTL on the encoding or the decoding host."""
CLOCK_TROUBLE = ("can't synchronise", "no selectable sources", "system clock wrong", "clock unsynchronized",
                 "time reset", "skew is too large", "no servers can be used", "timed out waiting for reply")
"""A node's time service saying its clock is not synchronised (chronyd, ntpd, systemd-timesyncd, the kernel's
clocksource watchdog)."""

_BUSY = 0.9
_IOWAIT = 0.2


def mode_shares(facts: Facts) -> dict[str, dict[str, float]]:
    """node -> {mode: share of CPU time} from ``node_cpu_seconds_total`` counters that have two or more
    points per series (range query or two scrapes); empty when there are none. Computed once per Facts."""
    return facts.cached("cpu_mode_shares", lambda: _mode_shares(facts))


def _mode_shares(facts: Facts) -> dict[str, dict[str, float]]:
    deltas: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    series: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for s in facts.samples("node_cpu_seconds_total"):
        if s.node and "mode" in s.labels:
            series[(s.node, s.labels.get("cpu", ""), s.labels["mode"])].append((s.timestamp_s or 0.0, s.value))
    for (node, _cpu, mode), points in series.items():
        if len(points) >= 2:
            points.sort()
            deltas[node][mode] += max(points[-1][1] - points[0][1], 0.0)
    out: dict[str, dict[str, float]] = {}
    for node, modes in deltas.items():
        total = sum(modes.values())
        if total > 0:
            out[node] = {m: v / total for m, v in modes.items()}
    return out


def _query_series(facts: Facts) -> dict[str, float]:
    """node -> busy share from recorded CPU-utilisation expressions (series named by their query)."""
    out: dict[str, float] = {}
    for metric in sorted(facts.metric_names()):  # by name, not every sample (a max per node: order does not matter)
        name = metric.lower()
        if "cpu" not in name or not any(w in name for w in ("idle", "utili", "usage", "busy")):
            continue
        if name.startswith("node_cpu_seconds_total"):
            continue  # raw counters: mode_shares
        idle = "idle" in name and not name.replace(" ", "").startswith(("100-", "1-"))
        for s in facts.samples(metric):
            if not s.node:
                continue
            value = s.value / 100.0 if s.value > 1.5 else s.value
            out[s.node] = max(out.get(s.node, 0.0), 1.0 - value if idle else value)
    return out


def cpu_busy_share(facts: Facts, node: str) -> float | None:
    """Share of the node's CPU time in use (0..1), from the best source present; None when unknown."""
    shares = mode_shares(facts).get(node)
    if shares:
        return 1.0 - shares.get("idle", 0.0) - shares.get("iowait", 0.0)
    q = facts.cached("cpu_query_series", lambda: _query_series(facts)).get(node)
    if q is not None:
        return q
    n = facts.node(node)
    if n is not None and n.cpu_load is not None and n.cpus_alloc:
        return min(n.cpu_load / n.cpus_alloc, 1.0)
    load = _load1(facts).get(node)
    if load is not None and n is not None and n.cpus:
        return min(load / n.cpus, 1.0)
    return None


def _load1(facts: Facts) -> dict[str, float]:
    """node -> highest ``node_load1`` sample (node_exporter), indexed once per Facts."""
    def build() -> dict[str, float]:
        out: dict[str, float] = {}
        for s in facts.samples("node_load1"):
            if s.node:
                out[s.node] = max(out.get(s.node, 0.0), s.value)
        return out
    return facts.cached("node_load1_max", build)


def load_per_cpu(facts: Facts, node: str) -> float | None:
    """The node's run-queue length per CPU (load average / CPUs; above 1 the CPUs are oversubscribed), from
    Slurm's CPULoad (sinfo ``CPU_LOAD``, scontrol ``CPULoad``) or node_exporter ``node_load1``, over the
    node's CPU count (sinfo ``CPUS``, scontrol ``CPUTot``); None when either is unknown."""
    n = facts.node(node)
    if n is None or not n.cpus:
        return None
    load = n.cpu_load if n.cpu_load is not None else _load1(facts).get(node)
    return None if load is None else load / n.cpus


def cpu_busy_nodes(facts: Facts, nodes: Iterable[str], threshold: float = _BUSY) -> list[str]:
    """The nodes among ``nodes`` whose CPUs are saturated (busy share at or above ``threshold``)."""
    return [n for n in nodes if (share := cpu_busy_share(facts, n)) is not None and share >= threshold]


def iowait_nodes(facts: Facts, nodes: Iterable[str], threshold: float = _IOWAIT) -> list[str]:
    """The nodes among ``nodes`` whose CPUs spend at least ``threshold`` of their time in iowait."""
    shares = mode_shares(facts)
    return [n for n in nodes if shares.get(n, {}).get("iowait", 0.0) >= threshold]
