"""Inject and clear realistic faults in the sandbox.

Each fault changes what a real cluster would show for that failure, through the real channel:
Slurm state (a killed slurmd, a job that cannot start, a job killed at its time limit), job logs
(NCCL watchdog timeout, CUDA OOM, failed checkpoint load), the DCGM exporter state scraped by
Prometheus (XID, utilization, clocks), and emulated files where the real thing cannot run here
(``dmesg -T`` of a node, Lustre ``lctl`` stats; see sandbox/emulated.py).

Active faults are recorded in ``<state>/faults/active.json`` so ``clear`` undoes exactly what
``inject`` did; injecting an active fault again returns its record unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field

from sandbox import emulated, gpu_state, jobs, services
from sandbox.errors import FaultError, SandboxError
from sandbox.layout import Layout, SandboxConfig
from sandbox.procs import running_pid, wait_until
from sandbox.fault_waits import node_responding, node_not_responding, prometheus_value
from tools.errors import CommandError
from tools.sources.local import LocalSource

__all__ = ["FaultName", "FAULTS", "InjectedFault", "inject", "clear", "active"]

FaultName = Literal[
    "gpu_xid79",
    "node_unresponsive",
    "straggler",
    "gpu_oom",
    "pending_forever",
    "timeout_without_checkpoint",
    "metadata_storm",
    "checkpoint_corrupt",
]
FAULTS: tuple[str, ...] = get_args(FaultName)

_DEFAULT_NODE = {"gpu_xid79": 1, "node_unresponsive": 2, "straggler": 3}
"""Index into cfg.nodes of the node a node fault breaks by default (gpu02, gpu03, gpu04); job faults
let Slurm place their one-GPU job unless a node is given."""
_XID_GPU = 2


class InjectedFault(BaseModel):
    """What ``inject`` did, and what ``clear`` will undo."""

    fault: FaultName
    node: str | None = None
    job: str | None = None
    """The job the fault is about (its log shows the symptom), if any."""
    jobs_submitted: list[str] = Field(default_factory=list)
    """Jobs submitted by ``inject``; ``clear`` cancels those still running."""
    files: list[Path] = Field(default_factory=list)
    """Files written or changed (kernel log, Lustre outputs, checkpoint, job log)."""
    log_file: Path | None = None
    injected_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    detail: str = ""


def _registry(lay: Layout) -> Path:
    return lay.faults / "active.json"


def active(state_dir: Path | str | None = None) -> dict[str, InjectedFault]:
    """The faults injected and not yet cleared, by name."""
    path = _registry(Layout.of(state_dir))
    if not path.exists():
        return {}
    return {k: InjectedFault.model_validate(v) for k, v in json.loads(path.read_text()).items()}


def _save(lay: Layout, faults: dict[str, InjectedFault]) -> None:
    lay.faults.mkdir(parents=True, exist_ok=True)
    _registry(lay).write_text(json.dumps({k: v.model_dump(mode="json") for k, v in faults.items()}, indent=1) + "\n")


def _node(cfg: SandboxConfig, fault: str, node: str | None) -> str:
    chosen = node or cfg.nodes[_DEFAULT_NODE[fault] % len(cfg.nodes)]
    if chosen not in cfg.nodes:
        raise FaultError(f"{fault}: unknown node {chosen!r} (sandbox nodes: {', '.join(cfg.nodes)})")
    return chosen


def _checked(cfg: SandboxConfig, node: str | None) -> str | None:
    if node is not None and node not in cfg.nodes:
        raise FaultError(f"unknown node {node!r} (sandbox nodes: {', '.join(cfg.nodes)})")
    return node


def _placed(lay: Layout, rec: InjectedFault) -> None:
    """Fill ``rec.node`` with the node Slurm ran ``rec.job`` on, when known."""
    if rec.job and not rec.node:
        nodes = jobs.job_state(lay, rec.job)[1]
        rec.node = nodes.split(",")[0] if nodes and nodes != "None assigned" else None


def _training(lay: Layout, cfg: SandboxConfig, name: str, node: str | None, args: list[str], **kw: object) -> jobs.SubmittedJob:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    return jobs.submit_training(lay, cfg, name=name, node=node, train_args=args,
                                run_dir=lay.jobs / f"{name}-{stamp}", **kw)  # type: ignore[arg-type]


def _running_job(lay: Layout, cfg: SandboxConfig, name: str, node: str | None, rec: InjectedFault, *, wait: bool,
                 gpus: int = 1) -> jobs.SubmittedJob:
    job = _training(lay, cfg, name, node, ["--step-seconds", "1", "--ckpt-every", "5"], gpus_per_node=gpus)
    rec.jobs_submitted.append(job.job_id)
    rec.job, rec.log_file = job.job_id, job.log_file
    if wait:
        jobs.wait_job_state(lay, job.job_id, {"RUNNING"}, timeout_s=60)
        jobs.wait_for_text(job.log_file, r"step=2 ", timeout_s=30)
    return job


def _log_of(lay: Layout, job_id: str) -> Path | None:
    try:
        run = jobs.job_workdir(lay, job_id)
    except SandboxError:
        return None
    path = run / f"train-{job_id}.out"
    return path if path.exists() else None


def inject(fault: FaultName, state_dir: Path | str | None = None, node: str | None = None, job: str | None = None,
           *, wait: bool = True) -> InjectedFault:
    """Inject ``fault`` into the running sandbox.

    Args:
        fault: one of ``FAULTS``.
        state_dir: the sandbox state folder (default as in ``cluster.up``).
        node: the node to break (defaults: gpu_xid79 gpu02, node_unresponsive gpu03, straggler gpu04,
            jobs on gpu01).
        job: an existing job to involve instead of submitting one (gpu_xid79, metadata_storm,
            checkpoint_corrupt).
        wait: wait (bounded) until the symptom is visible: the job running and its log line written,
            the node NOT_RESPONDING, the job FAILED, Prometheus showing the new values. The
            timeout_without_checkpoint job only reaches TIMEOUT after its 1-minute limit; inject
            waits for it to run, not to time out.

    Returns:
        The record of what was done (also saved for ``clear``).

    Raises:
        FaultError: unknown fault or node; SandboxError / SandboxTimeout when the sandbox does not respond.
    """
    if fault not in FAULTS:
        raise FaultError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    lay = Layout.of(state_dir)
    cfg = lay.load_config()
    current = active(lay.root)
    if fault in current:
        return current[fault]
    rec = InjectedFault(fault=fault)
    current[fault] = rec
    try:
        _INJECT[fault](lay, cfg, rec, node, job, wait)
    finally:
        _save(lay, current)  # even a half-done injection must be clearable
    return rec


def _inject_gpu_xid79(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    if job:
        rec.job = job
        state, nodes = jobs.job_state(lay, job)
        rec.node = node or (nodes.split(",")[0] if nodes else None) or _node(cfg, "gpu_xid79", None)
        rec.log_file = _log_of(lay, job)
    else:
        rec.node = _node(cfg, "gpu_xid79", node)
        _running_job(lay, cfg, "train-xid79", rec.node, rec, wait=wait, gpus=cfg.gpus_per_node)
    uuid = gpu_state.load(lay.gpu_state)["nodes"][rec.node]["gpus"][_XID_GPU]["uuid"]
    gpu_state.update_node(lay.gpu_state, rec.node, gpus=[_XID_GPU], xid=79, util_pct=0, power_w=0.0, sm_clock_mhz=0)
    emulated.append_xid(lay, rec.node, gpu=_XID_GPU, xid=79, uuid=uuid)
    (lay.faults / f"xid79-{rec.node}").touch()
    rec.files = [lay.kernel_log(rec.node), lay.gpu_state] + ([rec.log_file] if rec.log_file else [])
    rec.detail = f"Xid 79 on {rec.node} GPU {_XID_GPU}; the job's rank logs an NCCL watchdog timeout and hangs"
    if wait and rec.log_file:
        jobs.wait_for_text(rec.log_file, "Watchdog caught collective operation timeout", timeout_s=30)


def _inject_node_unresponsive(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    rec.node = _node(cfg, "node_unresponsive", node)
    pid = running_pid(lay.pid_file(f"slurmd-{rec.node}"), "slurmd")
    if pid is None:
        raise FaultError(f"slurmd of {rec.node} is not running (no live pid file)")
    os.kill(pid, signal.SIGKILL)  # a hung or crashed node: no goodbye to slurmctld
    rec.detail = f"killed slurmd of {rec.node} (pid {pid}); SlurmdTimeout={cfg.slurmd_timeout_s} s"
    if wait:
        wait_until(lambda: node_not_responding(lay, rec.node or ""), timeout_s=cfg.slurmd_timeout_s * 6 + 30,
                   what=f"slurmctld to mark {rec.node} NOT_RESPONDING", interval_s=1.0)


def _inject_straggler(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    rec.node = _node(cfg, "straggler", node)
    # A straggler is slow *relative to its job's peers*: a job spanning every node, one of them slow.
    sub = _training(lay, cfg, "train-multinode", None, ["--step-seconds", "1", "--ckpt-every", "5"],
                    nodes=len(cfg.nodes), gpus_per_node=1)
    rec.jobs_submitted.append(sub.job_id)
    rec.job, rec.log_file = sub.job_id, sub.log_file
    gpu_state.update_node(lay.gpu_state, rec.node, util_pct=38, sm_clock_mhz=705, power_w=171.0)
    rec.files = [lay.gpu_state]
    rec.detail = (f"{rec.node}: GPU utilization 38 % and SM clock 705 MHz (others 96 %, 1410 MHz) under job "
                  f"{sub.job_id}, which spans all {len(cfg.nodes)} nodes")
    if wait:
        jobs.wait_job_state(lay, sub.job_id, {"RUNNING"}, timeout_s=60)
    if wait and services.port_open(cfg.prometheus_port, cfg.prometheus_host):
        q = f'max(DCGM_FI_DEV_SM_CLOCK{{Hostname="{rec.node}"}})'
        wait_until(lambda: (prometheus_value(cfg, q) or 1e9) < 1000, timeout_s=cfg.scrape_interval_s * 4 + 10,
                   what=f"Prometheus to scrape the low clocks of {rec.node}", interval_s=1.0)


def _inject_gpu_oom(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    rec.node = _checked(cfg, node)
    sub = _training(lay, cfg, "train-oom", rec.node, ["--step-seconds", "0.5", "--oom-at-step", "4", "--ckpt-every", "2"],
                    gpus_per_node=1)
    rec.jobs_submitted.append(sub.job_id)
    rec.job, rec.log_file, rec.files = sub.job_id, sub.log_file, [sub.log_file]
    rec.detail = "CUDA out of memory at step 4; the job exits 1"
    if wait:
        jobs.wait_job_state(lay, sub.job_id, {"FAILED"}, timeout_s=90)
        _placed(lay, rec)


def _inject_pending_forever(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    n = len(cfg.nodes) + 1
    sub = _training(lay, cfg, "train-too-big", None, ["--step-seconds", "1"], nodes=n)  # type: ignore[arg-type]
    rec.jobs_submitted.append(sub.job_id)
    rec.job, rec.log_file = sub.job_id, sub.log_file
    rec.detail = f"asks for {n} nodes; the partition has {len(cfg.nodes)}: pending (reason PartitionConfig) forever"
    if wait:
        jobs.wait_job_state(lay, sub.job_id, {"PENDING"}, timeout_s=30)


def _inject_timeout_without_checkpoint(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    rec.node = _checked(cfg, node)
    sub = _training(lay, cfg, "train-nockpt", rec.node, ["--step-seconds", "1", "--ckpt-every", "0"], time_limit="1",
                    gpus_per_node=1)
    rec.jobs_submitted.append(sub.job_id)
    rec.job, rec.log_file, rec.files = sub.job_id, sub.log_file, [sub.log_file]
    rec.detail = "1-minute time limit, no checkpoint ever written; Slurm ends it TIMEOUT after ~1-1.5 min"
    if wait:
        jobs.wait_job_state(lay, sub.job_id, {"RUNNING", "TIMEOUT"}, timeout_s=60)
        _placed(lay, rec)


def _inject_metadata_storm(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    if job:
        rec.job = job
    else:
        _running_job(lay, cfg, "train-mdstorm", _checked(cfg, node), rec, wait=wait)
        _placed(lay, rec)
    storm = {"open": 48_210_334, "close": 48_200_112, "getattr": 96_420_671, "mknod": 1_203_311, "statfs": 12}
    quiet = {"open": 1_120, "close": 1_118, "getattr": 8_410, "statfs": 3}
    rec.files = list(emulated.write_lustre(lay, cfg, {str(rec.job): storm, "ls.0": quiet}).values())
    rec.detail = f"job {rec.job}: 48 M open and 96 M getattr on {cfg.lustre_fs}-MDT0000 in the last hour (emulated lctl)"


def _inject_checkpoint_corrupt(lay: Layout, cfg: SandboxConfig, rec: InjectedFault, node: str | None, job: str | None, wait: bool) -> None:
    rec.node = _checked(cfg, node)
    if job:
        run = jobs.job_workdir(lay, job)
    else:
        first = _training(lay, cfg, "train-ckpt", rec.node, ["--steps", "6", "--step-seconds", "0.3", "--ckpt-every", "2"],
                          gpus_per_node=1)
        rec.jobs_submitted.append(first.job_id)
        jobs.wait_job_state(lay, first.job_id, {"COMPLETED"}, timeout_s=90)
        run = first.run_dir
        rec.node = rec.node or jobs.job_state(lay, first.job_id)[1] or None
    ckpts = sorted(p for p in (run / "checkpoints").glob("step_*") if p.is_dir())
    if not ckpts:
        raise FaultError(f"checkpoint_corrupt: no checkpoint under {run / 'checkpoints'}")
    target = ckpts[-1] / "model.pt"
    backup = lay.faults / "checkpoint_corrupt.model.pt"
    shutil.copy2(target, backup)
    with open(target, "r+b") as f:
        f.truncate(target.stat().st_size // 2)
    resume = jobs.submit_training(lay, cfg, name="train-ckpt-resume", node=rec.node, run_dir=run, gpus_per_node=1,
                                  train_args=["--resume", "--steps", "12", "--step-seconds", "0.3", "--ckpt-every", "2"])
    rec.jobs_submitted.append(resume.job_id)
    rec.job, rec.log_file, rec.files = resume.job_id, resume.log_file, [target, resume.log_file]
    rec.detail = f"truncated {target} to half; job {resume.job_id} fails loading it"
    if wait:
        jobs.wait_job_state(lay, resume.job_id, {"FAILED"}, timeout_s=90)


_INJECT = {
    "gpu_xid79": _inject_gpu_xid79,
    "node_unresponsive": _inject_node_unresponsive,
    "straggler": _inject_straggler,
    "gpu_oom": _inject_gpu_oom,
    "pending_forever": _inject_pending_forever,
    "timeout_without_checkpoint": _inject_timeout_without_checkpoint,
    "metadata_storm": _inject_metadata_storm,
    "checkpoint_corrupt": _inject_checkpoint_corrupt,
}


def clear(fault: FaultName, state_dir: Path | str | None = None, node: str | None = None, job: str | None = None,
          *, wait: bool = True) -> InjectedFault | None:
    """Undo an injected fault: cancel the jobs it submitted, restore GPU state, kernel log, Lustre
    files and checkpoints, restart a killed slurmd (waiting until the node responds again).

    ``node``/``job`` are accepted for symmetry with ``inject``; the saved record decides what is undone.

    Returns:
        The record that was cleared, or None when the fault was not active.

    Raises:
        FaultError: unknown fault; SandboxTimeout when a restarted node does not come back in time.
    """
    if fault not in FAULTS:
        raise FaultError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    lay = Layout.of(state_dir)
    cfg = lay.load_config()
    current = active(lay.root)
    rec = current.get(fault)
    if rec is None:
        return None
    if rec.jobs_submitted:
        jobs.cancel(lay, rec.jobs_submitted)
    target = rec.node or node
    if fault == "gpu_xid79" and target:
        (lay.faults / f"xid79-{target}").unlink(missing_ok=True)
        gpu_state.reset_node(lay.gpu_state, target)
        emulated.write_kernel_baseline(lay, target)
    elif fault == "straggler" and target:
        gpu_state.reset_node(lay.gpu_state, target)
    elif fault == "metadata_storm":
        emulated.write_lustre(lay, cfg)
    elif fault == "checkpoint_corrupt":
        backup = lay.faults / "checkpoint_corrupt.model.pt"
        if backup.exists() and rec.files:
            shutil.copy2(backup, rec.files[0])
            backup.unlink()
    elif fault == "node_unresponsive" and target:
        _restart_node(lay, cfg, target, wait=wait)
    del current[fault]
    _save(lay, current)
    return rec


def _restart_node(lay: Layout, cfg: SandboxConfig, node: str, *, wait: bool) -> None:
    services.start_slurmd(lay, cfg, node)
    if not wait:
        return
    src = LocalSource(env=services.slurm_env(lay))

    def back() -> bool:
        if node_responding(lay, node):
            return True
        try:  # ReturnToService=2 normally does this; resume explicitly if the node stayed DOWN
            src.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], timeout_s=10)
        except CommandError:
            pass
        return False

    wait_until(back, timeout_s=cfg.slurmd_timeout_s * 3 + 30, what=f"{node} to respond again", interval_s=1.0)
