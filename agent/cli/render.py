"""The CLI's side of rendering: `--output FORMAT` and the consoles (the drawing lives in agent.render)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.render import build_view, diagnosis_document, dump, print_diagnosis, to_markdown
from tools.models.findings import Diagnosis

__all__ = ["Output", "OutputOption", "JsonOption", "pick_output", "emit_diagnosis", "render_diagnosis", "stdout_console"]


class Output(str, Enum):
    """``--output``: how a command prints its result."""

    rich = "rich"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


OutputOption = Annotated[Output | None, typer.Option(
    "--output", "-o", metavar="FORMAT", case_sensitive=False,
    help="rich (for people; the default), json or yaml (full values, for scripts), markdown.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --output json.")]


def pick_output(output: Output | None, json_flag: bool) -> Output:
    """The format asked for: ``--json`` is ``--output json``; both given must agree.

    Raises:
        typer.BadParameter: --json together with another --output.
    """
    if json_flag and output not in (None, Output.json):
        raise typer.BadParameter(f"--json and --output {output.value} disagree; give one of them")
    return Output.json if json_flag else (output or Output.rich)


def stdout_console() -> Console:
    """The console results go to: no highlighting of numbers or paths, never rich markup."""
    return Console(highlight=False, soft_wrap=True)


def emit_diagnosis(d: Diagnosis, fmt: Output, *, root: Path | None = None, console: Console | None = None) -> None:
    """Print ``d`` as ``fmt`` to stdout; ``root`` is the snapshot its evidence paths are relative to."""
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump(diagnosis_document(d, snapshot=root), fmt.value).rstrip("\n"))
    elif fmt is Output.markdown:
        typer.echo(to_markdown(build_view(d, root=root)), nl=False)
    else:
        print_diagnosis(build_view(d, root=root), console or stdout_console())


def render_diagnosis(d: Diagnosis, console: Console, *, root: Path | None = None) -> None:
    """Draw ``d`` on ``console`` for people (see agent.render.terminal)."""
    print_diagnosis(build_view(d, root=root), console)
