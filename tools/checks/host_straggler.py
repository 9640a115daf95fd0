"""check_host_straggler: one node of a job whose CPUs run far slower than its peers' (node_exporter).

A synchronous training job runs at the pace of its slowest rank. When the slowness is on the host side —
data loading, decoding, the Python loop — the GPUs show nothing (no clock-event reason, no throttle); the
node's CPUs do: a cpufreq governor left on ``powersave`` after a BIOS reset or an image change, a BIOS power
profile capping the clock, both show in node_exporter's cpufreq collector
(``node_cpu_scaling_frequency_hertz``, ``node_cpu_frequency_hertz``, ``node_cpu_scaling_governor``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean, median

from tools.checks.base import CheckConfig, job_culprits
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["HostStragglerConfig", "check_host_straggler", "CPU_FREQ_METRICS"]

CPU_FREQ_METRICS = ("node_cpu_scaling_frequency_hertz", "node_cpu_frequency_hertz")
"""node_exporter cpufreq gauges (Hz), per CPU; a query's aggregate of them keeps the name in its text."""
GOVERNOR_METRIC = "node_cpu_scaling_governor"
"""node_exporter's governor info series: value 1 on the governor in force, label ``governor``."""


class HostStragglerConfig(CheckConfig):
    """Thresholds, as the node's CPU clock over its job peers' median."""

    freq_ratio: float = 0.6
    min_peers: int = 1


def _freqs(facts: Facts) -> dict[str, float]:
    vals: dict[str, list[float]] = defaultdict(list)
    for name in facts.metric_names():
        if any(m in name for m in CPU_FREQ_METRICS):
            for s in facts.samples(name):
                if s.node and s.value > 0:
                    vals[s.node].append(s.value)
    return {n: mean(v) for n, v in vals.items()}


def _governors(facts: Facts) -> dict[str, str]:
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for s in facts.samples(GOVERNOR_METRIC):
        if s.node and s.value == 1 and s.labels.get("governor"):
            by[s.node][s.labels["governor"]] += 1
    return {n: c.most_common(1)[0][0] for n, c in by.items()}


def check_host_straggler(facts: Facts, cfg: HostStragglerConfig) -> list[Finding]:
    """straggler_node for a node of a running multi-node job whose mean CPU clock is under ``freq_ratio``
    of the other nodes' median, or whose cpufreq governor differs from the one all its peers run while its
    clock is lower (the governor alone, with no clock reading, is not enough).

    Sources: Prometheus node_exporter cpufreq series (query API JSON or exposition text), squeue/scontrol
    allocations for the job's peers.
    """
    freqs, governors = _freqs(facts), _governors(facts)
    if not freqs:
        return []
    findings: list[Finding] = []
    seen: set[str] = set()
    for job in facts.jobs:
        if (job.state or "") != "RUNNING":
            continue
        members = [n for n in job.nodes if n in freqs]
        if len(members) < cfg.min_peers + 1:
            continue
        for node in members:
            peers = [freqs[n] for n in members if n != node]
            peer = median(peers)
            if node in seen or not peer or freqs[node] >= cfg.freq_ratio * peer:
                continue
            peer_gov = Counter(governors[n] for n in members if n != node and n in governors).most_common(1)
            gov = governors.get(node)
            evidence = [Evidence(text=f"CPU clock on {node} {freqs[node] / 1e9:.2f} GHz vs peer median {peer / 1e9:.2f} GHz "
                                      f"(ratio {freqs[node] / peer:.2f}, threshold {cfg.freq_ratio})",
                                 metric="node_cpu_scaling_frequency_hertz", value=round(freqs[node]), unit="Hz")]
            why = f"CPU clock {freqs[node] / 1e9:.2f} GHz vs peer median {peer / 1e9:.2f} GHz"
            if gov and peer_gov and gov != peer_gov[0][0]:
                evidence.append(Evidence(text=f"cpufreq governor on {node} is {gov}; its peers run {peer_gov[0][0]}",
                                         metric=GOVERNOR_METRIC, value=1, unit="info"))
                why += f", governor {gov} where its peers run {peer_gov[0][0]}"
            seen.add(node)
            ref = node_ref(facts, node)
            jobs = affected_jobs(facts, [node], since=facts.captured_at)
            findings.append(Finding(
                check="host_straggler", root_cause="straggler_node",
                message=f"{node} holds back its job peers from the host side: {why}",
                culprits=[ref.culprit, *job_culprits(jobs)], evidence=evidence,
                strength="heuristic", confidence=confidence("heuristic", corroborated=len(evidence) >= 2),
                suggested_actions=take_out_of_service(facts, ref, f"host CPUs slow ({why})"),
            ))
    return findings
