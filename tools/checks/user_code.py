"""check_job_user_code_error: a job failed on an exception of its own code, with no infra fault."""

from __future__ import annotations

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.models.findings import ActionSpec, Finding

__all__ = ["UserCodeConfig", "check_job_user_code_error", "INFRA_EXCEPTIONS"]

INFRA_EXCEPTIONS = (
    "OutOfMemoryError", "DistBackendError", "NCCL", "ChildFailedError", "MemoryError", "OSError",
    "IOError", "TimeoutError", "ConnectionError", "BrokenPipeError", "CUDA", "SystemExit", "KeyboardInterrupt",
)
"""Exception names that say the infrastructure (GPU memory, network, storage) failed, not the code.
A RuntimeError is judged by its message (CUDA/NCCL/checkpoint messages are infra)."""

_INFRA_WORDS = ("cuda", "nccl", "out of memory", "no space left", "ecc", "pytorchstream", "nvlink",
                "timed out", "connection", "stale file handle", "input/output error",
                "killed by signal", "exited unexpectedly", "inline_container")
"""Message fragments of infrastructure failures: a worker killed from outside (the OOM killer:
``DataLoader worker (pid N) is killed by signal: Killed``) and PyTorch's checkpoint zip writer or
reader failing (``[enforce fail at inline_container.cc:603] . unexpected pos``, a full disk)."""


class UserCodeConfig(CheckConfig):
    """Confidence given to a plain traceback."""

    confidence: float = 0.6


def check_job_user_code_error(facts: Facts, cfg: UserCodeConfig) -> list[Finding]:
    """user_code_error per job whose log ends in a Python exception that is not an infrastructure
    error (KeyError, ValueError, AttributeError, a RuntimeError about shapes...).

    Sources: job-log events of kind traceback (exception_type, message).
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    for e in facts.job_log_events:
        if e.kind != "traceback" or not e.job or e.job in seen:
            continue
        etype = e.exception_type or ""
        text = e.message.lower()
        if any(x.lower() in etype.lower() for x in INFRA_EXCEPTIONS) or any(w in text for w in _INFRA_WORDS):
            continue
        seen.add(e.job)
        findings.append(Finding(
            check="job_user_code_error", root_cause="user_code_error",
            message=f"job {e.job} raised {etype or 'an exception'} in its own code",
            culprits=[f"job:{e.job}"],
            evidence=[log_evidence(e)],
            confidence=cfg.confidence,
            suggested_actions=[ActionSpec(type="notify_owner", job=e.job, reason=f"job failed: {etype}")],
        ))
    return findings
