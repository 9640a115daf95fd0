"""Wiring live mode: the runner for Slurm commands, the live ReadContext, the sandbox's config.

``runner(cfg)`` is what both collection and execution use: a LocalSource with SLURM_CONF, or an
SSHSource (Fabric) to the login node. ``sandbox_config`` builds the ``warden.toml`` that
``warden sandbox up`` writes.
"""

from __future__ import annotations

from pathlib import Path

from agent.live.config import LiveConfig, PrometheusConfig, default_config_path, render_toml
from agent.store import warden_home
from tools.checks import SiteCheck
from tools.errors import ConfigError
from tools.live.collect import ErrorFn, LiveCollector, live_context
from tools.live.model import JobLogAccess, KernelLogAccess, LivePlanInput, LustreItem, SlurmAccess
from tools.read.context import ProgressFn, ReadContext
from tools.sources.base import Source
from tools.sources.local import LocalSource
from tools.sources.ssh import SSHSource

__all__ = ["make_runner", "make_collector", "live_read_context", "sandbox_config", "write_sandbox_config"]


def make_runner(plan: LivePlanInput) -> LocalSource | SSHSource:
    """The Source that runs Slurm (and ``tail``/Lustre) commands: local with SLURM_CONF, or SSH via Fabric.

    Locally, commands run in ``$WARDEN_HOME/work`` (where a resubmission writes the batch script it
    reads back with ``scontrol write batch_script``); over SSH, in the remote user's home directory.
    """
    s = plan.slurm
    env = {"SLURM_CONF": s.slurm_conf} if s.slurm_conf else {}
    if s.via == "ssh":
        if not s.host:
            raise ConfigError("[slurm] via = \"ssh\" needs host")
        return SSHSource(s.host, user=s.user, port=s.port, key_filename=s.key_file, env=env)
    work = warden_home() / "work"
    work.mkdir(parents=True, exist_ok=True)
    return LocalSource(env=env, cwd=work)


def _slurm_source(plan: LivePlanInput, runner: Source) -> Source | None:
    if plan.slurm.source != "pyslurm":
        return None
    from tools.sources.pyslurm_source import PyslurmSource

    return PyslurmSource(fallback=runner)


def make_collector(cfg: LiveConfig, *, runner: Source | None = None, on_progress: ProgressFn | None = None,
                   on_error: ErrorFn | None = None) -> LiveCollector:
    """A collector for one live snapshot of the cluster ``cfg`` describes."""
    plan = cfg.plan_input()
    run = runner or make_runner(plan)
    return LiveCollector(plan, run, slurm=_slurm_source(plan, run), on_progress=on_progress, on_error=on_error)


def live_read_context(cfg: LiveConfig, *, runner: Source | None = None, on_progress: ProgressFn | None = None,
                      on_error: ErrorFn | None = None) -> ReadContext:
    """A ReadContext that fetches its evidence from the live cluster on first use."""
    return live_context(make_collector(cfg, runner=runner, on_progress=on_progress, on_error=on_error))


def sandbox_config(state_dir: Path | str | None = None) -> LiveConfig:
    """The live configuration of the sandbox at ``state_dir``: local Slurm commands with its
    SLURM_CONF, its Prometheus, kernel logs and Lustre outputs from the emulated files."""
    from sandbox import emulated
    from sandbox.layout import Layout

    lay = Layout.of(state_dir)
    sc = lay.load_config()
    paths = emulated.lustre_paths(lay, sc)
    lustre = [LustreItem(format=fmt, fs=sc.lustre_fs, path=str(paths[fmt]),  # type: ignore[arg-type]
                         command=cmd.format(mount=f"/{sc.lustre_fs}"))
              for fmt, (_, cmd) in emulated.LUSTRE_FILES.items() if fmt in paths]
    return LiveConfig(
        cluster=sc.cluster_name,
        slurm=SlurmAccess(via="local", slurm_conf=str(lay.slurm_conf)),
        prometheus=PrometheusConfig(url=sc.prometheus_url),
        kernel_logs=KernelLogAccess(kind="file", path=str(lay.nodes / "{node}" / "kernel.log")),
        job_logs=JobLogAccess(roots=[str(lay.jobs)]),  # the sandbox's run folders hold job logs and checkpoints
        lustre=lustre,
        # The sandbox's training jobs run for minutes: a lost minute-long run still counts here.
        checks=[SiteCheck(check="job_timeout_without_checkpoint", args={"min_elapsed_min": 0})],
    )


def write_sandbox_config(state_dir: Path | str | None = None, path: Path | None = None) -> Path:
    """Write the sandbox's ``warden.toml`` (default ``$WARDEN_HOME/warden.toml``); return its path."""
    p = Path(path) if path else default_config_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_toml(sandbox_config(state_dir)))
    return p
