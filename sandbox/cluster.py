"""Bring the sandbox Slurm cluster up, down, and report its status (the Python API behind `warden sandbox`).

``up`` installs missing Debian packages (as root), renders the configs, and starts, in order:
munged → MariaDB → slurmdbd (+ ``sacctmgr add cluster``) → slurmctld → one slurmd per node →
the DCGM exporters → Alertmanager → Prometheus (with the alert rules); then waits, bounded, until ``sinfo`` shows every node
responding (idle on a fresh cluster) and Prometheus is ready. Every step is idempotent, so
``up`` twice, or after a crash, is safe. ``down`` stops only what the pid files name.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
from pydantic import BaseModel

from sandbox import alerting, dcgmi, emulated, faults, gpu_state
from sandbox.errors import SandboxError
from sandbox.layout import Layout, SandboxConfig
from sandbox.packages import ensure_packages
from sandbox.procs import running_pid, stop, wait_until
from sandbox.render import prepare_state, render_all
from sandbox import services
from sandbox.services import node_states
from tools.errors import CommandError
from tools.sources.local import LocalSource

__all__ = ["ComponentStatus", "ClusterStatus", "up", "down", "status", "env", "node_states", "prometheus_ready"]

_BAD_STATES = ("down", "fail", "unk", "inval", "future", "boot", "power", "not_responding")


class ComponentStatus(BaseModel):
    """One daemon of the sandbox."""

    name: str
    running: bool
    pid: int | None = None


class ClusterStatus(BaseModel):
    """What ``status`` (and ``up``) report."""

    state_dir: Path
    up: bool
    """Every daemon running and every node responding to slurmctld."""
    components: list[ComponentStatus]
    nodes: dict[str, str]
    """node → ``sinfo`` long state (``idle``, ``mixed``, ``down*`` …); empty when slurmctld is down."""
    slurm_conf: Path
    prometheus_url: str
    exporter_urls: dict[str, str]
    """node → its DCGM exporter's /metrics URL."""
    installed_packages: list[str] = []
    """Debian packages ``up`` installed on this call."""


def env(state_dir: Path | str | None = None) -> dict[str, str]:
    """Environment for Warden's LocalSource to run squeue/sinfo/sacct/scontrol against the sandbox.

    Returns:
        ``{"SLURM_CONF": "<state>/etc/slurm.conf"}``.
    """
    return services.slurm_env(Layout.of(state_dir))


def _responding(state: str) -> bool:
    """Responding to slurmctld: no ``*`` suffix and not down/unknown/invalid (drained nodes respond)."""
    return not state.endswith("*") and not state.startswith(_BAD_STATES)


def _components(lay: Layout, cfg: SandboxConfig) -> list[tuple[str, str]]:
    names = [("munged", "munged"), ("mariadb", "mariadbd"), ("slurmdbd", "slurmdbd"), ("slurmctld", "slurmctld")]
    names += [(f"slurmd-{n}", "slurmd") for n in cfg.nodes]
    names += [("dcgm-exporter", "exporter.py"), ("lustre-exporter", "lustre_exporter.py"), ("prometheus", "prometheus"),
              ("alertmanager", "alertmanager")]
    return names


def _install_job_script(lay: Layout) -> Path:
    """Copy sandbox/train_job.py to <state>/bin/train.py with this interpreter in its #! line."""
    src = Path(__file__).resolve().parent / "train_job.py"
    text = src.read_text().split("\n", 1)[1]
    dst = lay.bin / "train.py"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(f"#!{sys.executable}\n{text}")
    dst.chmod(0o755)
    return dst


def _restart_changed(lay: Layout, cfg: SandboxConfig, changed: set[str]) -> None:
    """Stop the running daemons whose config changed, so the start below reads the new one."""
    if changed & {"slurm.conf", "gres.conf"}:
        for node in cfg.nodes:
            stop(lay.pid_file(f"slurmd-{node}"), "slurmd")
        stop(lay.pid_file("slurmctld"), "slurmctld")
    if "slurmdbd.conf" in changed:
        stop(lay.pid_file("slurmdbd"), "slurmdbd")
    if changed & {"prometheus.yml", "alert_rules.yml"}:
        stop(lay.pid_file("prometheus"), "prometheus")
    if "alertmanager.yml" in changed:
        stop(lay.pid_file("alertmanager"), "alertmanager")


