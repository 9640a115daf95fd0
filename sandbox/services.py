"""Start each sandbox daemon once (munge, MariaDB, slurmdbd, slurmctld, slurmd, exporter, Prometheus).

Every ``start_*`` is idempotent: when the daemon named by its pid file is alive it does nothing;
a stale pid file is removed and the daemon started again. Each waits, bounded, until the daemon
answers, and raises ``SandboxTimeout`` naming the log to read when it does not.
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
from pathlib import Path

import httpx

from sandbox.errors import SandboxError
from sandbox.layout import Layout, SandboxConfig
from sandbox.procs import running_pid, spawn, wait_until
from sandbox.render import DB_NAME, DB_USER, db_password
from tools.errors import CommandError
from tools.sources.local import LocalSource

__all__ = [
    "DAEMONS",
    "slurm_env",
    "start_munge",
    "start_mariadb",
    "start_slurmdbd",
    "ensure_cluster_registered",
    "start_slurmctld",
    "start_slurmd",
    "start_exporter",
    "start_prometheus",
    "port_open",
    "node_states",
]

DAEMONS: dict[str, str] = {
    "munged": "munged",
    "mariadb": "mariadbd",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "dcgm-exporter": "exporter.py",
    "prometheus": "prometheus",
}
"""Component name (its pid file is ``<state>/run/<name>.pid``) → text its command line contains.
Each node adds ``slurmd-<node>`` → ``slurmd``."""

_EXPORTER = Path(__file__).resolve().parent / "exporter.py"


def slurm_env(lay: Layout) -> dict[str, str]:
    """Environment that points Slurm commands and daemons at the sandbox's slurm.conf."""
    return {"SLURM_CONF": str(lay.slurm_conf)}


def _slurm(lay: Layout) -> LocalSource:
    return LocalSource(env=slurm_env(lay))


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def _require_free(port: int, what: str) -> None:
    if port_open(port):
        raise SandboxError(f"port {port} ({what}) is already in use by a process the sandbox did not start; "
                           f"stop it or choose another port in <state>/sandbox.json (Prometheus: up --prometheus-port)")


def _ok(argv: list[str], env: dict[str, str] | None = None, timeout_s: float = 10.0) -> bool:
    try:
        LocalSource(env=env).run(argv, timeout_s=timeout_s)
    except CommandError:
        return False
    return True


