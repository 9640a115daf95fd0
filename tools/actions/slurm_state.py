"""Reading a node's or job's state back after an action (for verify)."""

from __future__ import annotations

import time

from tools.actions.base import CommandRunner
from tools.errors import ActionError, CommandError
from tools.models.slurm import SlurmJob, SlurmNode
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

__all__ = ["read_node", "read_job", "read_job_settled"]


def read_node(runner: CommandRunner, node: str) -> SlurmNode:
    """`scontrol show node NODE`, parsed.

    Raises:
        ActionError: the command failed or printed no such node.
    """
    argv = ["scontrol", "show", "node", node]
    try:
        text = runner.run(argv).decode("utf-8", "replace")
    except CommandError as e:
        raise ActionError(f"cannot read node {node}: {e}") from None
    art = RawArtifact(format="scontrol-node-text", data=text.encode(), path=" ".join(argv))
    nodes = [n for n in parse_artifact(art) if isinstance(n, SlurmNode) and n.name == node]
    if not nodes:
        raise ActionError(f"scontrol show node {node}: no such node")
    return nodes[0]


def read_job(runner: CommandRunner, job: str) -> SlurmJob | None:
    """`scontrol show job JOB`, parsed; None when Slurm no longer knows the job."""
    argv = ["scontrol", "show", "job", job]
    try:
        text = runner.run(argv).decode("utf-8", "replace")
    except CommandError:
        return None
    if not text.strip():
        return None
    art = RawArtifact(format="scontrol-job-text", data=text.encode(), path=" ".join(argv))
    jobs = [j for j in parse_artifact(art) if isinstance(j, SlurmJob) and j.job_id == job]
    return jobs[0] if jobs else None


def read_job_settled(runner: CommandRunner, job: str, *, transitional: tuple[str, ...] = ("COMPLETING",),
                     timeout_s: float = 20.0, interval_s: float = 0.5) -> SlurmJob | None:
    """``read_job``, read again (bounded by ``timeout_s``) while the job is in a transitional state —
    e.g. COMPLETING right after ``scontrol requeue``, before it is PENDING again."""
    deadline = time.monotonic() + timeout_s
    while True:
        j = read_job(runner, job)
        if j is None or (j.state or "") not in transitional or time.monotonic() >= deadline:
            return j
        time.sleep(interval_s)