def up(state_dir: Path | str | None = None, *, config: SandboxConfig | None = None, install: bool = True,
       timeout_s: float = 120.0) -> ClusterStatus:
    """Start the sandbox (idempotent) and wait until it is usable.

    Args:
        state_dir: the private state folder (default: ``$WARDEN_HOME/sandbox`` or
            ``~/.local/state/warden/sandbox``).
        config: ports and names; default: the saved ``sandbox.json``, else the defaults
            (slurmctld 6817, slurmd 17001-17004, slurmdbd 6819, MariaDB 3307, Prometheus 127.0.0.1:9090,
            exporters 9401-9404). A given config is saved for later calls.
        install: install missing Debian packages with apt-get when running as root.
        timeout_s: bound on the wait for the nodes to respond after the daemons started.

    Returns:
        The ClusterStatus after the wait (``up`` True).

    Raises:
        MissingPackagesError: packages missing and not installable here.
        SandboxTimeout: a daemon or the nodes did not come up in time (names the log to read).
        SandboxError: any other start failure (e.g. a port held by a process the sandbox did not start).
    """
    installed = ensure_packages(install=install)
    lay = Layout.of(state_dir)
    cfg = config or lay.load_config()
    lay.save_config(cfg)
    prepare_state(lay, cfg)
    changed = render_all(lay, cfg) | alerting.render_alerting(lay, cfg)
    _restart_changed(lay, cfg, changed)
    gpu_state.write_default(lay.gpu_state, cfg.nodes, cfg.gpus_per_node)
    for node in cfg.nodes:
        if not lay.kernel_log(node).exists():
            emulated.write_kernel_baseline(lay, node)
    if not emulated.lustre_paths(lay, cfg)["lctl-md-stats"].exists():
        emulated.write_lustre(lay, cfg)
    _install_job_script(lay)
    dcgmi.install(lay)  # stand-in `dcgmi diag -j` (no GPUs here)

    services.start_munge(lay)
    services.start_mariadb(lay, cfg)
    services.start_slurmdbd(lay, cfg)
    services.ensure_cluster_registered(lay, cfg)
    services.start_slurmctld(lay, cfg)
    for node in cfg.nodes:
        services.start_slurmd(lay, cfg, node)
    services.start_exporter(lay, cfg)
    alerting.start_lustre_exporter(lay, cfg)
    alerting.start_alertmanager(lay, cfg)
    services.start_prometheus(lay, cfg)

    def nodes_ready() -> bool:
        states = node_states(lay.root)
        return all(n in states and _responding(states[n]) for n in cfg.nodes)

    wait_until(nodes_ready, timeout_s=timeout_s, what=f"sinfo to show {', '.join(cfg.nodes)} responding",
               hint=f"{lay.log}/slurmctld.log and {lay.log}/slurmd-<node>.log", interval_s=0.5)
    result = status(lay.root)
    result.installed_packages = installed
    if not result.up:
        raise SandboxError(f"sandbox started but is not healthy: {result.model_dump_json()}")
    return result


def status(state_dir: Path | str | None = None) -> ClusterStatus:
    """Report which sandbox daemons run (by pid file) and the nodes' sinfo states. Never raises for a
    sandbox that is down; ``up`` is False then."""
    lay = Layout.of(state_dir)
    cfg = lay.load_config()
    comps = []
    for name, expect in _components(lay, cfg):
        pid = running_pid(lay.pid_file(name), expect) if lay.run.exists() else None
        comps.append(ComponentStatus(name=name, running=pid is not None, pid=pid))
    ctld_up = next(c for c in comps if c.name == "slurmctld").running
    nodes = node_states(lay.root) if ctld_up else {}
    healthy = all(c.running for c in comps) and all(n in nodes and _responding(nodes[n]) for n in cfg.nodes)
    return ClusterStatus(
        state_dir=lay.root,
        up=healthy,
        components=comps,
        nodes=nodes,
        slurm_conf=lay.slurm_conf,
        prometheus_url=cfg.prometheus_url,
        exporter_urls={n: f"http://127.0.0.1:{cfg.exporter_port(n)}/metrics" for n in cfg.nodes},
    )


def down(state_dir: Path | str | None = None, *, cancel_jobs: bool = True, purge: bool = False) -> list[str]:
    """Stop the sandbox's daemons by their pid files (reverse start order).

    Active faults are cleared first (``faults.clear``), so the next ``up`` starts healthy.

    Args:
        cancel_jobs: first ``scancel`` every sandbox job and wait (bounded) for them to end, so no
            job process outlives its slurmd.
        purge: also delete the state folder (config, database, logs, checkpoints).

    Returns:
        Names of the components that were running and are now stopped.
    """
    lay = Layout.of(state_dir)
    cfg = lay.load_config()
    for name in faults.active(lay.root):  # the next `up` starts healthy
        try:
            faults.clear(name, lay.root, wait=False)  # type: ignore[arg-type]
        except SandboxError:
            pass  # a controller that is already down cannot cancel jobs; stopping goes on
    if cancel_jobs and lay.run.exists() and running_pid(lay.pid_file("slurmctld"), "slurmctld"):
        src = LocalSource(env=services.slurm_env(lay))
        try:
            src.run(["scancel", "--full", "--partition", cfg.partition], timeout_s=15)
            src.run(["scancel", "--full", "--state=RUNNING"], timeout_s=15)

            def no_jobs() -> bool:
                return not src.run(["squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i"], timeout_s=10).strip()

            wait_until(no_jobs, timeout_s=30, what="sandbox jobs to end")
        except (CommandError, SandboxError):
            pass  # stopping must go on even when the controller is already unhealthy
    stopped = []
    for name, expect in reversed(_components(lay, cfg)):
        if lay.run.exists() and stop(lay.pid_file(name), expect):
            stopped.append(name)
    if purge and lay.root.exists():
        shutil.rmtree(lay.root)
    return stopped


def prometheus_ready(state_dir: Path | str | None = None) -> bool:
    """True when the sandbox's Prometheus answers /-/ready."""
    cfg = Layout.of(state_dir).load_config()
    try:
        return httpx.get(f"{cfg.prometheus_url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
