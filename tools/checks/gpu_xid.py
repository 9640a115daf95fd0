"""check_gpu_xid: GPU hardware faults on a node, from every source that can show one, on any platform.

Sources, strongest first: NVRM kernel lines (hardware Xids of NVIDIA's catalogue, a GPU fallen off the bus
with or without the Xid line, ECC / row-remap text, Xid 154 asking for a reset), DCGM fault fields
(tools.knowledge.dcgm: volatile DBE, retired pages pending, row-remap failure, the Xid counter), nvidia-smi
reporting a GPU it cannot reach, amdgpu's uncorrectable-memory and failed-reset lines (tools.knowledge.amd_gpu), Kubernetes node events naming an Xid, and CUDA errors in a job log that
say the hardware failed (uncorrectable ECC, no device) attributed to the node that printed them. The
culprit and the action follow the platform (tools.platform): drain + resubmit on Slurm, cordon on
Kubernetes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import Field

from tools.checks.base import CheckConfig, clip, kernel_evidence, log_evidence
from tools.checks.gpu_access_lost import host_sees_gpus
from tools.checks.gpu_peers import node_values
from tools.facts import Facts
from tools.facts.queries import affected_jobs, job_nodes, job_state, kernel_event_time, kernel_log_nodes, printed_on, rank_node
from tools.knowledge.amd_gpu import amd_gpu_fault
from tools.knowledge.dcgm import GPU_FAULT_FIELDS, NON_INTERRUPTING_FIELDS, XID_FIELD, gpu_fault_samples
from tools.knowledge.precedence import confidence
from tools.knowledge.xid import HARDWARE_XIDS, NON_INTERRUPTING_XIDS, RECOVERY_XID, REBOOT_XIDS, describe_xid, recovery_action, xid_class
from tools.models.dcgm_diag import DcgmDiagReport
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import CudaErrorEvent, XidEvent
from tools.platform import evacuate, node_ref, take_out_of_service, victims

__all__ = ["XidConfig", "check_gpu_xid"]

_EVENT_XID = re.compile(r"\bXid\b\D{0,12}?(\d{1,3})\b", re.IGNORECASE)
_XID_LABEL = re.compile(r"^Xid (\d{1,3})$")  # a bare "Xid N" label, described for the message


class XidConfig(CheckConfig):
    """Which Xids mean the GPU itself is bad (NVIDIA's Xid catalogue, tools.knowledge.xid)."""

    hardware_xids: frozenset[int] = Field(default=HARDWARE_XIDS)
    min_events: int = 1
    repeat_processes: int = 2
    """Different processes (or jobs) the same GPU (or node) fails with application-class errors before
    the GPU, not the programs, is suspected."""


@dataclass
class _Node:
    direct: list[Evidence] = field(default_factory=list)
    symptoms: list[Evidence] = field(default_factory=list)
    what: set[str] = field(default_factory=set)
    first: datetime | None = None
    jobs: list[str] = field(default_factory=list)
    reboot: bool = False
    """Xid 154 asks for a node reboot (or a drain and reset), or an Xid whose remedy is a reboot (REBOOT_XIDS): the
    node's work must leave before that (tools.platform.evacuate: drain_k8s_node on Kubernetes, nothing more on
    Slurm)."""
    xids: list[tuple[str, int, datetime | None]] = field(default_factory=list)
    """(GPU PCI address, Xid, when) of each hardware Xid from the kernel log."""
    from_kernel: bool = False
    interrupting: bool = False
    """Some evidence says work on the GPU stopped (a fatal Xid, a lost GPU, failing CUDA calls); False when
    every fault waits for the next reset (row remap pending), so running jobs are not its victims."""


def _ended_before(facts: Facts, job_id: str, first_event: datetime | None) -> bool:
    """True when the job had already ended before the node's first GPU error was logged (a job
    cancelled an hour earlier on that node lost nothing to this fault); False when unknown."""
    rec = facts.job(job_id) or facts.acct_job(job_id)
    end = rec.end_time if rec else None
    if first_event is None or end is None or job_state(facts, job_id) in ("RUNNING", "COMPLETING", "SUSPENDED"):
        return False
    return end < first_event - timedelta(minutes=1)


def _nvlink_gpus(facts: Facts) -> set[tuple[str, str | None]]:
    """(node, PCI address) of GPUs that logged an NVLink Xid (74, 144-150): the recovery action (Xid 154)
    they log afterwards is that link fault's, for the interconnect check to name."""
    return {(e.node, e.pci) for e in facts.kernel_events_of("xid")
            if isinstance(e, XidEvent) and e.node and xid_class(e.xid) == "nvlink"}


def _kernel(facts: Facts, cfg: XidConfig, nodes: dict[str, _Node]) -> None:
    nvlink = _nvlink_gpus(facts)
    for ev in facts.kernel_events_of("xid", "fallen_off_bus", "gpu_ecc"):
        if not ev.node:
            continue
        if isinstance(ev, XidEvent):
            if ev.xid in cfg.hardware_xids:
                label = f"Xid {ev.xid}"
            elif ev.xid == RECOVERY_XID and (ev.node, ev.pci) in nvlink:
                continue
            elif ev.xid == RECOVERY_XID and (action := recovery_action(ev.message)):
                label = f"Xid 154 ({action})"
                nodes[ev.node].reboot |= action in ("Node Reboot Required", "System Reboot", "Drain and Reset")
            else:
                continue
        else:
            # "fallen off the bus" is Xid 79 in NVIDIA's catalogue: one label, whichever line said it.
            label = "Xid 79" if ev.kind == "fallen_off_bus" else "uncorrectable ECC"
            nodes[ev.node].reboot |= ev.kind == "fallen_off_bus"
        n = nodes[ev.node]
        n.direct.append(kernel_evidence(ev))
        n.what.add(label)
        n.from_kernel = True
        if isinstance(ev, XidEvent):
            n.xids.append((ev.pci or "", ev.xid, kernel_event_time(facts, ev)))
            n.reboot |= ev.xid in REBOOT_XIDS
        n.interrupting |= not (isinstance(ev, XidEvent) and ev.xid in NON_INTERRUPTING_XIDS)
        when = kernel_event_time(facts, ev)
        if when is not None and (n.first is None or when < n.first):
            n.first = when


def _amd(facts: Facts, nodes: dict[str, _Node]) -> None:
    """amdgpu's own fault lines (tools.knowledge.amd_gpu), kept by the kernel parser as generic error lines."""
    for ev in facts.kernel_events_of("generic"):
        if ev.node and (label := amd_gpu_fault(ev.message)):
            n = nodes[ev.node]
            n.direct.append(kernel_evidence(ev))
            n.what.add(label)
            n.from_kernel = n.interrupting = True
            when = kernel_event_time(facts, ev)
            if when is not None and (n.first is None or when < n.first):
                n.first = when


def _metrics(facts: Facts, cfg: XidConfig, nodes: dict[str, _Node]) -> None:
    for s, label in gpu_fault_samples(facts, cfg.hardware_xids):
        nodes[s.node or ""].direct.append(Evidence(text=f"{s.name}={s.value:g} on {s.node} GPU {s.gpu}",
                                                   metric=s.name, value=s.value, unit="count"))
        nodes[s.node or ""].what.add(label)
        nodes[s.node or ""].interrupting |= not (s.name in NON_INTERRUPTING_FIELDS or
                                                 (s.name == XID_FIELD and int(s.value) in NON_INTERRUPTING_XIDS))
        nodes[s.node or ""].reboot |= s.name == XID_FIELD and int(s.value) in REBOOT_XIDS
    for g in facts.gpu_status:
        if g.node and g.lost:
            nodes[g.node].direct.append(Evidence(text=clip(f"nvidia-smi on {g.node}: GPU {g.pci_bus_id or g.index} "
                                                           f"unreachable ({g.lost})"), metric="nvidia-smi"))
            nodes[g.node].what.add("GPU lost (nvidia-smi)")
            nodes[g.node].interrupting = True


_DIAG_SOFTWARE = ("deployment", "software")
"""dcgmi diag categories about the node's software set-up (denylisted drivers, persistence mode, environment)."""


def _diag(facts: Facts, nodes: dict[str, _Node]) -> None:
    """A recorded ``dcgmi diag`` whose hardware, integration or stress test failed on a GPU: direct evidence."""
    for rep in facts.other:
        if not isinstance(rep, DcgmDiagReport) or not rep.node:
            continue
        for r in rep.failures:
            if r.category.lower() in _DIAG_SOFTWARE:
                continue
            n = nodes[rep.node]
            warn = f" ({clip(r.warnings[0], 120)})" if r.warnings else ""
            n.direct.append(Evidence(text=f"dcgmi diag on {rep.node}: {r.test} failed on GPU {r.gpu}{warn}",
                                     file=rep.file, metric="dcgmi diag"))
            n.what.add(f"dcgmi diag {r.test} failed")
            n.interrupting = True


def _k8s_events(facts: Facts, cfg: XidConfig, nodes: dict[str, _Node]) -> None:
    for e in facts.k8s_events:
        host = e.object_name if e.object_kind == "Node" else e.source_host
        m = _EVENT_XID.search(e.message) if host else None
        if m and int(m.group(1)) in cfg.hardware_xids and host:
            nodes[host].direct.append(Evidence(text=clip(f"{e.reason or ''} {e.message}"), file=e.file, line=e.line))
            nodes[host].what.add(f"Xid {m.group(1)}")
            nodes[host].interrupting |= int(m.group(1)) not in NON_INTERRUPTING_XIDS
            nodes[host].reboot |= int(m.group(1)) in REBOOT_XIDS


def _cuda_errors(facts: Facts, nodes: dict[str, _Node]) -> None:
    """CUDA errors that say the hardware failed, attributed to the node that printed them: the host the
    line names, the rank's node, or the job's only node."""
    # A job whose log says the driver and library disagree lost its GPUs to software (an upgrade without a
    # reboot), however its later lines word it ("Found no NVIDIA driver"): node_software's to explain.
    driver_jobs = {e.job for e in facts.job_events_of("cuda_error")
                   if isinstance(e, CudaErrorEvent) and e.category == "driver" and e.job}
    mismatched = {e.node for e in facts.kernel_events_of("gpu_driver") if getattr(e, "what", "") == "api_mismatch"}
    for e in facts.job_events_of("cuda_error"):
        if not isinstance(e, CudaErrorEvent) or e.category not in ("hardware", "device_missing") or not e.job:
            continue
        if e.category == "device_missing" and e.job in driver_jobs:
            continue
        node = printed_on(facts, e)
        if node is None or (e.category == "device_missing" and (node in mismatched or host_sees_gpus(facts, node))):
            continue  # the node's own readers see healthy GPUs: the workload lost access (gpu_access_lost's)
        if e.category == "hardware" and _records_clean(facts, node):
            continue  # the node's own kernel log and DCGM counters say nothing happened: contradictory, not proof
        n = nodes[node]
        n.symptoms.append(log_evidence(e))
        n.what.add("CUDA: " + clip(e.error, 60))
        n.interrupting = True
        if e.job not in n.jobs:
            n.jobs.append(e.job)


def _burst(n: _Node, min_gpus: int = 4, within_s: float = 5.0) -> tuple[int, int] | None:
    """(Xid, GPUs) when one hardware Xid hit ``min_gpus`` or more GPUs of the node within ``within_s``."""
    by_xid: dict[int, list[tuple[str, datetime]]] = defaultdict(list)
    for pci, xid, when in n.xids:
        if when is not None:
            by_xid[xid].append((pci, when))
    for xid, hits in by_xid.items():
        hits.sort(key=lambda h: h[1])
        for i, (_, start) in enumerate(hits):
            gpus = {p for p, t in hits[i:] if (t - start).total_seconds() <= within_s}
            if len(gpus) >= min_gpus:
                return xid, len(gpus)
    return None


def _ecc_clean(facts: Facts, node: str) -> bool:
    """The node's ECC counters were read and are all zero (nvidia-smi volatile DBE, DCGM DBE / remapped rows)."""
    smi = [g.ecc_dbe_volatile for g in facts.gpu_status if g.node == node and g.ecc_dbe_volatile is not None]
    dcgm = [v for name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                           "DCGM_FI_DEV_ROW_REMAP_FAILURE") for v in node_values(facts, name).get(node, ())]
    values = smi + dcgm
    return bool(values) and all(v == 0 for v in values)


