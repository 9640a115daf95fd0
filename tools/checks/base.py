"""What every check shares: the signature, the config base, the registry entry and evidence helpers.

A check is ``def check_<subject>_<condition>(facts: Facts, cfg: <Config>) -> list[Finding]``. It
reads parsed facts only (never fetches), so replay runs it unchanged. Fact queries several checks
share (affected jobs, runs, checkpoints, event times) live beside the facts in tools.facts.queries;
which node a platform owns and how it is taken out of service, in tools.platform; how strong each
kind of evidence is, in tools.knowledge.precedence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from tools.facts import Facts
from tools.models.findings import Evidence, Finding
from tools.models.logs import JobLogEventBase, KernelEventBase

__all__ = ["CheckConfig", "CheckSpec", "kernel_evidence", "log_evidence", "job_culprits", "clip"]

C = TypeVar("C", bound=BaseModel)


class CheckConfig(BaseModel):
    """Base of every check's arguments: validated, never evaluated; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class CheckSpec(Generic[C]):
    """A registered check: its function, the config model its arguments validate against, and what
    evidence it needs (``needs``: Facts list fields; the check is skipped cheaply when all are empty)."""

    fn: Callable[[Facts, C], list[Finding]]
    config: type[C]
    description: str
    needs: tuple[str, ...] = field(default=())


def clip(text: str, n: int = 300) -> str:
    """``text`` on one line, at most ``n`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def kernel_evidence(ev: KernelEventBase) -> Evidence:
    """Evidence citing a kernel/system log event (file, line and the time as printed)."""
    return Evidence(text=clip(ev.message), file=ev.file, line=ev.line, time=ev.timestamp)


def log_evidence(ev: JobLogEventBase) -> Evidence:
    """Evidence citing a job log event (file, line, rank and time when known)."""
    prefix = f"[rank {ev.rank}] " if ev.rank is not None else ""
    return Evidence(text=clip(prefix + ev.message), file=ev.file, line=ev.line,
                    time=ev.timestamp.isoformat() if ev.timestamp else None)


def job_culprits(job_ids: Iterable[str]) -> list[str]:
    """``job:<id>`` culprits for job ids, de-duplicated, order kept; an id of the form ``namespace/name`` (the
    owner of a pod's container log, manifest key ``pod``) is a ``pod:`` culprit — Slurm job ids have no slash."""
    return [f"pod:{j}" if "/" in j else f"job:{j}" for j in dict.fromkeys(job_ids)]
