"""check_host_thermal_throttle: a node whose CPUs the kernel throttles for heat.

The x86 thermal-throttle driver (``arch/x86/kernel/cpu/mce/therm_throt.c``) logs ``CPUn: Core temperature
above threshold, cpu clock throttled (total events = N)`` and its ``Package`` twin when a core or the whole
package crosses its PROCHOT threshold, and ``... temperature/speed normal`` when it recovers. One line at
boot or under a brief burst is ordinary; a node that keeps throttling (many lines, or a large running
event count) has a cooling fault — a failed fan, a blocked inlet, a heat sink off — and runs every job on it
at a fraction of its clock: the job's other nodes wait for it.
"""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs, host_faults_by_node
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["HostThermalConfig", "check_host_thermal_throttle"]

_TOTAL = re.compile(r"total events = (?P<n>\d{1,12})")


class HostThermalConfig(CheckConfig):
    """When throttling is a fault rather than a blip: lines logged, or the driver's running event count."""

    min_lines: int = 3
    min_total_events: int = 100


def check_host_thermal_throttle(facts: Facts, cfg: HostThermalConfig) -> list[Finding]:
    """thermal_power_throttle per node whose kernel logged CPU thermal throttling at least ``min_lines``
    times, or with a running count of at least ``min_total_events``. Culprits: the node, then its running
    jobs (they run at the throttled node's pace). Actions: take the node out of service (drain on Slurm,
    cordon on Kubernetes) so its cooling is looked at. Strength: direct (the kernel's own record).

    Sources: kernel-log events of kind host_fault with ``what`` cpu_thermal (dmesg, journalctl -k).
    """
    by_node = host_faults_by_node(facts, "cpu_thermal")
    findings: list[Finding] = []
    for node, events in sorted(by_node.items()):
        total = max((int(m["n"]) for e in events if (m := _TOTAL.search(e.message))), default=0)
        if len(events) < cfg.min_lines and total < cfg.min_total_events:
            continue
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node], since=facts.captured_at)
        count = f"{len(events)} throttle lines" + (f", {total} events counted by the driver" if total else "")
        findings.append(Finding(
            check="host_thermal_throttle", root_cause="thermal_power_throttle",
            message=f"{node}: the kernel throttles its CPU clocks for heat ({count}); its jobs run at its pace",
            culprits=[ref.culprit, *job_culprits(jobs)],
            evidence=[kernel_evidence(e) for e in (events[:2] + events[-1:] if len(events) > 2 else events)],
            strength="direct", confidence=confidence("direct", corroborated=len(events) >= cfg.min_lines and total > 0),
            suggested_actions=take_out_of_service(facts, ref, "CPU thermal throttling: check fans and airflow"),
        ))
    return findings
