"""The ``--gateway-config FILE`` option shared by the commands that run the agent (diagnose, act, eval, chat)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["GatewayConfigOption"]

GatewayConfigOption = Annotated[Path | None, typer.Option(
    "--gateway-config", help="Gateway config (TOML/YAML) routing model aliases to providers; "
    "default $WARDEN_HOME/gateway.toml when it exists, else the built-in model only.")]
