"""`warden gateway keys create|list|revoke`: the gateway's virtual keys (library: agent.gateway_keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from agent.cli.render import JsonOption, Output, OutputOption, pick_output, stdout_console
from agent.cli.tables import Column, print_table
from agent.render import SCHEMA_VERSION, dump

__all__ = ["keys_app"]

keys_app = typer.Typer(help="Virtual keys of the gateway, stored hashed in its config file.", no_args_is_help=True)

KeysConfig = Annotated[Path | None, typer.Option(
    "--config", help="Gateway config to edit (TOML or YAML); default $WARDEN_HOME/gateway.toml.")]


@keys_app.command("create")
def keys_create_cmd(
    name: Annotated[str, typer.Argument(help="Who or what uses the key (shown in the ledger and `gateway usage`).")],
    team: Annotated[str | None, typer.Option(help="Team whose budgets the key shares.")] = None,
    rpm: Annotated[int | None, typer.Option(min=0, help="Requests per minute.")] = None,
    tpm: Annotated[int | None, typer.Option(min=0, help="Tokens per minute.")] = None,
    tokens_per_day: Annotated[int | None, typer.Option(min=0, help="Tokens per UTC day.")] = None,
    cost_per_day_usd: Annotated[float | None, typer.Option(min=0, help="Spend per UTC day, USD.")] = None,
    config: KeysConfig = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """Mint a virtual key and add its SHA-256 to the gateway config; the key is printed once, never stored.

    Once a config has keys the gateway refuses callers without one. Restart `warden gateway serve` to load the new key; clients send it as WARDEN_GATEWAY_KEY (or Authorization: Bearer KEY).

    Example: warden gateway keys create oncall-bot --team hpc-ops --rpm 120
    """
    from agent.gateway_keys import create_key

    fmt = pick_output(output, json_out)
    with warden_errors():
        edit = create_key(name, team=team, rpm=rpm, tpm=tpm, tokens_per_day=tokens_per_day,
                          cost_per_day_usd=cost_per_day_usd, path=config)
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "key": edit.key, "config": str(edit.path),
                         **edit.info.model_dump()}, fmt.value).rstrip())
        return
    typer.echo(edit.key)
    typer.echo(f"key {name!r} added to {edit.path} (sha256 {edit.info.key_sha256}); it is shown only this once: "
               "store it now. Restart `warden gateway serve` to load it; clients set WARDEN_GATEWAY_KEY to it."
               + (" The file was rewritten from its data: comments were not kept." if edit.rewritten else ""),
               err=True)


@keys_app.command("list")
def keys_list_cmd(
    config: KeysConfig = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """List the configured keys: name, team, limits and the hash (the keys themselves are never stored).

    Example: warden gateway keys list --output json
    """
    from agent.gateway_keys import default_gateway_config, list_keys

    fmt = pick_output(output, json_out)
    with warden_errors():
        keys = list_keys(config)
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "keys": [k.model_dump() for k in keys]}, fmt.value).rstrip())
        return
    out = stdout_console()
    if not keys:
        out.print(f"No keys in {config or default_gateway_config()}: the gateway is open to every caller. "
                  "Mint one with `warden gateway keys create NAME`.", markup=False)
        return
    cols = [Column("name", 10, 9), Column("team", 6, 7), Column("rpm", 4, 5, "right"), Column("tpm", 6, 4, "right"),
            Column("tokens/day", 8, 3, "right"), Column("USD/day", 6, 3, "right"), Column("sha256", 12, 6, wrap=False)]
    rows = [[k.name, k.team or "-", _opt(k.rpm), _opt(k.tpm), _opt(k.tokens_per_day), _opt(k.cost_per_day_usd),
             k.key_sha256[:16]] for k in keys]
    print_table(out, None, cols, rows, note="full hashes: --output json")


def _opt(v: object) -> str:
    return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


@keys_app.command("revoke")
def keys_revoke_cmd(
    name: Annotated[str, typer.Argument(help="The key's name (see `warden gateway keys list`).")],
    config: KeysConfig = None,
) -> None:
    """Remove a key from the gateway config; a running gateway refuses it after a restart.

    Example: warden gateway keys revoke oncall-bot
    """
    from agent.gateway_keys import revoke_key

    with warden_errors():
        edit = revoke_key(name, config)
    stdout_console().print(f"revoked key {name!r} (sha256 {edit.info.key_sha256[:16]}…) in {edit.path}; restart "
                           "`warden gateway serve` to apply it"
                           + (" (the file was rewritten from its data: comments were not kept)" if edit.rewritten
                              else ""), markup=False)
