"""Which gateway config a run uses, and what it says about the model behind an alias.

The config is, in order: the file given (``--gateway-config FILE``), ``$WARDEN_HOME/gateway.toml``
(or ``gateway.yaml`` / ``gateway.yml``) when it exists, else the offline default (the built-in model
only). The alias ``warden-builtin`` is always routable: a config that does not define it gets the
built-in provider and route added, so ``warden eval`` can still compare against the built-in model.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.store import warden_home
from gateway.client import GATEWAY_URL_ENV
from gateway.config import (BUILTIN_MODEL, BuiltinProviderConfig, GatewayConfig, OpenAICompatProviderConfig,
                            default_config, load_config)
from gateway.errors import ConfigError as GatewayConfigError
from tools.errors import ConfigError

__all__ = ["CONFIG_NAMES", "builtin_only", "check_alias", "discovered_config_path", "load_gateway_config",
           "model_limits", "route_parallelism", "wants_compact_tools"]

CONFIG_NAMES = ("gateway.toml", "gateway.yaml", "gateway.yml")
"""File names looked for under ``$WARDEN_HOME``, first found wins."""


def discovered_config_path() -> Path | None:
    """``$WARDEN_HOME/gateway.toml`` (or .yaml/.yml) if one exists."""
    for name in CONFIG_NAMES:
        p = warden_home() / name
        if p.is_file():
            return p
    return None


def _with_builtin(cfg: GatewayConfig) -> GatewayConfig:
    if BUILTIN_MODEL in cfg.routes:
        return cfg
    names = {p.name for p in cfg.providers}
    builtin = next((p.name for p in cfg.providers if isinstance(p, BuiltinProviderConfig)), None)
    providers = list(cfg.providers)
    if builtin is None:
        builtin = "builtin" if "builtin" not in names else "warden-builtin"
        providers.append(BuiltinProviderConfig(name=builtin))
    return cfg.model_copy(update={"providers": providers, "routes": {**cfg.routes, BUILTIN_MODEL: [builtin]}})


def load_gateway_config(path: Path | None = None) -> GatewayConfig:
    """The gateway config for this run (see the module docstring for the order).

    Raises:
        ConfigError: naming the file when it is unreadable or invalid (the CLI's one line, exit 2).
    """
    path = path or discovered_config_path()
    if path is None:
        return default_config()
    try:
        return _with_builtin(load_config(path))
    except GatewayConfigError as e:
        raise ConfigError(str(e)) from None


def check_alias(alias: str, config: GatewayConfig) -> None:
    """Refuse an alias the config does not route (unless a remote gateway, ``WARDEN_GATEWAY_URL``, decides).

    Raises:
        ConfigError: naming the alias and the routable ones.
    """
    if os.environ.get(GATEWAY_URL_ENV) or alias in config.routes:
        return
    where = discovered_config_path()
    hint = f"(from {where})" if where else "(give --gateway-config FILE or write $WARDEN_HOME/gateway.toml)"
    raise ConfigError(f"unknown model alias {alias!r}; the gateway config routes {sorted(config.routes)} {hint}")


def model_limits(config: GatewayConfig | None, alias: str) -> tuple[int | None, int | None]:
    """(max_output_tokens, context_tokens) of the model behind an alias: the smallest over the
    OpenAI-compatible providers of its route (any of them may answer); (None, None) when unknown."""
    if config is None:
        return None, None
    chain = config.routes.get(alias, [])
    providers = [p for p in config.providers if p.name in chain and isinstance(p, OpenAICompatProviderConfig)]
    outs = [p.max_output_tokens for p in providers if p.max_output_tokens is not None]
    ctxs = [p.context_tokens for p in providers if p.context_tokens is not None]
    return (min(outs) if outs else None), (min(ctxs) if ctxs else None)


COMPACT_BELOW_TOKENS = 16384
"""``compact_tools`` unset: tool definitions are compacted for a context window of at most this."""


def wants_compact_tools(config: GatewayConfig | None, alias: str) -> bool:
    """Whether the tool definitions sent for ``alias`` are compacted: when any OpenAI-compatible
    provider of its route asks for it (``compact_tools = true``, or unset with ``context_tokens`` at
    most ``COMPACT_BELOW_TOKENS``)."""
    if config is None:
        return False
    chain = config.routes.get(alias, [])
    for p in config.providers:
        if p.name in chain and isinstance(p, OpenAICompatProviderConfig):
            small = p.context_tokens is not None and p.context_tokens <= COMPACT_BELOW_TOKENS
            if p.compact_tools or (p.compact_tools is None and small):
                return True
    return False


def builtin_only(config: GatewayConfig | None, alias: str) -> bool:
    """Whether every provider on the alias's route is a built-in one (no LLM can see the request), so the
    in-process gateway is reached without the OpenAI SDK (``gateway.inprocess``); False for an alias the
    config does not route, or when ``WARDEN_GATEWAY_URL`` names a remote gateway."""
    if config is None or os.environ.get(GATEWAY_URL_ENV):
        return False
    chain = config.routes.get(alias) or []
    kinds = {p.name: isinstance(p, BuiltinProviderConfig) for p in config.providers}
    return bool(chain) and all(kinds.get(name, False) for name in chain)


def route_parallelism(config: GatewayConfig | None, alias: str, wanted: int) -> int:
    """How many runs may use ``alias`` at once: ``wanted``, lowered to the smallest
    ``parallel_requests`` of the OpenAI-compatible providers on its route."""
    if config is None:
        return wanted
    chain = config.routes.get(alias, [])
    caps = [p.parallel_requests for p in config.providers
            if p.name in chain and isinstance(p, OpenAICompatProviderConfig) and p.parallel_requests is not None]
    return min([wanted, *caps])
