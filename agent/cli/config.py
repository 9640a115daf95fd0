"""`warden config show`: the effective configuration and where each value came from."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from agent.cli.errors import warden_errors
from agent.cli.render import JsonOption, Output, OutputOption, pick_output, stdout_console
from agent.render import SCHEMA_VERSION, clean_line, dump

__all__ = ["config_app", "config_show_cmd"]

config_app = typer.Typer(help="Warden's configuration: what is in effect and where it came from.",
                         no_args_is_help=True)


@config_app.command("show")
def config_show_cmd(
    key: Annotated[str | None, typer.Argument(help="Only keys starting with this (e.g. limits, gateway, live).")] = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show every effective setting, its value and its source: default, a file ($WARDEN_HOME/config.yaml, warden.toml, gateway.toml) or an environment variable.

    Secrets are never shown (a gateway key is reported as set or unset). An invalid file is reported with its field, exit 2.

    Example: warden config show limits
    """
    import json

    from agent.effective_config import effective_config

    fmt = pick_output(output, json_out)
    with warden_errors():
        settings = [s for s in effective_config() if key is None or s.key.startswith(key)]
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "settings": [s.model_dump() for s in settings]},
                        fmt.value).rstrip())
        return
    out = stdout_console()
    for s in settings:
        value = s.value if isinstance(s.value, str) else json.dumps(s.value)
        line = Text(s.key, style="bold") + Text(" = ") + Text(clean_line(value), style="cyan")
        line.append(f"  ({s.source}" + (f"; {s.note}" if s.note else "") + ")", style="dim")
        out.print(line, soft_wrap=False)
