"""check_controller_probe_noise: slurmctld's ``slurm_receive_msg [ip:port]: Zero Bytes were transmitted or
received`` errors that come from a load balancer's or monitor's TCP health check — a few peers connecting to
the controller's port on a fixed cadence and closing without a message — while slurmctld answers. Said as
healthy so the lines do not leave the answer inconclusive; the fix, if any, is the probe's (an HTTP/Slurm-aware
check, or the probe source filtered from the alert), not the controller.

A real communication problem looks different: many peers (the compute nodes), irregular, with failed client
commands or sdiag's agent queue growing. Sources: slurmctld's syslog/journal lines on its host; recorded
squeue/sinfo/sdiag output (the controller answered); keepalived/HAProxy lines naming the port (corroboration).
"""

from __future__ import annotations

import re
from collections import defaultdict
from statistics import median

from tools.checks.base import CheckConfig, kernel_evidence
from tools.checks.unexplained import node_signal
from tools.facts import Facts
from tools.facts.queries import kernel_event_time
from tools.models.findings import Evidence, Finding

__all__ = ["ControllerProbeConfig", "check_controller_probe_noise"]

_ZERO = re.compile(r"slurm_receive_msg(?:_and_forward)?:? \[(?P<ip>[\d.]+|[0-9a-f:]+)\]?:\d+\]?: Zero Bytes were transmitted",
                   re.IGNORECASE)
_PROBERS = ("keepalived", "haproxy", "healthcheck", "tcp_check", "nagios", "check_tcp", "consul", "blackbox")


class ControllerProbeConfig(CheckConfig):
    """What a probe's cadence looks like."""

    max_peers: int = 3
    """A health check comes from one or a few hosts (the load balancer pair); clients are many."""
    min_lines: int = 4
    regular_within: float = 0.25
    """Each peer's gaps between lines stay within this fraction of their median: a timer, not traffic."""


def check_controller_probe_noise(facts: Facts, cfg: ControllerProbeConfig) -> list[Finding]:
    """healthy per controller host whose only error-level lines are Zero Bytes receive errors from at most
    ``max_peers`` peers at a regular cadence, while the recorded Slurm commands answered."""
    if facts.slurm_errors or not any(a.format.startswith(("squeue", "sinfo", "sdiag", "scontrol"))
                                     for a in facts.artifacts):
        return []  # a command failed, or nothing shows the controller answering: not noise to dismiss
    by_host: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for ev in facts.kernel_events_of("slurm_node", "generic"):
        if ev.node and (m := _ZERO.search(ev.message)) and "slurmctld" in ev.message[:60] + str(getattr(ev, "source", "")):
            by_host[ev.node][m["ip"]].append(ev)
    findings: list[Finding] = []
    for host, peers in sorted(by_host.items()):
        lines = [e for evs in peers.values() for e in evs]
        if len(peers) > cfg.max_peers or len(lines) < cfg.min_lines or not all(
                _regular(facts, evs, cfg.regular_within) for evs in peers.values()):
            continue
        noise = {id(e) for e in lines}
        if any(node_signal(ev) and id(ev) not in noise for ev in facts.kernel_events_on(host)):
            continue  # other errors on the host: naming it healthy would hide them
        probers = [ev for ev in facts.kernel_events_on(host) if any(w in ev.message.lower() for w in _PROBERS)]
        gap = median(g for evs in peers.values() for g in _gaps(facts, evs))
        findings.append(Finding(
            check="controller_probe_noise", root_cause="healthy",
            message=f"slurmctld on {host} logs {len(lines)} 'Zero Bytes were transmitted or received' errors, all from "
                    f"{', '.join(sorted(peers))} every {gap:.0f} s, while the recorded Slurm commands answered: a TCP "
                    "health check connecting and closing without a message, not a controller fault"
                    + (" (the probe is configured on this host)" if probers else ""),
            culprits=[f"node:{host}"], strength="state", confidence=0.3,
            evidence=[kernel_evidence(lines[0]), *[kernel_evidence(e) for e in probers[:1]],
                      Evidence(text=f"{len(peers)} peer(s), {len(lines)} lines, every {gap:.0f} s", metric="kernel-log")]))
    return findings


def _gaps(facts: Facts, evs: list) -> list[float]:
    times = sorted(t.timestamp() for e in evs if (t := kernel_event_time(facts, e)) is not None)
    return [b - a for a, b in zip(times, times[1:])]


def _regular(facts: Facts, evs: list, within: float) -> bool:
    gaps = _gaps(facts, evs)
    if len(gaps) < 2:
        return False
    mid = median(gaps)
    return mid > 0 and all(abs(g - mid) <= within * mid for g in gaps)
