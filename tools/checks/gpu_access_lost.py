"""check_gpu_access_lost: work on a node cannot see GPUs the node itself still reads — the device access of
jobs or containers was lost (node software), not the GPUs.

The classes (NVIDIA container toolkit issues #48/#251, Slurm's cgroup ``ConstrainDevices``, the MIG docs): a
``systemctl daemon-reload`` under the systemd cgroup driver drops running containers' device rules
(``Failed to initialize NVML: Unknown Error`` inside, nvidia-smi fine on the host); a gres.conf ``File=`` or
cgroup device list that does not match the node; MIG mode on with no instances. In each the host's own
readers (DCGM exporter, nvidia-smi) still report the GPUs, with no Xid, lost GPU or ECC fault, while CUDA or
NVML in the workload finds none. Recreating the workload (a new container gets fresh device rules) or fixing
the node's configuration restores it; nothing is wrong with the hardware.
"""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import printed_on
from tools.knowledge.dcgm import gpu_fault_samples
from tools.knowledge.precedence import confidence
from tools.knowledge.xid import HARDWARE_XIDS
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import CudaErrorEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["GpuAccessLostConfig", "check_gpu_access_lost", "host_sees_gpus"]

_FAULT_KINDS = ("xid", "fallen_off_bus", "gpu_ecc")
_STATEFUL = ("StatefulSet",)
"""Owners whose pods carry identity or state (a notebook, a database): told, not evicted."""


class GpuAccessLostConfig(CheckConfig):
    """How many workloads must have lost their GPUs on one node."""

    min_workloads: int = 1


def host_sees_gpus(facts: Facts, node: str) -> bool:
    """The node's own GPU readers were recorded and report its GPUs healthy: DCGM samples or nvidia-smi rows
    from the node, none lost, no hardware Xid / DBE / remap fault in them and no Xid, fallen-off-bus or ECC
    line in its kernel log."""
    readers = facts.cached("gpu_reader_nodes", lambda: _reader_nodes(facts))
    if node not in readers:
        return False
    faulty = facts.cached("gpu_fault_nodes", lambda: {s.node for s, _ in gpu_fault_samples(facts, HARDWARE_XIDS)}
                          | {g.node for g in facts.gpu_status if g.lost})
    return node not in faulty and not any(ev.kind in _FAULT_KINDS for ev in facts.kernel_events_on(node))


def _reader_nodes(facts: Facts) -> set[str]:
    return facts.sampled_nodes() | {g.node for g in facts.gpu_status if g.node}


def check_gpu_access_lost(facts: Facts, cfg: GpuAccessLostConfig) -> list[Finding]:
    """node_software_fault per node where ``min_workloads`` jobs or pods print that no GPU is usable (CUDA
    ``no CUDA-capable device`` / ``CUDA unknown error`` / ``No CUDA GPUs are available``, NVML ``Unknown Error``)
    while ``host_sees_gpus``. Slurm: drain the node and resubmit its jobs elsewhere (the node's configuration
    keeps failing every job); Kubernetes: evict the hurt pods so their controllers recreate them (a new
    container gets its device rules again), StatefulSet pods' owners told instead; no cordon.

    Sources: job-log/pod-log cuda_error events (category device_missing); DCGM exporter / nvidia-smi of the
    node; kernel-log Xid/ECC lines; pods (owner, node).
    """
    by_node: dict[str, list[CudaErrorEvent]] = defaultdict(list)
    for e in facts.job_events_of("cuda_error"):
        if isinstance(e, CudaErrorEvent) and e.category == "device_missing" and e.job:
            node = printed_on(facts, e)
            if node is not None:
                by_node[node].append(e)
    findings: list[Finding] = []
    for node, events in sorted(by_node.items()):
        workloads = list(dict.fromkeys(e.job for e in events if e.job))
        if len(workloads) < cfg.min_workloads or not host_sees_gpus(facts, node):
            continue
        ref = node_ref(facts, node)
        reason = "jobs there cannot see GPUs the node itself reads (device access lost)"
        evidence = [log_evidence(e) for e in _one_per_workload(events)[:3]]
        evidence.append(Evidence(text=f"{node}'s own GPU readers (DCGM exporter / nvidia-smi) report its GPUs, "
                                      "with no Xid, lost GPU or ECC fault", metric="dcgm"))
        reload = [ev for ev in facts.kernel_events_on(node) if "Reloading." in getattr(ev, "message", "")]
        if reload:
            evidence.append(Evidence(text=f"{node}: systemd reloaded its units ({reload[0].message[:80]}): under the "
                                          "systemd cgroup driver this drops running containers' device rules",
                                     file=reload[0].file, line=reload[0].line))
        culprits = [ref.culprit]
        if ref.platform == "kubernetes":
            pods = {p.ref: p for p in facts.pods_on(node)}
            hurt = [pods[w] for w in workloads if w in pods]
            culprits += [f"pod:{p.ref}" for p in hurt]
            actions = [ActionSpec(type="notify_owner", pod=p.name, namespace=p.namespace, reason=reason)
                       if p.owner_kind in _STATEFUL or not p.owner_name else
                       ActionSpec(type="evict_pod", pod=p.name, namespace=p.namespace,
                                  reason=f"recreate it so its container gets the GPUs again: {reason}")
                       for p in hurt[:10]]
        else:
            hurt_culprits, resubmits = victims(facts, ref, reason, jobs=workloads)
            culprits += hurt_culprits
            actions = take_out_of_service(facts, ref, reason) + resubmits
        findings.append(Finding(
            check="gpu_access_lost", root_cause="node_software_fault",
            message=f"{len(workloads)} workload(s) on {node} find no usable GPU "
                    f"('{events[0].error[:70]}') while the node's own readers report its GPUs healthy: device "
                    "access was lost in software (container device rules, cgroup/GRES configuration, MIG mode), "
                    "not the hardware",
            culprits=culprits, evidence=evidence, strength="state",
            confidence=confidence("state", corroborated=bool(reload) or len(workloads) > 1),
            suggested_actions=actions))
    return findings


def _one_per_workload(events: list[CudaErrorEvent]) -> list[CudaErrorEvent]:
    seen: dict[str, CudaErrorEvent] = {}
    for e in events:
        seen.setdefault(e.job or "", e)
    return list(seen.values())
