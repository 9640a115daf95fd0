"""What `warden diagnose --live` needs, kept out of agent/cli/diagnose.py so that file changes minimally."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.live.act import diagnose_live
from agent.live.config import load_live_config
from tools.errors import ConfigError
from tools.models.findings import Diagnosis

__all__ = ["live_diagnose_fn"]


def live_diagnose_fn(live: bool, path: Path | None, config: Path | None) -> Callable[..., Diagnosis]:
    """A function with ``diagnose_path``'s call shape that diagnoses the live cluster instead.

    Raises:
        ConfigError: neither PATH nor --live given, or both; or the live config is invalid.
    """
    if not live:
        raise ConfigError("give an incident or snapshot PATH, or --live")
    if path is not None:
        raise ConfigError("give either PATH or --live, not both")
    cfg = load_live_config(config)

    def run(_path: object, question: str | None, *, strict: bool = False, **kwargs: Any) -> Diagnosis:
        # Live fetch failures are always recorded as unreadable evidence (a dead node must not hide the
        # cluster); ``strict`` applies to recorded files.
        out = diagnose_live(cfg, question, **kwargs)
        assert out.diagnosis is not None
        return out.diagnosis

    return run
