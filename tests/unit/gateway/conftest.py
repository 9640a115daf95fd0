"""Fixtures for gateway tests: real loopback upstreams and real gateway apps (no mocks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from gateway.app import GatewayApp, create_app
from gateway.config import GatewayConfig
from gateway.testing import echo_respond as builtin_echo, serve_in_thread, StubUpstream


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstreams() -> Iterator[Callable[[StubUpstream], str]]:
    """Start StubUpstreams on loopback; returns ``start(stub) -> base_url``; all stop at teardown."""
    with ExitStack() as stack:
        yield lambda stub: stack.enter_context(serve_in_thread(stub))


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Callable[..., GatewayApp]]:
    """Build gateway apps from config dicts; ``respond`` defaults to ``builtin_echo``."""
    apps: list[GatewayApp] = []

    def make(config: dict[str, Any], *, respond: Callable[..., dict[str, Any]] = builtin_echo,
             store: str = "gateway.sqlite3") -> GatewayApp:
        cfg = GatewayConfig.model_validate(
            {"retry": {"attempts_per_provider": 1, "backoff_initial_s": 0.001, "backoff_max_s": 0.01}, **config}
        )
        app = create_app(cfg, store_path=tmp_path / store, builtin_respond=respond)
        apps.append(app)
        return app

    yield make
    for app in apps:
        if not app._closed:
            app.store.close()
