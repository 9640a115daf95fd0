"""check_job_user_code_error: a job failed on an exception of its own code, with no infra fault."""

from __future__ import annotations

import re

from tools.checks.base import CheckConfig, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes, job_state, same_run_jobs
from tools.knowledge.xid import xid_class
from tools.models.logs import CudaErrorEvent, XidEvent
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Finding
from tools.platform import log_owner

__all__ = ["UserCodeConfig", "check_job_user_code_error", "INFRA_EXCEPTIONS"]

INFRA_EXCEPTIONS = (
    "OutOfMemoryError", "DistBackendError", "NCCL", "ChildFailedError", "MemoryError", "OSError",
    "IOError", "TimeoutError", "ConnectionError", "BrokenPipeError", "CUDA", "SystemExit", "KeyboardInterrupt",
    "SignalException",  # torchelastic's: the process was sent SIGTERM/SIGINT from outside (a probe, a drain, a kill)
)
"""Exception names that say the infrastructure (GPU memory, network, storage) failed, not the code.
A RuntimeError is judged by its message (CUDA/NCCL/checkpoint messages are infra)."""

_INFRA_WORDS = ("cuda", "nccl", "out of memory", "no space left", "ecc", "pytorchstream", "nvlink",
                "timed out", "connection", "stale file handle", "input/output error",
                "killed by signal", "exited unexpectedly", "inline_container", "nvidia driver")
"""Message fragments of infrastructure failures: a worker killed from outside (the OOM killer:
``DataLoader worker (pid N) is killed by signal: Killed``) and PyTorch's checkpoint zip writer or
reader failing (``[enforce fail at inline_container.cc:603] . unexpected pos``, a full disk)."""


_USER_SIDE_WORDS = ("shared memory limit", "insufficient shared memory", "out of shared memory",
                    "address already in use", "eaddrinuse", "no module named", "command not found")
"""Messages of failures the job's own set-up causes even where an infrastructure word appears: PyTorch's
DataLoader on a too-small ``/dev/shm`` (``killed by signal: Bus error ... raise your shared memory limit``;
a container's default is 64 MiB), a rendezvous port another job holds (``EADDRINUSE``), a missing module
or program in the job's environment."""


class UserCodeConfig(CheckConfig):
    """Which exceptions count as infrastructure, beyond INFRA_EXCEPTIONS (site-specific wrappers)."""

    extra_infra_exceptions: tuple[str, ...] = ()


def check_job_user_code_error(facts: Facts, cfg: UserCodeConfig) -> list[Finding]:
    """user_code_error per job whose log ends in a Python exception that is not an infrastructure
    error (KeyError, ValueError, AttributeError, a RuntimeError about shapes...).

    Sources: job-log events of kind traceback (exception_type, message).
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    infra = INFRA_EXCEPTIONS + cfg.extra_infra_exceptions
    for e in _exception_lines(facts):
        if not e.job or e.job in seen:
            continue
        cause = None
        if e.exception_type == "MPI_Abort":
            cause = _abort_cause(facts, e)
            if cause is False:
                continue  # the abort follows an infrastructure error: that error's check explains the job
        etype = e.exception_type or ""
        text = (cause.message if cause else e.message).lower()
        own_stores = _own_stores(facts, e)
        user_side = any(w in text for w in _USER_SIDE_WORDS) or own_stores
        if not user_side and (any(x.lower() in etype.lower() for x in infra) or any(w in text for w in _INFRA_WORDS)):
            continue
        # Still running: the exception may have been caught, or be one rank's; a weaker claim than a job
        # that ended on it.
        running = job_state(facts, e.job) in ("RUNNING", "COMPLETING", "PENDING", "SUSPENDED")
        if e.kind == "generic" and running:
            continue  # a bare error line of a live job is not yet its end
        seen.add(e.job)
        strength = "heuristic" if running else "symptom"
        owner, notify = log_owner(facts, e.job, f"job failed: {etype or e.message[:80]}")  # a Slurm job or a pod
        findings.append(Finding(
            check="job_user_code_error", root_cause="user_code_error",
            message=(f"job {e.job}'s torchrun agents each hosted their own c10d rendezvous store (no common "
                     "--rdzv_endpoint), so the nodes never met and the rendezvous timed out" if own_stores else
                     f"job {e.job} called MPI_Abort from its own code" + (f" after: {cause.message[:120]}" if cause else "")
                     if etype == "MPI_Abort" else
                     f"job {e.job}'s MPI cannot start under srun — the MPI in its environment was built without "
                     "Slurm's PMI support, so every rank aborts in MPI_Init on whichever nodes it gets (use the site's "
                     "MPI module, or launch with a matching --mpi=pmix / mpirun)"
                     if etype == "MPI_Init" else
                     f"job {e.job} raised {etype or 'an exception'} in its own code" if etype else
                     f"job {e.job} failed in its own set-up: {e.message[:120]}")
            + (" (the job is still running)" if running else ""),
            culprits=[owner],
            evidence=[log_evidence(x) for x in (cause, e) if x],
            strength=strength, confidence=confidence(strength),
            suggested_actions=[notify],
        ))
    findings += _gpu_program_faults(facts, seen)
    return findings


_INFRA_KINDS = ("nccl_error", "nccl_remote_error", "cuda_oom", "fs_error", "enospc", "net_event",
                "checkpoint_write_failure", "checkpoint_load_failure")


def _abort_cause(facts: Facts, abort: object):
    """For a job that called MPI_Abort: the error line its program printed last before the abort (its own
    message: ``ERROR: namelist read returns an end of file``), None when it printed none, or False when the
    job's log holds an infrastructure error (NCCL, CUDA other than the program's own, file system, ENOSPC,
    network) or that last line names one: MPI_Abort is then the program's reaction to the fault."""
    events = facts.job_events(abort.job)  # type: ignore[attr-defined]
    if any(x.kind in _INFRA_KINDS or isinstance(x, CudaErrorEvent) for x in events):
        return False  # a CUDA error the program hit is judged by the GPU-fault rule below, with its Xids
    before = [x for x in events if x.kind == "generic" and x.file == abort.file  # type: ignore[attr-defined]
              and x.line < abort.line and x.exception_type != "MPI_Abort"]  # type: ignore[attr-defined]
    cause = before[-1] if before else None
    if cause is not None and any(w in cause.message.lower() for w in _INFRA_WORDS):
        return False
    return cause


