"""Submit and follow sandbox jobs (sbatch, squeue, sacct through tools' LocalSource).

The training-like job is ``<state>/bin/train.py`` (from sandbox/train_job.py); each submission
gets a run folder ``<state>/jobs/<name>/`` holding its Slurm output ``train-<jobid>.out`` and
its ``checkpoints/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from sandbox.errors import SandboxError, SandboxTimeout
from sandbox.layout import Layout, SandboxConfig
from sandbox.procs import wait_until
from sandbox.services import slurm_env
from tools.errors import CommandError
from tools.sources.local import LocalSource

__all__ = ["SubmittedJob", "submit_training", "job_state", "wait_job_state", "wait_for_text", "cancel", "job_workdir"]

_FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


class SubmittedJob(BaseModel):
    """A job submitted by the sandbox."""

    job_id: str
    name: str
    run_dir: Path
    log_file: Path
    """Its Slurm ``--output`` file."""


def _src(lay: Layout) -> LocalSource:
    return LocalSource(env=slurm_env(lay))


def submit_training(
    lay: Layout,
    cfg: SandboxConfig,
    *,
    name: str,
    node: str | None = None,
    nodes: int = 1,
    gpus_per_node: int = 4,
    time_limit: str = "2:00:00",
    train_args: Sequence[str] = (),
    run_dir: Path | None = None,
) -> SubmittedJob:
    """``sbatch`` the training-like job.

    Args:
        name: job name; also the run folder name under ``<state>/jobs/`` unless ``run_dir`` is given.
        node: pin to this node (``-w``).
        nodes: node count (``-N``); more than exist leaves it pending forever (reason PartitionConfig).
        time_limit: Slurm ``-t`` value (``1`` = one minute).
        train_args: extra arguments of train.py (``--steps``, ``--ckpt-every``, ``--oom-at-step`` …).

    Raises:
        SandboxError: when sbatch fails.
    """
    run = run_dir or lay.jobs / name
    run.mkdir(parents=True, exist_ok=True)
    argv = ["sbatch", "--parsable", "-J", name, "-p", cfg.partition, "-N", str(nodes), f"--gres=gpu:{gpus_per_node}",
            "-t", time_limit, "-o", str(run / "train-%j.out"), "-D", str(run)]
    if node:
        argv += ["-w", node]
    argv += [str(lay.bin / "train.py"), "--run-dir", str(run), "--fault-dir", str(lay.faults), *train_args]
    try:
        out = _src(lay).run(argv, timeout_s=30).decode().strip()
    except CommandError as exc:
        raise SandboxError(f"sbatch of {name} failed: {exc}") from exc
    job_id = out.split(";")[0]
    if not job_id.isdigit():
        raise SandboxError(f"sbatch of {name} printed {out!r}, not a job id")
    return SubmittedJob(job_id=job_id, name=name, run_dir=run, log_file=run / f"train-{job_id}.out")


def job_state(lay: Layout, job_id: str) -> tuple[str, str]:
    """``(state, nodes)`` of a job: from squeue while it is queued or running, else from sacct.

    Returns ``("", "")`` when neither knows it (yet).
    """
    src = _src(lay)
    try:
        out = src.run(["squeue", "-h", "-j", job_id, "-o", "%T|%N"], timeout_s=15).decode().strip()
    except CommandError:
        out = ""  # squeue exits 1 for a job id it has already purged
    if out:
        state, _, nodes = out.splitlines()[0].partition("|")
        return state, nodes
    try:
        out = src.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,NodeList"], timeout_s=15).decode().strip()
    except CommandError:
        return "", ""
    if not out:
        return "", ""
    state, _, nodes = out.splitlines()[0].partition("|")
    return state.split()[0], nodes


def wait_job_state(lay: Layout, job_id: str, states: set[str], *, timeout_s: float = 60.0) -> str:
    """Wait until the job is in one of ``states`` (e.g. ``{"RUNNING"}``); return the state reached.

    Raises:
        SandboxTimeout: when it is not, in time, or it finished in another state.
    """
    seen = {"state": ""}

    def reached() -> bool:
        seen["state"] = job_state(lay, job_id)[0]
        if seen["state"] in _FINISHED and seen["state"] not in states:
            raise SandboxTimeout(f"job {job_id} ended {seen['state']} while waiting for {'/'.join(sorted(states))}")
        return seen["state"] in states

    wait_until(reached, timeout_s=timeout_s, what=f"job {job_id} to be {'/'.join(sorted(states))}",
               hint=f"{lay.log}/slurmctld.log", interval_s=0.5)
    return seen["state"]


def wait_for_text(path: Path, pattern: str, *, timeout_s: float = 30.0) -> str:
    """Wait until a line of ``path`` matches the regex ``pattern``; return that line."""
    rx = re.compile(pattern)
    found = {"line": ""}

    def check() -> bool:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return False
        for line in text.splitlines():
            if rx.search(line):
                found["line"] = line
                return True
        return False

    wait_until(check, timeout_s=timeout_s, what=f"{pattern!r} in {path}", interval_s=0.3)
    return found["line"]


def cancel(lay: Layout, job_ids: Sequence[str], *, wait_s: float = 20.0) -> None:
    """``scancel`` the jobs still queued or running, and wait (bounded) until they left squeue."""
    live = [j for j in job_ids if job_state(lay, j)[0] not in _FINISHED | {""}]
    if not live:
        return
    try:
        _src(lay).run(["scancel", *live], timeout_s=15)
    except CommandError as exc:
        raise SandboxError(f"scancel {' '.join(live)} failed: {exc}") from exc
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(job_state(lay, j)[0] in ("RUNNING", "PENDING", "COMPLETING") for j in live):
        time.sleep(0.5)


def job_workdir(lay: Layout, job_id: str) -> Path:
    """The working directory (``-D``) of a job, from sacct.

    Raises:
        SandboxError: when sacct does not know the job.
    """
    try:
        out = _src(lay).run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "WorkDir"], timeout_s=15).decode().strip()
    except CommandError as exc:
        raise SandboxError(f"sacct does not know job {job_id}: {exc}") from exc
    if not out:
        raise SandboxError(f"sacct does not know job {job_id}")
    return Path(out.splitlines()[0])
