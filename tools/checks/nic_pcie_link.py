"""check_nic_pcie_link: an InfiniBand/RoCE/Ethernet adapter whose PCIe link trained narrower or slower than it
can run (the kernel's ``mlx5_core 0000:4b:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe
x8 link at … (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)``, printed by the adapter's driver at probe).
The adapter then moves at most the limited bandwidth: every ring or tree through the node runs at its pace, so
the job is slow on all ranks while its GPUs look busy. The fix is in the slot or riser (reseat), so the node
is drained and its jobs resubmitted elsewhere; no GPU diagnostic (the GPUs are fine).

Sources: kernel-log pcie_error events (what=link_degraded) whose line is printed by a network adapter's driver
(tools.knowledge.host.NIC_DRIVERS).
"""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.host import nic_driver
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.models.logs import PcieEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["NicPcieLinkConfig", "check_nic_pcie_link"]


class NicPcieLinkConfig(CheckConfig):
    """Nothing to tune: a degraded adapter link is reported from the first line."""


def check_nic_pcie_link(facts: Facts, cfg: NicPcieLinkConfig) -> list[Finding]:
    """interconnect_fault per node with a network adapter whose PCIe link is degraded; culprit the node and the
    jobs running there; drain (or cordon) it and resubmit them."""
    degraded: dict[str, list[PcieEvent]] = defaultdict(list)
    for e in facts.kernel_events_of("pcie_error"):
        if isinstance(e, PcieEvent) and e.node and e.what == "link_degraded" and nic_driver(e.message):
            degraded[e.node].append(e)
    findings: list[Finding] = []
    for node, events in sorted(degraded.items()):
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node], since=facts.captured_at)
        reason = f"slowed by {node}'s network adapter on a degraded PCIe link"
        culprits, follow = victims(facts, ref, reason, jobs=jobs)
        adapters = sorted({f"{nic_driver(e.message)} {e.pci}" for e in events})
        findings.append(Finding(
            check="nic_pcie_link", root_cause="interconnect_fault",
            message=f"{node}: network adapter {', '.join(adapters)} runs on a PCIe link trained below its capability: "
                    "every collective through the node moves at that bandwidth",
            culprits=[ref.culprit, *culprits], evidence=[kernel_evidence(e) for e in events[:3]],
            strength="direct", confidence=confidence("direct", corroborated=bool(jobs)),
            suggested_actions=take_out_of_service(facts, ref, "network adapter PCIe link degraded") + follow))
    return findings
