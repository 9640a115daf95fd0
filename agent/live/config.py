"""``warden.toml``: how Warden reaches a live cluster, validated by pydantic.

Path: ``--config FILE``, else ``$WARDEN_HOME/warden.toml``. ``warden sandbox up`` writes a ready
one for the sandbox. Example::

    cluster = "alps"

    [slurm]                     # how Slurm's commands are run
    via = "ssh"                 # "local" (this host) or "ssh" (a login node, through Fabric)
    host = "login01"
    user = "warden"
    port = 22
    key_file = "~/.ssh/warden_ed25519"
    slurm_conf = "/etc/slurm/slurm.conf"   # optional SLURM_CONF
    source = "commands"         # or "pyslurm" (Slurm 25.11 sites with pyslurm installed)

    [prometheus]
    url = "http://prometheus:9090"
    exporter_url = "http://{node}:9400/metrics"   # optional: scrape the nodes Warden looks at

    [kernel_logs]               # per node
    kind = "command"            # "command": run over SSH on the node; "file": a path with {node}
    argv = ["journalctl", "-k", "--no-pager", "-o", "short-iso", "--since", "{since}"]
    host = "{node}"
    since_h = 2

    [job_logs]                  # StdOut/StdErr from `scontrol show job`, read from the end
    roots = ["/scratch", "/home"]   # only logs under these (resolved) and owned by the job's user; [] = none read
    max_bytes = 262144

    [[lustre]]
    format = "lctl-md-stats"
    fs = "scratch"
    argv = ["lctl", "get_param", "mdt.*.md_stats"]

    [checkpoints]
    pattern = "{workdir}/checkpoints"
    roots = ["/scratch"]        # optional; default: job_logs.roots

    [bounds]
    max_nodes = 32
    max_job_logs = 16
    sacct_window_h = 6
    parallel = 8                # fetches in flight at once
    timeout_s = 30              # per fetch

    [[checks]]                  # site overrides of check arguments, or enabled = false
    check = "job_timeout_without_checkpoint"
    args = { min_elapsed_min = 5 }

    [kubernetes]                # a Kubernetes cluster's nodes, pods and events (and its actions)
    kubeconfig = "~/.kube/config"   # omit with in_cluster = true (the pod's service account)
    context = "gpu-prod"
    namespaces = ["ml-team"]    # pods and events of these namespaces only; [] = all

    [notify]                    # notify_owner: channels and the site directory
    channels = ["slack", "email"]
    smtp_host = "smtp.example.org"
    [notify.directory]
    alice = { slack = "U012AB3CD", email = "alice@example.org" }

The file is data: it is parsed with tomllib and validated, never evaluated.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.store import warden_home
from tools.checks import SiteCheck
from tools.actions.notify_channels import NotifyConfig
from tools.errors import ConfigError
from tools.live.model import (CheckpointAccess, JobLogAccess, KernelLogAccess, LiveBounds, LivePlanInput,
                              LustreItem, SlurmAccess)

__all__ = ["PrometheusConfig", "KubernetesConfig", "LiveConfig", "default_config_path", "load_live_config", "render_toml"]


class PrometheusConfig(BaseModel):
    """Prometheus' HTTP API base URL (instant and range queries), and optionally each node's
    dcgm-exporter page (``exporter_url = "http://{node}:9400/metrics"``) for the nodes Warden looks at."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    exporter_url: str | None = None


class KubernetesConfig(BaseModel):
    """``[kubernetes]``: how the Kubernetes API is reached (kubeconfig and context, or in-cluster)."""

    model_config = ConfigDict(extra="forbid")

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    namespaces: list[str] = Field(default_factory=list)
    """Keep pods and events of these namespaces only (nodes are cluster-wide); empty keeps all."""


class LiveConfig(BaseModel):
    """The validated ``warden.toml`` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    cluster: str = "cluster"
    slurm: SlurmAccess = Field(default_factory=SlurmAccess)
    prometheus: PrometheusConfig = Field(default_factory=PrometheusConfig)
    kernel_logs: KernelLogAccess = Field(default_factory=KernelLogAccess)
    job_logs: JobLogAccess = Field(default_factory=JobLogAccess)
    lustre: list[LustreItem] = Field(default_factory=list)
    checkpoints: CheckpointAccess = Field(default_factory=CheckpointAccess)
    bounds: LiveBounds = Field(default_factory=LiveBounds)
    checks: list[SiteCheck] = Field(default_factory=list)
    """``[[checks]]``: site overrides of check arguments (``check``, ``args``, ``enabled``)."""
    kubernetes: KubernetesConfig | None = None
    """``[kubernetes]``: when present, live runs read its nodes, pods and events and can act on it."""
    notify: NotifyConfig | None = None
    """``[notify]``: notify_owner's channels and the site directory."""

    def plan_input(self) -> LivePlanInput:
        """The typed input of tools.live (tools/ never reads this file itself)."""
        s = self.slurm
        if s.via == "ssh" and not s.host:
            raise ConfigError("warden.toml: [slurm] via = \"ssh\" needs host")
        key = str(Path(s.key_file).expanduser()) if s.key_file else None
        return LivePlanInput(cluster=self.cluster, slurm=s.model_copy(update={"key_file": key}),
                             prometheus_url=self.prometheus.url, exporter_url=self.prometheus.exporter_url,
                             kernel_logs=self.kernel_logs,
                             job_logs=self.job_logs, lustre=self.lustre, checkpoints=self.checkpoints,
                             bounds=self.bounds, checks=self.checks)


def default_config_path() -> Path:
    """``$WARDEN_HOME/warden.toml``."""
    return warden_home() / "warden.toml"


def load_live_config(path: Path | None = None) -> LiveConfig:
    """Read and validate ``warden.toml``.

    Raises:
        ConfigError: naming the file when it is missing, not TOML, or fails validation (field and reason).
    """
    p = Path(path) if path else default_config_path()
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no live configuration (write one, or run `warden sandbox up`)") from None
    except RecursionError:
        raise ConfigError(f"{p}: cannot read: nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:  # TOMLDecodeError, or a 5,000-digit integer
        raise ConfigError(f"{p}: cannot read: {' '.join(str(e).split())[:200]}") from None
    try:
        cfg = LiveConfig.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"{p}: {'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}") from None
    cfg.plan_input()  # cross-field checks
    return cfg


def render_toml(cfg: LiveConfig) -> str:
    """``cfg`` as TOML text (None values left out), for ``warden sandbox up`` to write."""
    data = cfg.model_dump(mode="json", exclude_none=True)
    return "# Warden live configuration (see agent/live/config.py)\n" + tomli_w.dumps(data)
