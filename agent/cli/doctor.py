"""`warden doctor`: check this host's config, PATH, Slurm, Prometheus, gateway, stores and policies."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from agent.cli.errors import warden_errors
from agent.cli.render import JsonOption, Output, OutputOption, pick_output, stdout_console
from agent.render import SCHEMA_VERSION, clean_line, dump

__all__ = ["doctor_cmd"]

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def doctor_cmd(
    only: Annotated[list[str] | None, typer.Option("--check", help="Run only this check (repeatable): config, path, "
                                                   "slurm, prometheus, gateway, stores, policies.")] = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """Check that this host is ready: config, PATH, Slurm commands, Prometheus, gateway, stores and policies.

    Each line says ok, warn or fail, with a hint for what to do. Nothing is changed: files are read, Slurm is asked read-only (`sinfo`, 5 s timeout), Prometheus and a remote gateway get a GET. Exit 1 when any check fails; warnings (for example no Slurm on a laptop that only replays snapshots) do not fail.

    Example: warden doctor
    """
    from agent.doctor import run_checks

    fmt = pick_output(output, json_out)
    with warden_errors(extra=(ValueError,)):
        results = run_checks(only)
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "checks": [r.model_dump() for r in results]},
                        fmt.value).rstrip())
    else:
        out = stdout_console()
        for r in results:
            line = Text(f"{r.status:<4} ", style=_STYLE[r.status]) + Text(f"{r.check:<10} ", style="bold")
            line.append(clean_line(r.detail))
            out.print(line)
            if r.hint and r.status != "ok":
                out.print(Text(f"{'':15}→ {clean_line(r.hint)}", style="dim"))
        fails = sum(r.status == "fail" for r in results)
        warns = sum(r.status == "warn" for r in results)
        out.print(Text(f"{fails} failed, {warns} warning(s), {len(results) - fails - warns} ok",
                       style="bold red" if fails else "green"))
    if any(r.status == "fail" for r in results):
        raise typer.Exit(1)