def _shared_cause(name: str, n: _Node, burst: tuple[int, int] | None, culprit: str) -> Finding:
    """inconclusive: the same Xid on many GPUs at once with every ECC counter at zero is one event across them
    (NVLink/NVSwitch fabric, power, the driver), not that many failed GPUs — which, cannot be told from here."""
    what = (f"{describe_xid(burst[0])} on {burst[1]} GPUs of {name} within seconds" if burst
            else f"{', '.join(sorted(n.what))} on {name} at the time of that burst, from DCGM only")
    return Finding(
        check="gpu_xid", root_cause="inconclusive",
        message=f"{what}, while every ECC and row-remap counter read there is 0: one event across the GPUs (NVLink/"
                "NVSwitch fabric, power, the driver) rather than failed GPUs; which cannot be told from what was read — "
                "read next: the fabric manager log, nvidia-smi -q -d ECC,ROW_REMAPPER after a reset, dcgmi diag -r 3",
        culprits=[culprit], evidence=n.direct[:4], strength="heuristic", confidence=0.5, suggested_actions=[])


def _kernel_silent(facts: Facts, node: str) -> bool:
    """The node's kernel log was read and holds no Xid, lost-GPU or ECC line."""
    kernel_read = node in kernel_log_nodes(facts)
    return kernel_read and not any(ev.kind in ("xid", "fallen_off_bus", "gpu_ecc") for ev in facts.kernel_events_on(node))


