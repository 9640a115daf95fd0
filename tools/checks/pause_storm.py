"""check_pause_storm: one host flooding a lossless RoCE fabric with PFC pause frames.

On RoCE with priority flow control, a host that stops draining its receive queues (a hung driver, a
NIC stuck behind PCIe errors) keeps asserting pause; the switch stops sending to it and, hop by hop, the
pause spreads, so jobs on *other* nodes slow down and their NCCL/verbs connections time out (``status=12``
retry exceeded, ``status=5`` flush). ConnectX NICs detect this and trip their pause-storm prevention,
counted by ethtool as ``tx_pause_storm_error_events`` (node_exporter's ethtool collector:
``node_ethtool_tx_pause_storm_error_events``); the stalled host's kernel logs TX timeouts. The host that
sends the pauses is the culprit; the jobs elsewhere whose transports failed are its victims.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from tools.checks.base import CheckConfig, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_state
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.models.logs import NcclRemoteErrorEvent, NetEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["PauseStormConfig", "check_pause_storm"]

_TX_STALL = ("tx timeout", "transmit queue", "netdev watchdog")


class PauseStormConfig(CheckConfig):
    """When a host's pause frames are a storm."""

    storm_counter: str = "pause_storm_error_events"
    """Fragment of the ethtool counter name of the NIC's pause-storm prevention."""
    pause_rate_factor: float = 10.0
    """A host sending pause frames this many times the fleet median (per-priority ``*_pause`` rates)."""
    min_pause_rate: float = 1000.0
    """... and at least this many per second."""


def _storms(facts: Facts, cfg: PauseStormConfig) -> dict[str, list[Evidence]]:
    out: dict[str, list[Evidence]] = defaultdict(list)
    for name in facts.metric_names():
        if cfg.storm_counter in name:
            for s in facts.samples(name):
                if s.node and s.value > 0:
                    out[s.node].append(Evidence(text=f"{name}{{device={s.labels.get('device', '?')}}} = {s.value:g} on "
                                                     f"{s.node}", metric=name, value=s.value, unit="count"))
    rates: dict[str, float] = defaultdict(float)
    metric = ""
    for name in facts.metric_names():
        if "pause" in name and cfg.storm_counter not in name and "rate(" in name.replace(" ", ""):
            metric = name
            for s in facts.samples(name):
                if s.node:
                    rates[s.node] = max(rates[s.node], s.value)
    if len(rates) >= 3:
        for node, r in rates.items():
            others = median(v for n, v in rates.items() if n != node)
            if r >= cfg.min_pause_rate and r >= cfg.pause_rate_factor * max(others, 1.0):
                out[node].append(Evidence(text=f"{metric} = {r:,.0f}/s on {node} vs fleet median {others:,.0f}/s",
                                          metric=metric, value=round(r, 1), unit="1/s"))
    return out


def check_pause_storm(facts: Facts, cfg: PauseStormConfig) -> list[Finding]:
    """interconnect_fault for each host whose NIC tripped its pause-storm prevention or sends pause frames far
    above the fleet (TX timeouts in its kernel log corroborate); victims are the jobs whose NCCL/verbs
    transports failed meanwhile, wherever they ran, resubmitted without the host.

    Sources: Prometheus node_exporter ethtool series (query API JSON), kernel logs (mlx5 TX timeouts,
    NETDEV WATCHDOG), job-log NCCL remote errors and transport events.
    """
    storms = _storms(facts, cfg)
    if not storms:
        return []
    broken = sorted({e.job for e in facts.job_events_of("nccl_remote_error", "net_event")
                     if e.job and isinstance(e, (NcclRemoteErrorEvent, NetEvent))})
    findings: list[Finding] = []
    for node, evidence in sorted(storms.items()):
        stalls = [e for e in facts.kernel_events_on(node) if any(w in e.message.lower() for w in _TX_STALL)]
        ref = node_ref(facts, node)
        hit = [j for j in broken if job_state(facts, j) not in ("COMPLETED",)]
        culprits, follow = victims(facts, ref, f"transport failures during a pause storm from {node}", jobs=hit)
        sample = [log_evidence(e) for e in facts.job_events_of("nccl_remote_error", "net_event") if e.job in hit][:2]
        findings.append(Finding(
            check="pause_storm", root_cause="interconnect_fault",
            message=f"{node} floods the RoCE fabric with PFC pause frames ({evidence[0].text})"
                    + (f"; its NIC stalled (TX timeouts)" if stalls else "")
                    + (f"; {len(hit)} job(s) elsewhere lost their NCCL/verbs connections meanwhile" if hit else ""),
            culprits=[ref.culprit, *culprits],
            evidence=(evidence[:2] + [kernel_evidence(e) for e in stalls[:2]] + sample)[:6],
            strength="direct", confidence=confidence("direct", corroborated=bool(stalls) or len(evidence) >= 2),
            suggested_actions=take_out_of_service(facts, ref, "pause storm: host floods the fabric with PFC pauses")
            + follow,
        ))
    return findings
