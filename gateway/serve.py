"""Run the gateway under uvicorn for clients outside the process (``warden gateway serve``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import platformdirs
import uvicorn

from gateway.app import create_app
from gateway.config import GatewayConfig

__all__ = ["default_store_path", "serve", "uvicorn_config"]


def default_store_path() -> Path:
    """``<user data dir>/warden/gateway.sqlite3`` (platformdirs)."""
    return Path(platformdirs.user_data_dir("warden")) / "gateway.sqlite3"


def uvicorn_config(
    config: GatewayConfig, host: str = "127.0.0.1", port: int = 4000, *, store_path: str | Path | None = None
) -> uvicorn.Config:
    """The uvicorn config serving a new gateway app: no access log, httptools/uvloop when installed."""
    app = create_app(config, store_path=store_path or default_store_path())
    fast = importlib.util.find_spec("httptools") is not None
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        access_log=False,
        log_level="warning",
        http="httptools" if fast else "h11",
        loop=loop,
        backlog=4096,
        timeout_keep_alive=30,
    )


def serve(
    config: GatewayConfig, host: str = "127.0.0.1", port: int = 4000, *, store_path: str | Path | None = None
) -> None:
    """Serve the gateway until interrupted; the ledger is flushed on shutdown.

    Args:
        config: Validated gateway config.
        host: Interface to bind (default loopback only).
        port: TCP port.
        store_path: Ledger/cache SQLite file; default ``default_store_path()``.
    """
    uvicorn.Server(uvicorn_config(config, host, port, store_path=store_path)).run()