_DBE_LABELS = frozenset(GPU_FAULT_FIELDS[f] for f in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_DEV",
                                                      "DCGM_FI_DEV_ECC_DBE_VOL_DRAM"))


def _counter_only(facts: Facts, name: str, n: _Node, jobs: list[str]) -> Finding | None:
    """inconclusive: the only sign is a volatile DBE counter, while the driver logged nothing (uncorrectable DRAM
    errors are reported as Xid 48 / 94 / 95 and start a row remap, NVIDIA's memory error management guide), no
    row remap is pending or failed, and every job on the node is still running: counter and driver disagree,
    and no work is shown lost — a reading to confirm before a node leaves service, not a fault."""
    if n.from_kernel or n.symptoms or not n.what or not n.what <= _DBE_LABELS or not _kernel_silent(facts, name):
        return None
    if any(job_state(facts, j) not in ("RUNNING", "COMPLETING", "SUSPENDED") for j in jobs):
        return None
    return Finding(
        check="gpu_xid", root_cause="inconclusive",
        message=f"{name}: a volatile uncorrectable (DBE) ECC count with no Xid 48/94/95 in the node's kernel log, no "
                "row remap pending or failed, and its jobs still running — the counter and the driver disagree; read "
                "next: nvidia-smi -q -d ECC,ROW_REMAPPER, dcgmi diag -r 3 once the node is idle, the full kernel log "
                "since boot",
        culprits=[node_ref(facts, name).culprit], evidence=n.direct[:4], strength="heuristic", confidence=0.5,
        suggested_actions=[])


