"""Where a front end's answers come from: the live cluster (warden.toml) or a recording.

The Slack app, ``warden serve`` and ``warden watch`` each answer about one target, chosen when they
start: ``live`` (the cluster ``warden.toml`` describes; commands run there once policy and approval
allow) or a snapshot or incident directory (replayed through the same parsers; nothing can run
against a recording, so approved plans are reported as dry runs). A runbook's ``read:`` list narrows
what a live collection fetches (Slurm is always read).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.live.config import LiveConfig, load_live_config
from tools.actions.base import CommandRunner
from tools.errors import SnapshotError
from tools.read.context import ReadContext

__all__ = ["Family", "FAMILIES", "Target", "restrict"]

Family = Literal["slurm", "prometheus", "kernel_logs", "job_logs", "lustre", "kubernetes"]
FAMILIES: tuple[str, ...] = ("slurm", "prometheus", "kernel_logs", "job_logs", "lustre", "kubernetes")


def restrict(cfg: LiveConfig, read: list[str] | None) -> LiveConfig:
    """``cfg`` fetching only the evidence families in ``read`` (None: everything configured)."""
    if not read:
        return cfg
    want = set(read)
    upd: dict[str, object] = {}
    if "prometheus" not in want:
        upd["prometheus"] = cfg.prometheus.model_copy(update={"url": None, "exporter_url": None})
    if "kernel_logs" not in want:
        upd["kernel_logs"] = cfg.kernel_logs.model_copy(update={"kind": "none"})
    if "job_logs" not in want:
        upd["job_logs"] = cfg.job_logs.model_copy(update={"enabled": False})
    if "lustre" not in want:
        upd["lustre"] = []
    if "kubernetes" not in want:
        upd["kubernetes"] = None
    return cfg.model_copy(update=upd)


def _snapshot_dir(path: Path) -> tuple[Path, str | None]:
    from evals.incident import INCIDENT_FILE, load_incident

    if (path / INCIDENT_FILE).is_file():
        inc = load_incident(path)
        return inc.snapshot, inc.question
    if (path / "manifest.yaml").is_file():
        return path, None
    if (path / "snapshot" / "manifest.yaml").is_file():
        return path / "snapshot", None
    raise SnapshotError(f"{path}: not an incident (incident.yaml) or snapshot (manifest.yaml) directory")


@dataclass
class Target:
    """One target: ``live`` set (a LiveConfig) or ``snapshot`` set (a directory)."""

    live: LiveConfig | None = None
    snapshot: Path | None = None

    @classmethod
    def of(cls, *, snapshot: Path | None = None, config: Path | None = None) -> Target:
        """The snapshot target when ``snapshot`` is given, else the live cluster of ``config``
        (default $WARDEN_HOME/warden.toml).

        Raises:
            ConfigError: no or an invalid warden.toml; SnapshotError: not a snapshot or incident.
        """
        if snapshot is not None:
            _snapshot_dir(Path(snapshot))  # fail at start-up, not at the first alert
            return cls(snapshot=Path(snapshot))
        return cls(live=load_live_config(config))

    @property
    def name(self) -> str:
        """``live:<cluster>`` or the snapshot path."""
        return f"live:{self.live.cluster}" if self.live else str(self.snapshot)

    @property
    def is_live(self) -> bool:
        """True for the live cluster (commands can run)."""
        return self.live is not None

    def default_question(self) -> str | None:
        """The incident's own question for an incident directory, else None."""
        return _snapshot_dir(self.snapshot)[1] if self.snapshot else None

    def context(self, read: list[str] | None = None, *, runner: CommandRunner | None = None) -> tuple[ReadContext, LiveConfig | None]:
        """A ReadContext over the target's evidence now (a live collection, or the snapshot replayed)
        and the live config used (None for a snapshot).

        Raises:
            WardenError: the snapshot is invalid; a live collection records failed fetches as unreadable.
        """
        if self.live is None:
            assert self.snapshot is not None
            return ReadContext.from_snapshot(_snapshot_dir(self.snapshot)[0]), None
        from agent.live.act import collect_live

        cfg = restrict(self.live, read)
        return collect_live(cfg, runner=runner).ctx, cfg