def _daemonize(lay: Layout, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    """Run a self-daemonizing program (it forks and writes its own pid file)."""
    try:
        LocalSource(env=env).run(argv, timeout_s=30)
    except CommandError as exc:
        raise SandboxError(f"{name} failed to start: {exc}; see {lay.log}/{name}.log") from exc


def start_munge(lay: Layout) -> None:
    """munged with the sandbox's private key and socket (``munged --force``)."""
    if running_pid(lay.pid_file("munged"), DAEMONS["munged"]):
        return
    lay.munge_socket.unlink(missing_ok=True)
    _daemonize(lay, "munged", [
        "munged", "--force",
        f"--socket={lay.munge_socket}", f"--key-file={lay.munge / 'munge.key'}",
        f"--pid-file={lay.pid_file('munged')}", f"--log-file={lay.log / 'munged.log'}",
        f"--seed-file={lay.munge / 'munge.seed'}",
    ])
    wait_until(lambda: _ok(["munge", "-n", f"--socket={lay.munge_socket}"]), timeout_s=15,
               what="munged to answer", hint=str(lay.log / "munged.log"))


def _db_admin_user() -> str:
    return "root" if os.geteuid() == 0 else getpass.getuser()


def start_mariadb(lay: Layout, cfg: SandboxConfig) -> None:
    """MariaDB on 127.0.0.1:<mariadb_port> with a private data dir; creates the accounting DB and user."""
    data = lay.mariadb / "data"
    sock = lay.mariadb_socket
    if not running_pid(lay.pid_file("mariadb"), DAEMONS["mariadb"]):
        _require_free(cfg.mariadb_port, "MariaDB")
        user_opt = ["--user=root"] if os.geteuid() == 0 else []
        if not (data / "mysql").is_dir():
            data.mkdir(parents=True, exist_ok=True)
            try:
                LocalSource().run(["mariadb-install-db", "--no-defaults", *user_opt, f"--datadir={data}",
                                   "--skip-test-db", "--auth-root-authentication-method=socket"], timeout_s=180)
            except CommandError as exc:
                raise SandboxError(f"mariadb-install-db failed: {exc}") from exc
        spawn(["mariadbd", "--no-defaults", *user_opt, f"--datadir={data}", f"--socket={sock}",
               f"--pid-file={lay.mariadb / 'mariadbd.pid'}", f"--port={cfg.mariadb_port}",
               "--bind-address=127.0.0.1", "--skip-name-resolve", "--innodb-buffer-pool-size=128M",
               "--innodb-lock-wait-timeout=900", f"--log-error={lay.log / 'mariadb.log'}"],
              pid_file=lay.pid_file("mariadb"), log_file=lay.log / "mariadb.log")
    wait_until(lambda: _ok(["mariadb-admin", "--no-defaults", f"--socket={sock}", f"--user={_db_admin_user()}", "ping"]),
               timeout_s=60, what="MariaDB to answer", hint=str(lay.log / "mariadb.log"))
    pw = db_password(lay)
    sql = "\n".join([
        f"CREATE DATABASE IF NOT EXISTS {DB_NAME};",
        *(f"CREATE USER IF NOT EXISTS '{DB_USER}'@'{h}' IDENTIFIED BY '{pw}';" for h in ("127.0.0.1", "localhost")),
        *(f"ALTER USER '{DB_USER}'@'{h}' IDENTIFIED BY '{pw}';" for h in ("127.0.0.1", "localhost")),
        *(f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'{h}';" for h in ("127.0.0.1", "localhost")),
        "FLUSH PRIVILEGES;",
    ])
    try:
        LocalSource().run(["mariadb", "--no-defaults", f"--socket={sock}", f"--user={_db_admin_user()}"],
                          input_bytes=sql.encode(), timeout_s=30)
    except CommandError as exc:
        raise SandboxError(f"creating the accounting database failed: {exc}") from exc


def start_slurmdbd(lay: Layout, cfg: SandboxConfig) -> None:
    """slurmdbd on DbdPort; waits until ``sacctmgr list cluster`` answers."""
    if not running_pid(lay.pid_file("slurmdbd"), DAEMONS["slurmdbd"]):
        _require_free(cfg.slurmdbd_port, "slurmdbd")
        _daemonize(lay, "slurmdbd", ["slurmdbd"], slurm_env(lay))
    wait_until(lambda: _ok(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"], slurm_env(lay)),
               timeout_s=60, what="slurmdbd to answer sacctmgr", hint=str(lay.log / "slurmdbd.log"))


def ensure_cluster_registered(lay: Layout, cfg: SandboxConfig) -> None:
    """``sacctmgr -i add cluster <name>`` unless the accounting database already knows it."""
    src = _slurm(lay)
    known = src.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"]).decode().split()
    if cfg.cluster_name not in known:
        try:
            src.run(["sacctmgr", "-i", "add", "cluster", cfg.cluster_name], timeout_s=30)
        except CommandError as exc:
            raise SandboxError(f"sacctmgr could not add cluster {cfg.cluster_name}: {exc}") from exc


def start_slurmctld(lay: Layout, cfg: SandboxConfig) -> None:
    """slurmctld on SlurmctldPort; waits until ``scontrol ping`` reports it UP."""
    if not running_pid(lay.pid_file("slurmctld"), DAEMONS["slurmctld"]):
        _require_free(cfg.slurmctld_port, "slurmctld")
        _daemonize(lay, "slurmctld", ["slurmctld"], slurm_env(lay))

    def ping() -> bool:
        try:
            return "is UP" in _slurm(lay).run(["scontrol", "ping"], timeout_s=10).decode()
        except CommandError:
            return False

    wait_until(ping, timeout_s=60, what="slurmctld to answer", hint=str(lay.log / "slurmctld.log"))


def start_slurmd(lay: Layout, cfg: SandboxConfig, node: str) -> None:
    """``slurmd -N <node>`` on the node's Port (does not wait for registration)."""
    if running_pid(lay.pid_file(f"slurmd-{node}"), "slurmd"):
        return
    _require_free(cfg.slurmd_port(node), f"slurmd of {node}")
    _daemonize(lay, f"slurmd-{node}", ["slurmd", "-N", node], slurm_env(lay))


def start_exporter(lay: Layout, cfg: SandboxConfig) -> None:
    """One process serving every node's dcgm-exporter-format /metrics on its own loopback port."""
    if not running_pid(lay.pid_file("dcgm-exporter"), DAEMONS["dcgm-exporter"]):
        for n in cfg.nodes:
            _require_free(cfg.exporter_port(n), f"DCGM exporter of {n}")
        listen = [arg for n in cfg.nodes for arg in ("--listen", f"{n}={cfg.exporter_port(n)}")]
        spawn([sys.executable, str(_EXPORTER), "--state-file", str(lay.gpu_state), *listen],
              pid_file=lay.pid_file("dcgm-exporter"), log_file=lay.log / "dcgm-exporter.log")
    wait_until(lambda: all(port_open(cfg.exporter_port(n)) for n in cfg.nodes), timeout_s=20,
               what="the DCGM exporters to listen", hint=str(lay.log / "dcgm-exporter.log"))


def start_prometheus(lay: Layout, cfg: SandboxConfig) -> None:
    """Prometheus (/usr/bin/prometheus) scraping the exporters; storage under ``<state>/prometheus``."""
    if not running_pid(lay.pid_file("prometheus"), DAEMONS["prometheus"]):
        _require_free(cfg.prometheus_port, "Prometheus")
        spawn(["prometheus", f"--config.file={lay.etc / 'prometheus.yml'}",
               f"--storage.tsdb.path={lay.prometheus}", "--storage.tsdb.retention.time=7d",
               f"--web.listen-address={cfg.prometheus_host}:{cfg.prometheus_port}", "--web.enable-lifecycle"],
              pid_file=lay.pid_file("prometheus"), log_file=lay.log / "prometheus.log")

    def ready() -> bool:
        try:
            return httpx.get(f"{cfg.prometheus_url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ready, timeout_s=60, what="Prometheus to be ready", hint=str(lay.log / "prometheus.log"))


def node_states(state_dir: Path | str | None = None) -> dict[str, str]:
    """node → sinfo long state (``%T``; a ``*`` suffix means not responding). Empty when unreachable."""
    lay = Layout.of(state_dir)
    try:
        out = LocalSource(env=slurm_env(lay)).run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout_s=15)
    except CommandError:
        return {}
    states: dict[str, str] = {}
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1].lower()
    return states
