"""check_node_software_fault: a node whose software stack fails its jobs — slurmd prolog/epilog or SPANK
plugin errors, kill-task failures, a failed NVIDIA Fabric Manager / persistenced / container toolkit, a
driver that does not load — whether Slurm has already drained it or not."""

from __future__ import annotations

import re

from collections import defaultdict

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.scheduler import is_held
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import GpuDriverEvent, GpuStackEvent, SlurmNodeEvent
from tools.platform import node_ref, take_out_of_service

__all__ = ["NodeSoftwareConfig", "check_node_software_fault"]

_FAILING = ("prolog_failed", "epilog_failed", "spank_error", "kill_task_failed", "slurmd_start_failed")
_WHAT = {"api_mismatch": "NVIDIA driver API mismatch: user-space driver upgraded without reloading the kernel module",
         "slurmd_start_failed": "slurmd cannot start: a plugin fails to initialise (cgroup v1 plugins on a cgroup v2 "
                                "host, a missing library); resuming the node does not help until slurmd starts"}


def _what(e: object) -> str:
    """A short name for what a node-software event says."""
    if getattr(e, "kind", "") in ("nccl_error", "generic", "nccl_remote_error") and _MEMLOCK.search(getattr(e, "message", "")):
        return "RDMA memory registration fails on the locked-memory limit (ulimit -l / memlock too low)"
    w = getattr(e, "what", None) or getattr(e, "component", "error")
    if w.startswith("module_failed:"):
        return f"kernel module {w.split(':', 1)[1]} does not load against the running kernel/OFED"
    return _WHAT.get(w, w)


class NodeSoftwareConfig(CheckConfig):
    """Drain reasons and log fragments that point at node software."""

    drain_reasons: tuple[str, ...] = (
        "kill task failed", "prolog error", "epilog error", "prolog failed", "epilog failed", "launch failed",
        "batch job complete failure", "fabric manager", "fabricmanager", "nvidia-fabricmanager", "duplicate jobid",
        "nhc", "container", "enroot", "pyxis", "nvidia-persistenced", "driver", "mount",
    )
    log_words: tuple[str, ...] = ("spank", "pyxis", "enroot", "epilog", "prolog", "fabricmanager", "nvidia-persistenced")


_REPORTS_HARDWARE = re.compile(r"detected NVSwitch (?:fatal|non-fatal) error|NVSwitch .*(?:fatal|SXid)|NVLink .*(?:fatal|error)",
                               re.IGNORECASE)


_NHC_HARDWARE = re.compile(r"\bcheck_(?:hw_(?:ib|eth|gpu|mem|physmem|swap|cpuinfo|mcelog)|nv_\w+|fs_mount\w*)\b")
"""LBNL NHC checks of the node's hardware, links and mounts (check_hw_ib, check_hw_eth, check_hw_gpu, check_fs_mount,
...): a drain reason naming one is the checker's claim about that part, for the check of that part (and the
node's own evidence) to weigh — not a software failure of the node."""

_CONTROLLER_LOST = re.compile(r"slurm_send_node_msg|slurm_bufs_sendto|Unable to contact slurm controller|"
                              r"Socket timed out on send/recv|Zero Bytes were transmitted", re.IGNORECASE)


_STUCK_STEP = re.compile(r"kill task failed|batch job complete failure|job not ending", re.IGNORECASE)
"""Drain reasons Slurm sets when a step's processes would not end: a symptom whose cause the logs must tell."""
_FS_KINDS = ("lustre_error", "fs_client")
_FS_STACK = re.compile(r"\[(?:lustre|obdclass|ptlrpc|osc|mdc|lnet|nfs|sunrpc|mmfs26|mmfslinux|ceph|beegfs)\]|"
                       r"\b(?:ll_file_\w+|cl_sync_io_wait|nfs_\w+|rpc_wait_bit_killable)\b")