def _records_clean(facts: Facts, node: str) -> bool:
    """The node's kernel log was read and holds no Xid, lost GPU or ECC line, and DCGM's uncorrectable-ECC
    counters were read and are all zero: a job's "uncorrectable ECC error" is then not corroborated."""
    if not _kernel_silent(facts, node):
        return False
    dbe = [v for name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_DEV")
           for v in node_values(facts, name).get(node, ())]
    return bool(dbe) and all(v == 0 for v in dbe)


def _repeat_app_faults(facts: Facts, cfg: XidConfig, nodes: dict[str, _Node]) -> None:
    """The same GPU faulting for different programs: application-class Xids (13, 31, 43 ...) on one GPU
    from ``repeat_processes`` or more different processes, or the program kind of CUDA error (illegal
    memory access ...) in the logs of that many different jobs on one node. Each alone is a bug in the
    program; the same GPU failing different programs is the GPU."""
    pids: dict[tuple[str, str], set[int]] = defaultdict(set)
    first: dict[tuple[str, str], XidEvent] = {}
    for ev in facts.kernel_events_of("xid"):
        # Application-class Xids, and those of no fixed class (8: GPU stopped processing), repeated for different
        # programs on one GPU.
        if isinstance(ev, XidEvent) and ev.node and xid_class(ev.xid) in ("application", "unknown") and ev.pid is not None:
            key = (ev.node, ev.pci or "?")
            pids[key].add(ev.pid)
            first.setdefault(key, ev)
    for (node, pci), seen in pids.items():
        if len(seen) >= cfg.repeat_processes:
            nodes[node].symptoms.append(kernel_evidence(first[(node, pci)]))
            nodes[node].what.add(f"Xid {first[(node, pci)].xid} on GPU {pci} for {len(seen)} processes")
            nodes[node].interrupting = True
    jobs: dict[str, set[str]] = defaultdict(set)
    sample: dict[str, CudaErrorEvent] = {}
    for e in facts.job_events_of("cuda_error"):
        if isinstance(e, CudaErrorEvent) and e.category == "application" and e.job:
            allocated = job_nodes(facts, e.job)
            node = e.host if e.host in allocated else (allocated[0] if len(allocated) == 1 else None)
            if node is None and e.rank is not None:
                node = rank_node(facts, e.job, e.rank)
            if node:
                jobs[node].add(e.job)
                sample.setdefault(node, e)
    for node, ids in jobs.items():
        if len(ids) >= cfg.repeat_processes:
            nodes[node].symptoms.append(log_evidence(sample[node]))
            nodes[node].what.add(f"'{clip(sample[node].error, 50)}' in {len(ids)} different jobs")
            nodes[node].jobs += [j for j in sorted(ids) if j not in nodes[node].jobs]
            nodes[node].interrupting = True


