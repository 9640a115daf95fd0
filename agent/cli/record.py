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

    Exit codes: 0 when every planned fetch succeeded, 1 when some failed (the snapshot is partial and
    says which in the output), 3 when nothing was captured (no snapshot is written).

    Example: warden record --out incidents/2026-11-29-gpu02/snapshot
    """
    err = Console(stderr=True, highlight=False)
    with warden_errors():
        cfg = load_live_config(config)
        with err.status("collecting evidence…") as status:
            run = collect_live(cfg, on_progress=lambda msg: status.update(Text(clean_line(msg))))
        failed = run.collector.failures
        for req, why in failed:
            err.print(clean_line(f"skipped {req.path}: {' '.join(why.split())[:200]}"), markup=False)
        if not run.artifacts:  # an empty snapshot is no recording: say so, write nothing
            err.print(f"warden: captured nothing ({len(failed)} fetch(es) failed); no snapshot written", markup=False)
            raise typer.Exit(EXIT_NOTHING_READ)
        write_snapshot(run.artifacts, out, captured_at=run.collector.captured_at, cluster=cfg.cluster,
                       checks=[c.model_dump() for c in cfg.checks])
    Console(highlight=False).print(f"recorded {len(run.artifacts)} files to {out} "
                                   f"(captured_at {run.collector.captured_at:%Y-%m-%dT%H:%M:%SZ})", markup=False)
    if failed:  # less than its plan: the snapshot is kept, and the exit status says it is partial
        err.print(f"warden: {len(failed)} of {len(failed) + len(run.artifacts)} planned fetches failed; "
                  "the snapshot is partial", markup=False)
        raise typer.Exit(EXIT_PARTIAL)


EXIT_NOTHING_READ = 3
EXIT_PARTIAL = 1
