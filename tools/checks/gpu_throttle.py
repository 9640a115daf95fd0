"""check_gpu_thermal_throttle: clocks held down by thermal or power limits (DCGM clock-event reasons)."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, job_culprits
from tools.checks.gpu_peers import SM_CLOCK, TEMP, metric_evidence, node_means, sample_rows
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.dcgm import CLOCK_EVENT_FIELDS
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["ThrottleConfig", "check_gpu_thermal_throttle", "REASON_BITS"]

REASON_BITS = {
    0x8: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake slowdown",
}
"""NVML clock-event reason bits that mean the hardware is holding clocks down (0x4, the SW power
cap, is normal under full load and is not counted alone)."""

_REASON_FIELDS = CLOCK_EVENT_FIELDS
_ANY_REASON = sum(REASON_BITS)


class ThrottleConfig(CheckConfig):
    """Thresholds for throttling."""

    hot_temp_c: float = 85.0
    low_power_limit_ratio: float = 0.85
    """A node whose GPUs' power limit is below this share of its peers' median is power-capped by setting."""
    slow_clock_ratio: float = 0.9
    """SM clock below this share of the peers' median makes a node's SW power cap an outlier, not load."""


_SW_POWER_CAP = 0x4
_POWER_LIMIT_FIELDS = ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")


def _power_cap_outliers(facts: Facts, cfg: ThrottleConfig, clocks: dict[str, float]) -> dict[str, str]:
    """node -> reason for nodes held down by power *settings*: a power limit well below the peers'
    (``nvidia-smi -pl`` left low), or the SW power-cap bit on a node whose peers, under the same load, run
    without it and faster. The SW power cap alone is normal at full load and is not counted."""
    out: dict[str, str] = {}
    for field in _POWER_LIMIT_FIELDS:
        limits = node_means(facts, field)
        if len(limits) >= 2:
            median = sorted(limits.values())[len(limits) // 2]
            for node, watts in limits.items():
                if median and watts < cfg.low_power_limit_ratio * median:
                    out[node] = f"power limit {watts:.0f} W (peers {median:.0f} W)"
            break
    capped: dict[str, int] = {}
    for b in facts.sample_blocks(*_REASON_FIELDS):
        if b.node:  # one node's GPUs: counted at once (all 0.0, the usual page, counts nothing)
            capped[b.node] = capped.get(b.node, 0) + (
                sum(1 for v in b.values if int(v) & _SW_POWER_CAP) if any(b.values) else 0)
            continue
        for k, v in zip(b.keys, b.values):
            if k[1]:
                capped[k[1]] = capped.get(k[1], 0) + (1 if int(v) & _SW_POWER_CAP else 0)
    # The uncapped peers' median clock is the same for every capped node: computed once, not per node
    # (that was O(capped x free), a quarter of the CPU at 10,000 nodes).
    peers = sorted(clocks[n] for n, k in capped.items() if k == 0 and n in clocks)
    peer = peers[len(peers) // 2] if peers else None
    for node, k in capped.items():
        if k and peer and node in clocks and node not in out:
            if clocks[node] < cfg.slow_clock_ratio * peer:
                out[node] = "SW power cap on this node only"
    return out


def check_gpu_thermal_throttle(facts: Facts, cfg: ThrottleConfig) -> list[Finding]:
    """thermal_power_throttle per node whose GPUs report thermal / HW-slowdown / power-brake clock
    event reasons, or run at or above ``hot_temp_c``.

    Sources: DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (or _CLOCKS_EVENT_REASONS) bitmask, DCGM_FI_DEV_GPU_TEMP,
    DCGM_FI_DEV_SM_CLOCK samples; nvidia-smi -q clock event reasons when recorded.
    """
    reasons: dict[str, set[str]] = defaultdict(set)
    gpus: dict[str, set[str]] = defaultdict(set)
    for b in facts.sample_blocks(*_REASON_FIELDS):
        if b.node and not any(int(v) & _ANY_REASON for v in dict.fromkeys(b.values)):
            continue  # one node's GPUs, none with a reason (int() of each distinct value in file order: a value int() refuses raises as it did per sample)
        for k, v in zip(b.keys, b.values):
            if not k[1]:
                continue
            bits = int(v)
            if not bits & _ANY_REASON:
                continue
            for bit, label in REASON_BITS.items():
                if bits & bit:
                    reasons[k[1]].add(label)
                    gpus[k[1]].add(k[2] or "?")
    labels = {label.lower(): label for label in REASON_BITS.values()}
    hot_max: dict[str, float] = {}
    for g in facts.gpu_status:  # nvidia-smi -q reasons by name; nvidia-smi CSV / -q temperatures
        if not g.node:
            continue
        for r in g.clocks_event_reasons:
            if r.lower() in labels:
                reasons[g.node].add(labels[r.lower()])
                gpus[g.node].add(str(g.index) if g.index is not None else "?")
        if g.temperature_c is not None and g.temperature_c >= cfg.hot_temp_c:
            hot_max[g.node] = max(hot_max.get(g.node, 0.0), g.temperature_c)
    temps = node_means(facts, TEMP)
    hot = cfg.hot_temp_c
    for k, v in sample_rows(facts, TEMP):
        if k[1] and v >= hot:
            hot_max[k[1]] = max(hot_max.get(k[1], 0.0), v)
    clocks = node_means(facts, SM_CLOCK)
    power_outliers = _power_cap_outliers(facts, cfg, clocks)
    for node, why in power_outliers.items():
        reasons[node].add(why)
    findings: list[Finding] = []
    for node in sorted(set(reasons) | set(hot_max)):
        evidence: list[Evidence] = []
        if reasons.get(node):
            evidence.append(
                Evidence(
                    text=f"clock event reasons on {node} GPU(s) {', '.join(sorted(gpus[node]))}: "
                    + ", ".join(sorted(reasons[node])),
                    metric=_REASON_FIELDS[0],
                )
            )
        if node in hot_max:
            evidence.append(metric_evidence(TEMP, node, hot_max[node], None, "C"))
        if node in clocks:
            others = [v for n, v in clocks.items() if n != node]
            peer = sorted(others)[len(others) // 2] if others else None
            evidence.append(metric_evidence(SM_CLOCK, node, clocks[node], peer, "MHz"))
        # Metrics describe now: the jobs slowed are those still there, not ones that ended earlier.
        ref = node_ref(facts, node)
        if ref.platform == "kubernetes":  # the node's GPU pods run slow there (victims names them; none is moved)
            slowed = victims(facts, ref, "slowed by GPU throttling")[0]
        else:
            slowed = job_culprits(affected_jobs(facts, [node], since=facts.captured_at))
        findings.append(
            Finding(
                check="gpu_thermal_throttle",
                root_cause="thermal_power_throttle",
                message=f"{node}: GPU clocks held down ({', '.join(sorted(reasons[node])) or 'temperature'}; "
                f"max temp {hot_max.get(node, temps.get(node, 0)):.0f} C, threshold {cfg.hot_temp_c:.0f} C)",
                culprits=[ref.culprit, *slowed],
                evidence=evidence,
                strength="direct" if reasons.get(node) else "heuristic",
                confidence=confidence("direct" if reasons.get(node) else "heuristic", corroborated=node in hot_max),
                # Heat alone (no clock-event reason set) is not proof of throttling: look before draining.
                suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node)]
                + (take_out_of_service(facts, ref, "GPU thermal/power throttling")
                   if reasons.get(node) else []),
            )
        )
    return findings
