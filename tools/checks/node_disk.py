"""check_node_local_disk: a node whose own disk fails — medium or I/O errors on a local device and the local
file system aborting its journal (ext4 then remounts read-only; XFS shuts down). The node still answers its
scheduler or stays ``Ready``, so work keeps landing there and fails to start: the kubelet cannot write pod
directories or its device-plugin checkpoint, slurmd cannot write job spool files.

A node fault, reported as ``node_software_fault`` (DESIGN.md's cause for a node whose own stack fails its
jobs): the node is taken out of service and the work it failed moved. Lustre/NFS/GPFS and storage servers'
multipath devices are other checks' (tools.knowledge.local_disk).
"""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.knowledge.local_disk import disk_failure
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["NodeDiskConfig", "check_node_local_disk"]


class NodeDiskConfig(CheckConfig):
    """How many failing-disk lines on one node make a finding."""

    min_events: int = 2


def _stopped_answering(facts: Facts, node: str) -> bool:
    """The scheduler or the API server no longer hears from the node (Slurm DOWN / NOT_RESPONDING, Ready not True)."""
    n, k = facts.node(node), facts.k8s_node(node)
    if n is not None and (n.not_responding or (n.state or "").startswith("DOWN")):
        return True
    return k is not None and k.ready_status not in (None, "True")


def check_node_local_disk(facts: Facts, cfg: NodeDiskConfig) -> list[Finding]:
    """node_software_fault per node with ``min_events`` or more local-disk failure lines, at least one of them a
    medium error or the file system failing (I/O errors alone can be a removed USB stick).

    Source: error-level kernel/journal lines kept as generic events (tools.parsers.kernel), read with
    tools.knowledge.local_disk. Evidence strength: direct.
    """
    by_node: dict[str, list[tuple[object, str, str]]] = defaultdict(list)
    for ev in facts.kernel_events_of("generic"):
        if ev.node and (hit := disk_failure(ev.message)) is not None:
            by_node[ev.node].append((ev, *hit))
    findings: list[Finding] = []
    for node, hits in sorted(by_node.items()):
        kinds = {what for _, what, _ in hits}
        if len(hits) < cfg.min_events or not kinds & {"medium_error", "fs_error"}:
            continue
        if _stopped_answering(facts, node):
            continue  # a node the disk took down is node_unresponsive's (its finding cites why)
        ref = node_ref(facts, node)
        devices = sorted({dev for _, _, dev in hits})
        fs_failed = "fs_error" in kinds
        what = (f"local disk {', '.join(devices[:3])} failing"
                + (": its file system aborted (read-only or shut down)" if fs_failed else " (medium errors)"))
        culprits, follow = victims(facts, ref, f"work failed by {node}'s {what}")
        findings.append(Finding(
            check="node_local_disk", root_cause="node_software_fault",
            message=f"{node}: {what}; {len(hits)} kernel line(s) — the node still takes work that cannot start or "
                    "write there (pod directories, container layers, job spool)",
            culprits=[ref.culprit, *culprits],
            evidence=[kernel_evidence(ev) for ev, _, _ in sorted(hits, key=lambda h: h[1] != "medium_error")[:4]],
            strength="direct", confidence=confidence("direct", corroborated=fs_failed and "medium_error" in kinds),
            suggested_actions=take_out_of_service(facts, ref, f"{what[:80]}") + follow,
        ))
    return findings
