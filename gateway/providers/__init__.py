"""Gateway providers: the built-in diagnostician and any OpenAI-compatible server."""

from __future__ import annotations

from gateway.config import BuiltinProviderConfig, OpenAICompatProviderConfig
from gateway.providers.base import Provider
from gateway.providers.builtin import BuiltinProvider, RespondFn

__all__ = ["BuiltinProvider", "OpenAICompatProvider", "Provider", "build_provider"]


def build_provider(
    config: BuiltinProviderConfig | OpenAICompatProviderConfig, *, builtin_respond: RespondFn | None = None
) -> Provider:
    """Construct the provider a config entry describes.

    Args:
        config: One ``providers`` entry of the gateway config.
        builtin_respond: Message function for the built-in provider (None: the diagnostician).
    """
    if isinstance(config, BuiltinProviderConfig):
        return BuiltinProvider(config, respond=builtin_respond)
    from gateway.providers.openai_compat import OpenAICompatProvider  # aiohttp: only when an upstream is configured

    return OpenAICompatProvider(config)


def __getattr__(name: str) -> object:
    if name == "OpenAICompatProvider":  # imported on first use: it pulls in aiohttp
        from gateway.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider
    raise AttributeError(name)
