"""check_iommu_faults: a node whose IOMMU refuses its devices' DMA (Intel VT-d ``DMAR`` faults, AMD-Vi
``IO_PAGE_FAULT``), failing the work that runs there — GPU peer-to-peer copies and GPUDirect RDMA hang or
fail when the IOMMU translates DMA (NCCL's troubleshooting notes: run with the IOMMU off or in pass-through,
``iommu=pt``; PCI ACS redirecting P2P through the root complex has the same effect).

A node-software (boot configuration) fault, not a GPU's: the fix is the node's kernel command line, so the
node is drained until it is rebooted with it and the jobs it hurt are resubmitted elsewhere. One fault record
on a node with no job is not enough (firmware touching reserved memory at boot prints one).
"""

from __future__ import annotations

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs, host_faults_by_node
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["IommuConfig", "check_iommu_faults"]


class IommuConfig(CheckConfig):
    """How many IOMMU fault records on one node make a finding."""

    min_faults: int = 2


def check_iommu_faults(facts: Facts, cfg: IommuConfig) -> list[Finding]:
    """node_software_fault per node with ``min_faults`` or more IOMMU DMA faults and work there to hurt
    (a job running there or ended badly there, or a GPU pod bound there).

    Source: kernel/system log events of kind host_fault, what ``iommu_fault`` (tools.parsers.kernel._host).
    Evidence strength: direct (the kernel's own fault records).
    """
    by_node = host_faults_by_node(facts, "iommu_fault")
    findings: list[Finding] = []
    for node, events in sorted(by_node.items()):
        if len(events) < cfg.min_faults:
            continue
        ref = node_ref(facts, node)
        hurt = affected_jobs(facts, [node]) if ref.platform == "slurm" else []
        if ref.platform == "slurm" and not hurt:
            continue
        devices = sorted({e.device for e in events if e.device})
        reason = f"IOMMU refusing device DMA on {node} (boot with iommu=pt or the IOMMU off)"
        culprits, follow = victims(facts, ref, f"work hurt by IOMMU DMA faults on {node}", jobs=hurt or None)
        if ref.platform == "kubernetes" and not culprits:
            continue
        shown = ", ".join(devices[:6]) + (" …" if len(devices) > 6 else "")
        findings.append(Finding(
            check="iommu_fault", root_cause="node_software_fault",
            message=f"{node}: {len(events)} IOMMU DMA fault record(s)"
                    + (f" from {len(devices)} device(s) ({shown})" if devices else "")
                    + ": the IOMMU translates and refuses the devices' DMA, which hangs GPU peer-to-peer and GPUDirect "
                      "RDMA traffic — the node's boot configuration (intel_iommu/amd_iommu on without iommu=pt, or PCI "
                      "ACS), not a GPU",
            culprits=[ref.culprit, *culprits],
            evidence=[kernel_evidence(e) for e in (sorted(events, key=lambda e: e.device is None)[:4])],
            strength="direct", confidence=confidence("direct", corroborated=len(devices) >= 2),
            suggested_actions=take_out_of_service(facts, ref, reason) + follow,
        ))
    return findings