def _stuck_in_file_system_io(facts: Facts, node: str, reason: str, events: list[object]) -> bool:
    """A ``Kill task failed`` whose node's own log shows why: its processes sit in uninterruptible file-system
    I/O (a hung task with a Lustre/NFS/GPFS stack, or a file-system connection lost and not restored). Signals
    cannot end a process waiting on a server; the file system is the fault, the drain its consequence."""
    kill = "kill task failed" in reason.lower() or any(getattr(e, "what", None) == "kill_task_failed" for e in events)
    if not kill:
        return False
    mine = facts.kernel_events_on(node)
    lost = [e for e in mine if e.kind in _FS_KINDS and getattr(e, "state", None) not in ("connection_restored",
                                                                                            "restored")]
    restored = [e for e in mine if getattr(e, "state", None) in ("connection_restored", "restored")]
    hung_in_fs = any(e.kind == "hung_task" for e in mine) and any(_FS_STACK.search(e.message) for e in mine)
    return hung_in_fs or (bool(lost) and not restored)


_GPU_STACK_REASON = re.compile(r"driver|nvidia|nvml|fabric ?manager|persistenced|\bgpus?\b|cuda", re.IGNORECASE)


def _gpu_stack(reason: str, events: list[object]) -> bool:
    """The failing software is the GPU stack (driver, NVML, Fabric Manager, persistenced, container toolkit),
    where DCGM's diagnostic can tell a broken GPU from broken software; a prolog, epilog, SPANK plugin, slurmd or
    mount failure is a script or daemon that no GPU test explains."""
    return bool(_GPU_STACK_REASON.search(reason)) or any(isinstance(e, (GpuStackEvent, GpuDriverEvent)) for e in events)


def _stack_events(facts: Facts, node: str, words: tuple[str, ...]) -> list[object]:
    """Node-software log events: slurmd/SPANK failures, GPU-stack daemons failing, lines naming them."""
    out: list[object] = []
    # A driver API mismatch ends when the kernel module is loaded again (a reboot or a module reload).
    reloaded: dict[str | None, int] = {}  # per file: the last line where the module loaded
    for e in facts.kernel_events_on(node):
        if isinstance(e, GpuDriverEvent) and e.what == "module_loaded":
            reloaded[e.file] = max(reloaded.get(e.file, 0), e.line)
    for e in facts.kernel_events_on(node):
        if isinstance(e, GpuDriverEvent) and e.what == "module_loaded":
            continue
        if isinstance(e, GpuDriverEvent) and e.what == "api_mismatch" and e.line < reloaded.get(e.file, 0):
            continue
        if _REPORTS_HARDWARE.search(e.message):
            continue  # Fabric Manager reporting an NVSwitch / NVLink error is the messenger: interconnect's
        if _CONTROLLER_LOST.search(e.message):
            continue  # slurmd/slurmstepd failing to reach slurmctld (an EPILOG_COMPLETE unsent): the controller's
        if isinstance(e, SlurmNodeEvent) and e.what in _FAILING:
            out.append(e)
        elif isinstance(e, GpuStackEvent) and e.component in ("fabricmanager", "persistenced", "container-toolkit"):
            out.append(e)
        elif isinstance(e, GpuDriverEvent) and (e.what == "api_mismatch" or e.what.startswith("module_failed:")):
            out.append(e)  # user-space driver newer than the loaded module: an upgrade without a reboot
        elif any(w in e.message.lower() for w in words):
            out.append(e)  # a hung enroot mount, a generic error naming the runtime
    return out


_MEMLOCK = re.compile(r"ibv_reg_mr\w*(?:\(\))? (?:failed|returned)[^\n]{0,80}?(?:Cannot allocate memory|ENOMEM|errno 12)"
                      r"|RLIMIT_MEMLOCK|memlock limit", re.IGNORECASE)
"""RDMA memory registration refused for want of locked memory (``NCCL WARN Call to ibv_reg_mr_iova2 failed with
error Cannot allocate memory``): the node's memlock limit (``ulimit -l``, slurmd's LimitMEMLOCK, limits.conf) is
too low — a node image or unit file problem, not the fabric."""


def _memlock_hosts(facts: Facts) -> dict[str, list[object]]:
    """Nodes whose jobs' RDMA registrations failed on the locked-memory limit: the host that printed the line."""
    out: dict[str, list[object]] = defaultdict(list)
    for e in facts.job_events_of("nccl_error", "generic", "nccl_remote_error"):
        host = getattr(e, "host", None)
        if host and facts.node(host) is not None and _MEMLOCK.search(e.message):
            out[host].append(e)
    return out