def _own_stores(facts: Facts, e: object) -> bool:
    """A torchrun rendezvous that timed out because each node's agent hosted its own c10d store (no common
    ``--rdzv_endpoint``: they waited for each other in separate rendezvous): the launch line's fault, not the
    network's. Source: the job log summary's count of ``hosts the TCP store`` lines."""
    if "Rendezvous" not in (getattr(e, "exception_type", None) or ""):
        return False
    return any(s.rdzv_stores >= 2 for s in facts.job_logs if s.job == getattr(e, "job", None))


def _exception_lines(facts: Facts) -> list:
    """Traceback events, then the exception lines printed without a traceback (generic job-log events with
    an exception type: one rank's cut stderr, a launcher echoing its child's error, a shell's ``command not
    found``), for jobs that printed no traceback."""
    tracebacks = facts.job_events_of("traceback")
    with_tb = {e.job for e in tracebacks}
    bare = [e for e in facts.job_events_of("generic") if e.job not in with_tb
            and (e.exception_type or any(w in e.message.lower() for w in _USER_SIDE_WORDS))]
    return [*tracebacks, *bare]


def _gpu_program_faults(facts: Facts, seen: set[str]) -> list[Finding]:
    """user_code_error for a failed job whose GPU reported only application-class Xids (13 graphics
    exception, 31 MMU fault, 43 channel stopped: NVIDIA's RESTART_APP bucket) or a CUDA error of the
    program's own kind (illegal memory access, device-side assert), with no hardware Xid on its nodes.
    Tasks of one array that fail alike are one finding about the array (``job:123``)."""
    jobs = {e.job for e in facts.job_events_of("cuda_error") if e.job and isinstance(e, CudaErrorEvent)
            and e.category == "application"}
    app_only: dict[str, list[XidEvent]] = {}  # nodes whose every Xid is the application's
    for node in dict.fromkeys(e.node for e in facts.kernel_events_of("xid") if e.node):  # file order, not hash order
        xids = [e for e in facts.kernel_events_on(node) if isinstance(e, XidEvent)]
        if xids and all(xid_class(e.xid) == "application" for e in xids):
            app_only[node] = xids
            jobs |= {j.job_id for j in facts.jobs_on_node(node, states=("FAILED",))}
            jobs |= {r.job_id for r in facts.acct_on_node(node) if (r.state or "").startswith("FAILED")}
    faulted: dict[str, tuple[list[CudaErrorEvent], list[XidEvent]]] = {}
    for job in sorted(j for j in jobs if j and j not in seen):
        if job_state(facts, job) not in ("FAILED", "CANCELLED", ""):
            continue
        nodes = job_nodes(facts, job)
        xids = [e for n in nodes for e in facts.kernel_events_on(n) if isinstance(e, XidEvent)]
        if any(xid_class(e.xid) in ("hardware", "nvlink") for e in xids):
            continue  # the GPU failed: gpu_xid's to explain
        errors = [e for e in facts.job_events(job) if isinstance(e, CudaErrorEvent) and e.category == "application"]
        if not errors and not xids:
            continue
        if not nodes:  # where it ran is not recorded: the application Xids of the hour are its best witnesses
            xids = [x for node_xids in app_only.values() for x in node_xids[:1]]
        faulted[job] = (errors, xids)
    return [_program_fault(subject, [faulted[j] for j in group], group, _clean_runs(facts, subject, group),
                           nodes, _gpu_evidence_unread(facts, nodes))
            for subject, group in _by_array(list(faulted)).items() for nodes in [job_nodes(facts, subject)]]


_GPU_CAN_CAUSE = re.compile(r"illegal memory access|unspecified launch failure|illegal instruction|misaligned address|"
                            r"hardware stack error|uncorrectable ECC|an illegal address", re.IGNORECASE)
