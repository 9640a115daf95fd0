"""unexplained_signals: error-level signals that no check's finding explains (DESIGN.md: "healthy is a claim").

Not a check of its own kind: it runs after the others, over their findings. A signal is explained when a
finding names its node or its job as a culprit, or when the node's own fault-specific check judged it
benign (a link that came back, a single recovered eviction are not faults and are not listed here because
their kinds are left to those checks). What stays is listed as the evidence of one ``inconclusive``
finding whose suggested actions are read-only, so the answer is never ``healthy`` while they stand.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from tools.checks.base import CheckConfig, clip, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes, job_state, kernel_event_time, printed_on
from tools.knowledge.xid import xid_class
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import HostFaultEvent, PcieEvent, SlurmNodeEvent, XidEvent
from tools.platform import node_ref

__all__ = ["UnexplainedConfig", "unexplained_signals", "node_signal"]

_NODE_KINDS = ("generic", "gpu_driver", "pcie_error", "slurm_node", "gpu_stack", "xid", "hung_task", "fs_client",
               "host_fault")
_ENDED_BADLY = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "CANCELLED", "TIMEOUT")


class UnexplainedConfig(CheckConfig):
    """How many unexplained signals to quote."""

    max_evidence: int = 6
    min_signals: int = 1


def node_signal(ev: object) -> bool:
    """Whether a kernel/syslog event is an error-level signal that needs a finding to explain it."""
    kind = getattr(ev, "kind", "")
    if kind not in _NODE_KINDS:
        return False
    if isinstance(ev, PcieEvent):
        return not ev.corrected
    if isinstance(ev, XidEvent):
        return xid_class(ev.xid) in ("unknown", "application", "recovery")
    if isinstance(ev, SlurmNodeEvent):
        return ev.what not in ("job_cancelled", "controller_restart", "controller_takeover")
    if isinstance(ev, HostFaultEvent):  # corrected memory errors and the lines of a record are not signals
        return ev.fatal or ev.what in ("soft_lockup", "oops", "machine_check")
    if kind == "gpu_driver" and getattr(ev, "what", "") == "module_loaded":
        return False
    if kind == "fs_client":
        return getattr(ev, "state", "") not in ("restored",)
    return True


_GPU_KINDS = ("xid", "gpu_driver", "pcie_error", "gpu_stack")
_GPU_WORDS = re.compile(r"\bCUDA error|\bECC\b|\bXid\b|\bNVML\b|GPU is lost|fallen off the bus", re.IGNORECASE)


def _cleared(facts: Facts) -> set[tuple[str | None, int]]:
    """(file, line) of file-system client errors that a later line of the same log says recovered (``nfs: server
    X not responding`` then ``nfs: server X OK``; GPFS/BeeGFS connections restored to the same server): the
    client reported an outage it came through — explained by its own log."""
    out: set[tuple[str | None, int]] = set()
    last_ok: dict[tuple[str | None, str], int] = {}
    events = facts.kernel_events_of("fs_client")
    for ev in events:
        server = getattr(ev, "server", None)
        if server and getattr(ev, "state", None) == "restored":
            last_ok[(ev.file, server)] = max(last_ok.get((ev.file, server), 0), ev.line)
    for ev in events:
        server = getattr(ev, "server", None)
        if server and getattr(ev, "state", None) != "restored" and last_ok.get((ev.file, server), 0) > ev.line:
            out.add((ev.file, ev.line))
    return out


def _corrected_mce(facts: Facts) -> set[tuple[str | None, int]]:
    """(file, line) of ``Machine check events logged`` notices whose record, within three lines of the same log,
    is an EDAC corrected error (``EDAC MC1: 1 CE memory read error``): a corrected error, not a signal — unless a
    job that ran on the node printed a non-finite loss or gradient within 30 minutes of it (then whether the
    memory corrupted the job cannot be told, and the notice stays a signal)."""
    ce = {(ev.file, ev.line) for ev in facts.kernel_events_of("host_fault")
          if isinstance(ev, HostFaultEvent) and ev.what == "memory_ce"}
    out: set[tuple[str | None, int]] = set()
    for ev in facts.kernel_events_of("host_fault"):
        if not (isinstance(ev, HostFaultEvent) and ev.what == "machine_check" and not ev.fatal
                and any((ev.file, ev.line + d) in ce for d in (-3, -2, -1, 1, 2, 3))):
            continue
        when = kernel_event_time(facts, ev)
        if when is None or not _nan_near(facts, ev.node, when):
            out.add((ev.file, ev.line))
    return out


def _nan_near(facts: Facts, node: str | None, when: datetime, within: timedelta = timedelta(minutes=30)) -> bool:
    """A job placed on ``node`` printed a non-finite loss or gradient within ``within`` of ``when``."""
    for e in facts.job_events_of("nan_loss"):
        t = e.timestamp
        if t is None or not e.job or node not in job_nodes(facts, e.job):
            continue
        if abs(t.replace(tzinfo=when.tzinfo) - when) <= within:
            return True
    return False


def unexplained_signals(facts: Facts, findings: list[Finding], cfg: UnexplainedConfig | None = None) -> Finding | None:
    """One ``inconclusive`` finding quoting error-level signals on nodes and jobs no finding names
    (kernel/syslog lines nobody classified, unknown Xids, uncorrected PCIe errors, failing daemons, error
    lines of jobs that ended badly), plus Slurm commands that printed errors no finding explains; None when
    every such signal is explained."""
    cfg = cfg or UnexplainedConfig()
    named = {c.split(":", 1)[1] for f in findings for c in f.culprits if ":" in c}
    # Application Xids a finding attributes to a program (or to a cancel) are explained where it quotes them.
    app_files = {e.file for f in findings if f.root_cause in ("user_code_error", "healthy")
                 for e in f.evidence if e.file}
    evidence: list[Evidence] = []
    nodes: dict[str, int] = {}
    gpu_signal_nodes: dict[str, None] = {}
    cleared = _cleared(facts) | _corrected_mce(facts)
    for ev in facts.kernel_events:
        if isinstance(ev, XidEvent) and xid_class(ev.xid) == "application" and ev.file in app_files:
            continue
        if ev.node and ev.node not in named and node_signal(ev) and (ev.file, ev.line) not in cleared:
            nodes[ev.node] = nodes.get(ev.node, 0) + 1
            if ev.kind in _GPU_KINDS or _GPU_WORDS.search(ev.message):
                gpu_signal_nodes[ev.node] = None
            if len(evidence) < cfg.max_evidence:
                evidence.append(kernel_evidence(ev))
    jobs: dict[str, int] = {}
    gpu_nodes: dict[str, None] = {}  # where a job's unexplained GPU error was printed: worth a diagnostic
    for ev in facts.job_events_of("generic", "cuda_error", "fs_error"):
        if ev.job and ev.job not in named and ev.job.split("_", 1)[0] not in named \
                and job_state(facts, ev.job) in _ENDED_BADLY:
            jobs[ev.job] = jobs.get(ev.job, 0) + 1
            if len(evidence) < cfg.max_evidence:
                evidence.append(log_evidence(ev))
            node = printed_on(facts, ev) if _GPU_WORDS.search(ev.message) else None
            # Only a node the scheduler knows for this job (or at all): a name read from log text alone is not
            # something to run a diagnostic on.
            if node and node not in named and (facts.node(node) is not None or node in job_nodes(facts, ev.job)):
                gpu_nodes[node] = None
    explained_errors = any(f.root_cause == "controller_unreachable" for f in findings)
    slurm = [e for e in facts.slurm_errors if not explained_errors]
    evidence += [Evidence(text=clip(f"{e.path}: {e.message}"), file=e.path) for e in slurm[:2]]
    count = sum(nodes.values()) + sum(jobs.values()) + len(slurm)
    if count < cfg.min_signals:
        return None
    where = [f"node {n} ({k})" for n, k in sorted(nodes.items(), key=lambda kv: -kv[1])[:4]]
    where += [f"job {j} ({k})" for j, k in sorted(jobs.items(), key=lambda kv: -kv[1])[:4]]
    where += [f"{e.format} printed an error" for e in slurm[:2]]
    # A GPU diagnostic only where the unexplained lines are about the GPUs (a hung task or a daemon's error is not).
    actions = [ActionSpec(type="run_gpu_diagnostic", node=n, reason="unexplained error-level kernel lines")
               for n in list(gpu_signal_nodes)[:2] if facts.node(n) is not None or facts.k8s_node(n) is not None]
    actions += [ActionSpec(type="run_gpu_diagnostic", node=n, reason="a job's GPU error that no record on the node explains")
                for n in list(gpu_nodes)[:2] if n not in nodes]
    actions += [ActionSpec(type="notify_owner", job=j, reason="job ended badly with errors Warden cannot explain")
                for j in list(jobs)[:2]]
    return Finding(
        check="unexplained_signals", root_cause="inconclusive",
        message=f"{count} error-level signal(s) no check explains: {', '.join(where)}",
        culprits=[node_ref(facts, n).culprit for n in list(dict.fromkeys([*nodes, *gpu_nodes]))[:4]]
        + [f"job:{j}" for j in list(jobs)[:4]],
        evidence=evidence[: cfg.max_evidence], strength="heuristic", confidence=0.5,
        suggested_actions=actions,
    )
