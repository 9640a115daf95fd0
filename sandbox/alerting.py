"""The sandbox's alerting: alert rules on its real Prometheus and a real Alertmanager (Debian's
``prometheus-alertmanager``) that routes every alert to Warden's receiver (``warden serve``).

Rendered under ``<state>/etc``: ``alert_rules.yml`` (Prometheus ``rule_files``: ``WardenGpuXid``
on DCGM's Xid field, ``WardenNodeDown`` on a node whose exporter stopped answering) and
``alertmanager.yml`` (one route, grouped by alertname, ``webhook_configs`` to
``SandboxConfig.warden_webhook_url``), plus ``WardenMdtOpsHigh`` on the metadata op rate of the
MDT, scraped from an emulated Lustre exporter (sandbox/lustre_exporter.py). Waits are short (rules evaluated every scrape interval,
``group_wait`` 1 s) so that an injected fault reaches Warden within seconds.

Alertmanager runs without HA clustering (``--cluster.listen-address=``) on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

import httpx

from sandbox.layout import Layout, SandboxConfig
from sandbox.procs import running_pid, spawn, wait_until

__all__ = ["render_alerting", "start_alertmanager", "start_lustre_exporter", "alertmanager_ready", "ALERTMANAGER"]

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
_HERE = Path(__file__).resolve().parent


def _write(path: Path, text: str) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def render_alerting(lay: Layout, cfg: SandboxConfig) -> set[str]:
    """Write ``alert_rules.yml`` and ``alertmanager.yml``; return the names of those that changed."""
    rules = Template((_HERE / "alert_rules.yaml").read_text()).substitute(
        eval_interval_s=cfg.scrape_interval_s, node_down_for_s=cfg.scrape_interval_s * 2,
        rate_window_s=max(cfg.scrape_interval_s * 4, 20), mdt_ops_threshold=int(cfg.mdt_ops_alert_per_s))
    am = Template((_HERE / "alertmanager.yaml").read_text()).substitute(
        group_wait_s=1, group_interval_s=5, warden_url=cfg.warden_webhook_url)
    changed = set()
    if _write(lay.etc / "alert_rules.yml", rules):
        changed.add("alert_rules.yml")
    if _write(lay.etc / "alertmanager.yml", am):
        changed.add("alertmanager.yml")
    return changed


def alertmanager_ready(cfg: SandboxConfig) -> bool:
    """True when the sandbox's Alertmanager answers /-/ready."""
    try:
        return httpx.get(f"{cfg.alertmanager_url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def start_alertmanager(lay: Layout, cfg: SandboxConfig) -> None:
    """Alertmanager on 127.0.0.1:<alertmanager_port>, data under ``<state>/alertmanager`` (idempotent)."""
    if not running_pid(lay.pid_file("alertmanager"), "alertmanager"):
        from sandbox.services import _require_free

        _require_free(cfg.alertmanager_port, "Alertmanager")
        (lay.root / "alertmanager").mkdir(parents=True, exist_ok=True)
        # A fresh Alertmanager forgets what it notified: its notification log would otherwise hold an
        # alert that fires again with the same labels (WardenMdtOpsHigh always has) for repeat_interval.
        (lay.root / "alertmanager" / "nflog").unlink(missing_ok=True)
        spawn([ALERTMANAGER, f"--config.file={lay.etc / 'alertmanager.yml'}",
               f"--storage.path={lay.root / 'alertmanager'}",
               f"--web.listen-address=127.0.0.1:{cfg.alertmanager_port}", "--cluster.listen-address=",
               "--log.level=warn"],
              pid_file=lay.pid_file("alertmanager"), log_file=lay.log / "alertmanager.log")
    wait_until(lambda: alertmanager_ready(cfg), timeout_s=30, what="Alertmanager to be ready",
               hint=str(lay.log / "alertmanager.log"))


def start_lustre_exporter(lay: Layout, cfg: SandboxConfig) -> None:
    """The emulated Lustre exporter on 127.0.0.1:<lustre_exporter_port> (idempotent)."""
    import sys

    from sandbox.emulated import lustre_paths
    from sandbox.services import _require_free, port_open

    if not running_pid(lay.pid_file("lustre-exporter"), "lustre_exporter.py"):
        _require_free(cfg.lustre_exporter_port, "Lustre exporter")
        spawn([sys.executable, str(_HERE / "lustre_exporter.py"), "--md-stats", str(lustre_paths(lay, cfg)["lctl-md-stats"]),
               "--listen", str(cfg.lustre_exporter_port)],
              pid_file=lay.pid_file("lustre-exporter"), log_file=lay.log / "lustre-exporter.log")
    wait_until(lambda: port_open(cfg.lustre_exporter_port), timeout_s=20, what="the Lustre exporter to listen",
               hint=str(lay.log / "lustre-exporter.log"))