def check_node_software_fault(facts: Facts, cfg: NodeSoftwareConfig) -> list[Finding]:
    """node_software_fault per node drained or down with a reason naming a software failure (scontrol /
    sinfo -R), or whose logs show slurmd prolog/epilog/SPANK failures or a failed GPU-stack daemon.

    Evidence strength: the scheduler's drain reason is state; log lines alone are direct evidence of the
    daemon failing (the daemon's own words). Sources: scontrol show node, sinfo -R, kernel/syslog events.
    """
    candidates: dict[str, list[Evidence]] = defaultdict(list)
    logs: dict[str, list[object]] = {}
    for node in facts.node_names() | {e.node for e in facts.kernel_events_of("slurm_node", "gpu_stack") if e.node}:
        n = facts.node(node)
        reason = facts.reason_of(node) or ""
        drained = n is not None and (n.drained or (n.state or "") == "DOWN")
        if drained and any(r in reason.lower() for r in cfg.drain_reasons) and not _NHC_HARDWARE.search(reason):
            state = "+".join([n.state or "?", *n.flags]) if n else "?"
            candidates[node].append(Evidence(text=f"node {node} State={state} Reason={reason}", metric="sinfo -R"))
        events = _stack_events(facts, node, cfg.log_words)
        if events:
            logs[node] = events
    for node, events in _memlock_hosts(facts).items():
        logs.setdefault(node, []).extend(events)
    findings: list[Finding] = []
    for node in sorted(set(candidates) | set(logs)):
        events = logs.get(node, [])
        if _stuck_in_file_system_io(facts, node, facts.reason_of(node) or "", events):
            continue  # the kill failed because the job's processes wait on a file system: fs_unavailable's
        if node not in candidates and not any(not (e.kind == "generic") for e in events):
            continue  # only generic lines naming a word: not enough without a drain reason
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node])
        # Jobs the failing prolog/epilog lines name that Slurm requeued and held (launch failed requeued held):
        # they wait for a release, and start elsewhere once this node is out of service.
        held = [j for j in dict.fromkeys(getattr(e, "job", None) for e in events)
                if j and (job := facts.job(j)) is not None and is_held(job)]
        jobs += [j for j in held if j not in jobs]
        drain_reason = facts.reason_of(node) or ""
        what = drain_reason if node in candidates else ", ".join(sorted({_what(e) for e in events}))
        strength = "state" if node in candidates else "direct"
        if not events and _STUCK_STEP.search(drain_reason):
            # Slurm's drain says only that a step would not end (signals, epilog, job-complete RPC); which
            # process and why is in slurmd's log and the UnkillableStep settings: not node software yet.
            findings.append(Finding(
                check="node_software_fault", root_cause="inconclusive",
                message=f"{node} drained with '{drain_reason[:80]}': a job's processes did not end, and nothing read "
                        "says why (no slurmd, SPANK, prolog/epilog or hung-task line) — read next: slurmd's log on "
                        f"{node} around the drain, UnkillableStepTimeout/UnkillableStepProgram, the processes in D state",
                culprits=[ref.culprit], evidence=candidates.get(node, []), strength="heuristic", confidence=0.5))
            continue
        findings.append(Finding(
            check="node_software_fault", root_cause="node_software_fault",
            message=f"{node}: node software failing ({what})" + (f"; {len(events)} related log line(s)" if events else ""),
            culprits=[ref.culprit, *job_culprits(jobs)],
            evidence=candidates.get(node, []) + [kernel_evidence(e) for e in events[:3]],  # type: ignore[arg-type]
            strength=strength, confidence=confidence(strength, corroborated=node in candidates and bool(events)),
            suggested_actions=take_out_of_service(facts, ref, f"node software fault: {what[:80]}")
            + ([ActionSpec(type="run_gpu_diagnostic", node=node)] if _gpu_stack(drain_reason, events) else [])
            + [ActionSpec(type="release_job", job=j, reason=f"held after its launch failed on {node}; it can start "
                          "elsewhere once the node is out of service") for j in held],
        ))
    return findings
