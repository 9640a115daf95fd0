"""`warden record --out DIR`: capture a live snapshot (DESIGN.md's format) for later replay."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from agent.cli.errors import warden_errors
from agent.render.safe import clean_line
from agent.live.act import collect_live
from agent.live.config import load_live_config
from agent.live.record import write_snapshot

__all__ = ["record_cmd"]


def record_cmd(
    out: Annotated[Path, typer.Option("--out", help="New (or empty) directory to write the snapshot into.")],
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
) -> None:
    """Fetch the live cluster's evidence once and save it as a snapshot: the raw outputs byte for
    byte and a manifest.yaml naming each file's format, command or URL, and node or job. Replay it
    with `warden diagnose DIR`.

    Example: warden record --out incidents/2026-11-29-gpu02/snapshot
    """
    err = Console(stderr=True, highlight=False)
    with warden_errors():
        cfg = load_live_config(config)
        with err.status("collecting evidence…") as status:
            run = collect_live(cfg, on_progress=lambda msg: status.update(Text(clean_line(msg))))
        write_snapshot(run.artifacts, out, captured_at=run.collector.captured_at, cluster=cfg.cluster,
                       checks=[c.model_dump() for c in cfg.checks])
    for req, why in run.collector.failures:
        err.print(clean_line(f"skipped {req.path}: {' '.join(why.split())[:200]}"), markup=False)
    Console(highlight=False).print(f"recorded {len(run.artifacts)} files to {out} "
                                   f"(captured_at {run.collector.captured_at:%Y-%m-%dT%H:%M:%SZ})", markup=False)