def check_gpu_xid(facts: Facts, cfg: XidConfig) -> list[Finding]:
    """One gpu_hardware_fault Finding per node with GPU hardware evidence (see the module docstring).

    Evidence strength: direct when a kernel line, a DCGM fault field, nvidia-smi or a node event shows it;
    symptom when only CUDA errors in job logs do (two or more jobs, or with direct evidence, corroborate).
    """
    nodes: dict[str, _Node] = defaultdict(_Node)
    _kernel(facts, cfg, nodes)
    _amd(facts, nodes)
    _metrics(facts, cfg, nodes)
    _k8s_events(facts, cfg, nodes)
    _diag(facts, nodes)
    _cuda_errors(facts, nodes)
    _repeat_app_faults(facts, cfg, nodes)
    findings: list[Finding] = []
    bursts = {name: b for name, n in nodes.items() if name and (b := _burst(n)) and _ecc_clean(facts, name)}
    for name, n in nodes.items():
        if not name or len(n.direct) + len(n.symptoms) < cfg.min_events:
            continue
        ref = node_ref(facts, name)
        if bursts and (name in bursts or (not n.from_kernel and not n.symptoms and _ecc_clean(facts, name)
                                          and n.what <= {f"Xid {x}" for x, _ in bursts.values()})):
            findings.append(_shared_cause(name, n, bursts.get(name), ref.culprit))
            continue
        what = ", ".join(sorted(n.what)) or "GPU hardware errors"
        said = ", ".join(_XID_LABEL.sub(lambda m: describe_xid(int(m.group(1))), w) for w in sorted(n.what)) \
            or "GPU hardware errors"
        jobs = [j for j in affected_jobs(facts, [name]) if not _ended_before(facts, j, n.first)]
        jobs += [j for j in n.jobs if j not in jobs]
        if (unsure := _counter_only(facts, name, n, jobs)) is not None:
            findings.append(unsure)
            continue
        if not n.interrupting:  # the fault waits for a reset: running work goes on and is nobody's victim
            jobs = [j for j in jobs if job_state(facts, j) not in ("RUNNING", "COMPLETING", "SUSPENDED")]
        reason = f"GPU hardware fault ({clip(what, 80)})"
        culprits, follow = victims(facts, ref, f"work lost to GPU fault on {name}", jobs=jobs)
        direct = bool(n.direct)
        strength = "direct" if direct else "symptom"
        corroborated = (direct and bool(n.symptoms)) or len(n.direct) >= 2 or len(n.jobs) >= 2
        findings.append(Finding(
            check="gpu_xid", root_cause="gpu_hardware_fault",
            message=f"{len(n.direct) + len(n.symptoms)} GPU hardware error event(s) on {name}: {said} "
                    f"(threshold {cfg.min_events})",
            culprits=[ref.culprit, *culprits],
            evidence=(n.direct + n.symptoms)[:6],
            strength=strength, confidence=confidence(strength, corroborated=corroborated),
            # Suspected from symptoms only, or a fault that waits for a reset (Xid 63/92, pending fields): a
            # diagnostic confirms it (while the node can still start one, or once its job has drained off).
            suggested_actions=([] if direct and n.interrupting
                               else [ActionSpec(type="run_gpu_diagnostic", node=name, reason=reason)])
            + take_out_of_service(facts, ref, reason) + (evacuate(facts, ref, reason) if n.reboot else []) + follow,
        ))
    return findings
