"""Render the sandbox's configuration files from the templates beside this module.

Templates (``slurm.conf``, ``gres.conf``, ``slurmdbd.conf``, ``prometheus.yaml`` in sandbox/) use
``string.Template`` ``$names``; values come from ``SandboxConfig`` and the state ``Layout``.
Also creates the state folders, the fake GPU device files and the private munge key.
"""

from __future__ import annotations

import getpass
import os
import secrets
from pathlib import Path
from string import Template

from sandbox.layout import Layout, SandboxConfig

__all__ = ["prepare_state", "render_all", "db_password", "DB_NAME", "DB_USER"]

_TEMPLATES = Path(__file__).resolve().parent
DB_NAME = "slurm_acct_db"
DB_USER = "slurm"


def _render(template: str, **values: object) -> str:
    return Template((_TEMPLATES / template).read_text()).substitute({k: str(v) for k, v in values.items()})


def _write(path: Path, text: str, mode: int = 0o644) -> bool:
    """Write ``text`` atomically with ``mode``; return True when the content changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        os.chmod(path, mode)
        return False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return True


def prepare_state(lay: Layout, cfg: SandboxConfig) -> None:
    """Create the state folders, fake ``/dev/nvidiaN`` files per node, and the munge key (once)."""
    for d in (lay.etc, lay.run, lay.log, lay.slurm / "ctld", lay.jobs, lay.faults, lay.prometheus, lay.bin):
        d.mkdir(parents=True, exist_ok=True)
    lay.munge.mkdir(parents=True, exist_ok=True)
    os.chmod(lay.munge, 0o700)
    for node in cfg.nodes:
        (lay.slurm / "spool" / node).mkdir(parents=True, exist_ok=True)
        (lay.nodes / node).mkdir(parents=True, exist_ok=True)
        for i in range(cfg.gpus_per_node):
            (lay.dev / node / f"nvidia{i}").parent.mkdir(parents=True, exist_ok=True)
            (lay.dev / node / f"nvidia{i}").touch()
    key = lay.munge / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)


def db_password(lay: Layout) -> str:
    """The slurmdbd → MariaDB password, generated once and kept in a mode-600 file."""
    secret = lay.etc / "db.secret"
    if not secret.exists():
        _write(secret, secrets.token_hex(16) + "\n", 0o600)
    return secret.read_text().strip()


def render_all(lay: Layout, cfg: SandboxConfig) -> set[str]:
    """Write slurm.conf, gres.conf, slurmdbd.conf (mode 600) and prometheus.yml under ``<state>/etc``.

    Returns:
        Names of the files whose content changed (``{"slurm.conf", …}``).
    """
    changed: set[str] = set()
    user = getpass.getuser()
    node_lines = "\n".join(
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={cfg.slurmd_port(n)} "
        f"CPUs={cfg.cpus_per_node} RealMemory={cfg.real_memory_mib} Gres=gpu:{cfg.gpus_per_node} State=UNKNOWN"
        for n in cfg.nodes
    )
    gres_lines = "\n".join(
        f"NodeName={n} Name=gpu File={lay.dev / n}/nvidia[0-{cfg.gpus_per_node - 1}]" for n in cfg.nodes
    )
    common = {
        "cluster_name": cfg.cluster_name,
        "munge_socket": lay.munge_socket,
        "run_dir": lay.run,
        "log_dir": lay.log,
        "slurm_user": user,
        "slurmdbd_port": cfg.slurmdbd_port,
    }
    if _write(
        lay.slurm_conf,
        _render(
            "slurm.conf",
            **common,
            slurmctld_port=cfg.slurmctld_port,
            state_save=lay.slurm / "ctld",
            spool_dir=lay.slurm / "spool",
            slurmd_timeout=cfg.slurmd_timeout_s,
            node_lines=node_lines,
            partition=cfg.partition,
            node_list=",".join(cfg.nodes),
        ),
    ):
        changed.add("slurm.conf")
    if _write(lay.etc / "gres.conf", _render("gres.conf", gres_lines=gres_lines, gpus_per_node=cfg.gpus_per_node)):
        changed.add("gres.conf")
    if _write(
        lay.etc / "slurmdbd.conf",
        _render(
            "slurmdbd.conf",
            **common,
            mariadb_port=cfg.mariadb_port,
            db_user=DB_USER,
            db_pass=db_password(lay),
            db_name=DB_NAME,
        ),
        0o600,
    ):
        changed.add("slurmdbd.conf")
    targets = "\n".join(
        f"      - targets: ['127.0.0.1:{cfg.exporter_port(n)}']\n        labels: {{node: {n}}}" for n in cfg.nodes
    )
    if _write(
        lay.etc / "prometheus.yml",
        _render("prometheus.yaml", scrape_interval_s=cfg.scrape_interval_s, cluster_name=cfg.cluster_name, targets=targets,
                rule_file=lay.etc / "alert_rules.yml", alertmanager_port=cfg.alertmanager_port,
                lustre_exporter_port=cfg.lustre_exporter_port),
    ):
        changed.add("prometheus.yml")
    return changed
