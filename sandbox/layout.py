"""Where the sandbox keeps its state, and its settings (ports, names, timeouts).

Everything the sandbox creates lives under one private folder, by default
``$WARDEN_HOME/sandbox`` or else ``~/.local/state/warden/sandbox``::

    <state>/sandbox.json       SandboxConfig (ports etc.), written by the first `up`
    <state>/etc/               slurm.conf, gres.conf, slurmdbd.conf (mode 600), prometheus.yml,
                               alert_rules.yml, alertmanager.yml
    <state>/alertmanager/      Alertmanager's silences and notification log
    <state>/run/               pid files of every daemon the sandbox started
    <state>/log/               daemon logs
    <state>/munge/             private munge key, socket and seed
    <state>/mariadb/           MariaDB data directory and socket
    <state>/slurm/             StateSaveLocation and per-node SlurmdSpoolDir
    <state>/dev/<node>/nvidia* fake GPU device files for gres.conf File=
    <state>/nodes/<node>/kernel.log   emulated `dmesg -T` of each node
    <state>/gpu/state.json     per-node DCGM values served by the exporter
    <state>/prometheus/        Prometheus TSDB
    <state>/lustre/<fs>/       emulated `lctl get_param` / `lfs df` outputs (Lustre cannot run here)
    <state>/jobs/<name>/       job run folders: logs and checkpoints
    <state>/faults/            active faults and the trigger files jobs watch
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["SandboxConfig", "Layout", "default_state_dir", "NODES"]

NODES: tuple[str, ...] = ("gpu01", "gpu02", "gpu03", "gpu04")


def default_state_dir() -> Path:
    """``$WARDEN_HOME/sandbox`` when WARDEN_HOME is set, else ``~/.local/state/warden/sandbox``."""
    home = os.environ.get("WARDEN_HOME")
    if home:
        return Path(home).expanduser() / "sandbox"
    return Path.home() / ".local" / "state" / "warden" / "sandbox"


class SandboxConfig(BaseModel):
    """Settings of one sandbox; saved as ``<state>/sandbox.json`` so later calls agree with `up`."""

    cluster_name: str = "sandbox"
    nodes: list[str] = Field(default_factory=lambda: list(NODES))
    partition: str = "gpu"
    gpus_per_node: int = 4
    cpus_per_node: int = 8
    """Configured CPUs per node (more than the host has is fine: SlurmdParameters=config_overrides);
    eight lets several one-GPU fault jobs share a node."""
    real_memory_mib: int = 2000
    slurmctld_port: int = 6817
    slurmd_base_port: int = 17001
    """gpu01 listens on this port, gpu02 on the next, and so on."""
    slurmdbd_port: int = 6819
    mariadb_port: int = 3307
    prometheus_host: str = "127.0.0.1"
    prometheus_port: int = 9090
    exporter_base_port: int = 9401
    """The DCGM exporter of gpu01 listens on this port, gpu02 on the next, …"""
    alertmanager_port: int = 9093
    lustre_exporter_port: int = 9410
    """The emulated Lustre exporter (the MDT's md_stats as counters; sandbox/lustre_exporter.py)."""
    mdt_ops_alert_per_s: float = 5000.0
    """WardenMdtOpsHigh fires above this many metadata operations per second on the MDT."""
    warden_webhook_url: str = "http://127.0.0.1:9095/alertmanager"
    """Where the sandbox's Alertmanager sends every alert (`warden serve --port 9095`)."""
    scrape_interval_s: int = 5
    slurmd_timeout_s: int = 10
    lustre_fs: str = "scratch"

    @property
    def alertmanager_url(self) -> str:
        """Base URL of the sandbox's Alertmanager (``http://127.0.0.1:9093``)."""
        return f"http://127.0.0.1:{self.alertmanager_port}"

    def slurmd_port(self, node: str) -> int:
        """slurmd port of ``node``."""
        return self.slurmd_base_port + self.nodes.index(node)

    def exporter_port(self, node: str) -> int:
        """DCGM exporter port of ``node``."""
        return self.exporter_base_port + self.nodes.index(node)

    @property
    def prometheus_url(self) -> str:
        """Base URL of the sandbox's Prometheus (``http://127.0.0.1:9090``)."""
        return f"http://{self.prometheus_host}:{self.prometheus_port}"


@dataclass(frozen=True)
class Layout:
    """Paths of one sandbox state folder (see the module docstring)."""

    root: Path

    @classmethod
    def of(cls, state_dir: Path | str | None) -> "Layout":
        """Layout of ``state_dir`` (default: ``default_state_dir()``), as an absolute path."""
        return cls(Path(state_dir).expanduser().resolve() if state_dir else default_state_dir().resolve())

    config_file = property(lambda self: self.root / "sandbox.json")
    etc = property(lambda self: self.root / "etc")
    run = property(lambda self: self.root / "run")
    log = property(lambda self: self.root / "log")
    munge = property(lambda self: self.root / "munge")
    mariadb = property(lambda self: self.root / "mariadb")
    slurm = property(lambda self: self.root / "slurm")
    dev = property(lambda self: self.root / "dev")
    nodes = property(lambda self: self.root / "nodes")
    gpu_state = property(lambda self: self.root / "gpu" / "state.json")
    prometheus = property(lambda self: self.root / "prometheus")
    lustre = property(lambda self: self.root / "lustre")
    jobs = property(lambda self: self.root / "jobs")
    faults = property(lambda self: self.root / "faults")
    bin = property(lambda self: self.root / "bin")
    slurm_conf = property(lambda self: self.etc / "slurm.conf")
    munge_socket = property(lambda self: self.munge / "munge.socket")
    mariadb_socket = property(lambda self: self.mariadb / "mysqld.sock")

    def kernel_log(self, node: str) -> Path:
        """Emulated ``dmesg -T`` output of ``node``."""
        return self.nodes / node / "kernel.log"

    def pid_file(self, name: str) -> Path:
        """Pid file of daemon ``name`` (``slurmd-gpu01``, ``mariadb``, …)."""
        return self.run / f"{name}.pid"

    def load_config(self) -> SandboxConfig:
        """The saved SandboxConfig, or the defaults when none was saved yet."""
        if self.config_file.exists():
            return SandboxConfig.model_validate_json(self.config_file.read_text())
        return SandboxConfig()

    def save_config(self, cfg: SandboxConfig) -> None:
        """Save ``cfg`` as ``sandbox.json``."""
        self.root.mkdir(parents=True, exist_ok=True)
        # Only the values that differ from the defaults: an upgraded sandbox picks up new defaults.
        self.config_file.write_text(cfg.model_dump_json(indent=2, exclude_defaults=True) + "\n")