"""CUDA errors a failing GPU produces as well as a buggy program (NVIDIA's Xid catalogue: 13, 31, 43, 48, 63, 94
surface as these in the application); a missing kernel image or an invalid argument is the build's or the code's."""


def _gpu_evidence_unread(facts: Facts, nodes: list[str]) -> bool:
    """Nothing was read about the GPUs of ``nodes``: no kernel log of theirs and no GPU metrics naming them."""
    if not nodes:
        return False
    logged = facts.cached("kernel_logged_nodes", lambda: {a.node for a in facts.artifacts if a.format == "kernel-log"
                                                          and a.node} | {e.node for e in facts.kernel_events if e.node})
    sampled = facts.sampled_nodes()
    return not any(n in logged or n in sampled for n in nodes)


def _clean_runs(facts: Facts, subject: str, group: list[str]) -> int:
    """Earlier jobs of the same run (same user and name, or work directory) that COMPLETED: for one job's single
    fault, the same program's clean history (sacct, squeue)."""
    if len(group) > 1:
        return 0
    return sum(1 for j in same_run_jobs(facts, subject) if j != subject and job_state(facts, j) == "COMPLETED")


def _by_array(jobs: list[str]) -> dict[str, list[str]]:
    """Jobs keyed by what to name: an array's id when two or more of its tasks are in ``jobs``."""
    arrays: dict[str, list[str]] = {}
    for j in jobs:
        arrays.setdefault(j.split("_", 1)[0] if "_" in j else j, []).append(j)
    out: dict[str, list[str]] = {}
    for key, group in arrays.items():
        if len(group) >= 2 and key not in group:
            out[key] = group
        else:
            out.update({j: [j] for j in group})
    return out


_CLEAN_HISTORY = 3
"""Clean runs of the same program after which one fault of it no longer reads as its bug alone."""


def _program_fault(subject: str, seen: list[tuple[list[CudaErrorEvent], list[XidEvent]]], group: list[str],
                   clean: int = 0, nodes: list[str] | None = None, unread: bool = False) -> Finding:
    errors = [e for errs, _ in seen for e in errs]
    xids = list({(x.file, x.line): x for _, xs in seen for x in xs}.values())
    what = ", ".join(sorted({f"Xid {e.xid}" for e in xids} | {e.error[:60] for e in errors}))
    where = len({x.node for x in xids if x.node})
    if clean >= _CLEAN_HISTORY and where <= 1:
        # One fault after many clean runs of the same program: a bug on rare input, or the GPU — not told apart here.
        node = next((x.node for x in xids if x.node), None) or (nodes[0] if nodes and len(nodes) == 1 else None)
        return Finding(
            check="job_user_code_error", root_cause="inconclusive",
            message=f"job {subject}: the program faulted its GPU once ({what}) after {clean} clean run(s) of the same "
                    "job: a program bug its input rarely reaches, or the GPU, cannot be told from what was read — read "
                    "next: dcgmi diag on the node, the GPU's ECC and Xid history, the failing step's input",
            culprits=[f"job:{subject}"], evidence=[log_evidence(e) for e in errors[:2]] + [kernel_evidence(e) for e in xids[:2]],
            strength="heuristic", confidence=0.5,
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="one GPU fault after clean runs")]
            if node else [])
    if unread and not xids and len(group) == 1 and any(_GPU_CAN_CAUSE.search(e.message) for e in errors):
        # One fault and nothing read about the GPU that ran it (no kernel log, no DCGM): the program's bug or
        # the GPU cannot be told apart; "no hardware Xid" would be a claim about evidence never read.
        node = nodes[0] if nodes and len(nodes) == 1 else None
        return Finding(
            check="job_user_code_error", root_cause="inconclusive",
            message=f"job {subject}: the program faulted its GPU ({what}) and neither the kernel log nor the GPU "
                    f"metrics of {', '.join((nodes or ['its node'])[:3])} were read: a program bug or the GPU cannot be "
                    "told apart — read next: the node's Xid history (dmesg), its DCGM counters, dcgmi diag",
            culprits=[f"job:{subject}"] + ([f"node:{node}"] if node else []),
            evidence=[log_evidence(e) for e in errors[:2]], strength="heuristic", confidence=0.5)
    tasks = f" (tasks {', '.join(t.split('_', 1)[1] for t in group)})" if group != [subject] else ""
    return Finding(
        check="job_user_code_error", root_cause="user_code_error",
        message=f"job {subject}{tasks}: the program faulted its GPU ({what}); no hardware Xid on its nodes"
                + (f"; the same fault on {where} different nodes is the program's, not one GPU's" if where >= 2 else ""),
        culprits=[f"job:{subject}"],
        evidence=[log_evidence(e) for e in errors[:2]] + [kernel_evidence(e) for e in xids[:4]],
        strength="symptom", confidence=confidence("symptom", corroborated=bool(errors and xids) or len(group) >= 2),
        suggested_actions=[ActionSpec(type="notify_owner", job=subject, reason=f"program error on the GPU: {what}")],
    )
