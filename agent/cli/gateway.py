"""`warden gateway serve|usage|keys`: run the LLM gateway for other clients, read its ledger, mint its keys."""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.errors import warden_errors
from agent.cli.gateway_keys import keys_app
from agent.cli.render import JsonOption, Output, OutputOption, pick_output, stdout_console
from agent.cli.tables import Column, print_table
from agent.render import SCHEMA_VERSION, dump
from agent.store import warden_home
from tools.errors import ConfigError

__all__ = ["gateway_app", "default_gateway_db", "bind_socket"]

gateway_app = typer.Typer(help="Warden's OpenAI-compatible LLM gateway: serve it, mint its keys, read its usage.",
                          no_args_is_help=True)
gateway_app.add_typer(keys_app, name="keys")

ConfigOption = Annotated[Path | None, typer.Option(
    "--config", help="Gateway config (TOML or YAML); default $WARDEN_HOME/gateway.toml if it exists, else the "
    "built-in model only.")]


def default_gateway_db() -> Path:
    """The ledger and cache file the agent's in-process gateway writes: ``$WARDEN_HOME/gateway.db``."""
    return warden_home() / "gateway.db"


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is one).

    Raises:
        ConfigError: the port is taken, or the address cannot be bound (with what to do next).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(4096)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(f"{host}:{port} is already in use (another gateway?); pick another with --port, "
                              f"or stop what listens there (ss -ltnp 'sport = :{port}')") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}; check --host") from None
    return sock


@gateway_app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 4000,
    config: ConfigOption = None,
    db: Annotated[Path | None, typer.Option("--db", help="Ledger/cache SQLite file; default $WARDEN_HOME/gateway.db.")] = None,
) -> None:
    """Serve /v1/chat/completions, /v1/models, /healthz and /metrics until Ctrl-C.

    Prints where it listens once the port is bound. Clients set WARDEN_GATEWAY_URL=http://HOST:PORT/v1, and WARDEN_GATEWAY_KEY when the config has [[keys]] (mint one with `warden gateway keys create NAME`).

    Example: warden gateway serve --port 4000 --config gateway.toml
    """
    from agent.gateway_keys import default_gateway_config

    with warden_errors():
        from gateway.config import default_config, load_config
        from gateway.serve import uvicorn_config

        path = config or (default_gateway_config() if default_gateway_config().exists() else None)
        cfg = load_config(path) if path else default_config()
        ledger = db or default_gateway_db()
        ledger.parent.mkdir(parents=True, exist_ok=True)
        sock = bind_socket(host, port)
        import uvicorn

        server = uvicorn.Server(uvicorn_config(cfg, host, port, store_path=ledger))
        shown = f"[{host}]" if ":" in host else host
        print(f"warden gateway listening on http://{shown}:{sock.getsockname()[1]}/v1 "
              f"(config: {path or 'built-in model only'}; aliases: {', '.join(sorted(cfg.routes))}; "
              f"{len(cfg.keys)} key(s); ledger: {ledger}); Ctrl-C stops it", file=sys.stderr, flush=True)
        server.run(sockets=[sock])


_USAGE_GROUPS = ("key", "team", "model", "day", "provider", "run_id")
_USAGE_COLUMNS = {  # minimum width and priority of each column (what stays at 80 columns); groups asked for stay
    "key": (8, 9), "team": (6, 9), "model": (12, 9), "day": (10, 9), "provider": (8, 9), "run_id": (12, 9),
    "requests": (5, 8), "errors": (5, 7), "cache_hits": (5, 3), "prompt_tokens": (7, 4),
    "completion_tokens": (7, 4), "total_tokens": (7, 6), "cost_usd": (7, 7), "avg_latency_ms": (6, 5),
}


@gateway_app.command("usage")
def usage_cmd(
    by: Annotated[str, typer.Option(help="Comma-separated: key, team, model, day, provider, run_id.")] = "key,team,model,day",
    day: Annotated[str | None, typer.Option(help="Only this UTC day (YYYY-MM-DD).")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Ledger SQLite file; default $WARDEN_HOME/gateway.db.")] = None,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """Summarise the usage ledger: requests, errors, cache hits, tokens, cost and mean latency per group.

    At 80 columns the least useful columns are left out (and named); --output json has every field.

    Example: warden gateway usage --by team,day
    """
    fmt = pick_output(output, json_out)
    with warden_errors():
        from gateway.usage import summarize_usage

        path = db or default_gateway_db()
        if not path.exists():
            raise ConfigError(f"{path}: no gateway ledger yet (run a diagnosis or `warden gateway serve`)")
        wanted = [b.strip() for b in by.split(",") if b.strip()]
        rows = summarize_usage(path, by=wanted, day=day)
    if fmt in (Output.json, Output.yaml):
        typer.echo(dump({"schema_version": SCHEMA_VERSION, "rows": [r.model_dump() for r in rows]}, fmt.value).rstrip())
        return
    fields = [f for f in (list(rows[0].model_dump()) if rows else []) if f not in _USAGE_GROUPS or f in wanted]
    cols = [Column(f, *_USAGE_COLUMNS.get(f, (6, 1)), justify="left" if f in _USAGE_GROUPS else "right",
                   wrap=f not in _USAGE_GROUPS or f in ("key", "model")) for f in fields]
    data = [["" if r.model_dump()[f] is None else _num(r.model_dump()[f]) for f in fields] for r in rows]
    out = stdout_console()
    if not rows:
        out.print(f"No usage recorded in {path}.", markup=False)
        return
    print_table(out, f"gateway usage ({path})", cols, data, note="every field: --output json")


def _num(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)
