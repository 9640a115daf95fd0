"""Typed, validated gateway configuration, loaded from TOML or YAML.

Example (TOML)::

    [[providers]]
    name = "local-vllm"
    kind = "openai_compat"
    openai_base_url = "http://127.0.0.1:8000/v1"
    openai_model = "Qwen/Qwen2.5-7B-Instruct"
    openai_timeout_s = 30
    max_output_tokens = 1024           # the model behind this provider
    context_tokens = 32768
    tool_choice = "auto"               # what this server accepts (auto | required | none)

    [[providers]]
    name = "builtin"
    kind = "builtin"

    [routes]
    "warden-default" = ["local-vllm", "builtin"]

    [prices."Qwen/Qwen2.5-7B-Instruct"]
    input_usd_per_mtok = 0.2
    output_usd_per_mtok = 0.6

    [[keys]]
    name = "alice"
    team = "ml"
    key_sha256 = "…"           # gateway.budgets.hash_key("sk-warden-…")
    rpm = 60
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from gateway.errors import ConfigError

__all__ = [
    "BUILTIN_MODEL",
    "BuiltinProviderConfig",
    "OpenAICompatProviderConfig",
    "ProviderConfig",
    "RetryConfig",
    "CooldownConfig",
    "CacheConfig",
    "Price",
    "LimitsConfig",
    "VirtualKey",
    "TeamConfig",
    "RedactionPattern",
    "RedactionConfig",
    "GatewayConfig",
    "default_config",
    "load_config",
]

BUILTIN_MODEL = "warden-builtin"
"""Alias served by the built-in offline diagnostician in the default config."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # inf/nan validate as floats and then misbehave


class BuiltinProviderConfig(_Strict):
    """The built-in deterministic diagnostician (offline, never redacted)."""

    name: str = "builtin"
    kind: Literal["builtin"] = "builtin"


class OpenAICompatProviderConfig(_Strict):
    """Any OpenAI-compatible server: the OpenAI API, vLLM, llama.cpp server, Ollama."""

    name: str
    kind: Literal["openai_compat"] = "openai_compat"
    openai_base_url: str
    """Base URL including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``."""
    openai_model: str | None = None
    """Upstream model name; None sends the requested alias unchanged."""
    openai_api_key: SecretStr | None = None
    openai_api_key_env: str | None = None
    """Environment variable holding the API key (read when the provider starts)."""
    openai_timeout_s: float = Field(60.0, gt=0)
    """Read timeout for one upstream attempt (s)."""
    openai_connect_timeout_s: float = Field(5.0, gt=0)
    openai_max_connections: int = Field(256, ge=1)
    openai_extra_headers: dict[str, str] = Field(default_factory=dict)
    parallel_requests: int | None = Field(None, ge=1)
    """Requests the server answers at once (llama-cpp-python's server: 1; llama.cpp's: its
    ``--parallel``); ``warden eval`` diagnoses no more incidents at once for a model routed here, so
    that requests do not queue behind each other into their timeouts. None: no limit known."""
    max_output_tokens: int | None = Field(None, ge=1)
    """Most completion tokens the model may produce per request: sent as ``max_tokens`` when the
    request asks for more or for nothing (a small model otherwise writes prose until the timeout)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The request field the completion limit is sent as: ``max_tokens`` (honoured by vLLM,
    llama.cpp, llama-cpp-python and Ollama; llama-cpp-python ignores ``max_completion_tokens``) or
    ``max_completion_tokens`` (OpenAI's reasoning models, which reject ``max_tokens``)."""
    context_tokens: int | None = Field(None, ge=256)
    """The model's context window; a request whose estimated prompt plus ``max_tokens`` exceeds it
    is not sent (400 ``context_length_exceeded``, or the next provider of the route)."""
    compact_tools: bool | None = None
    """Send tool definitions compacted (first-sentence descriptions, schemas without explanations,
    every bound kept); None compacts when ``context_tokens`` is at most 16384."""
    tool_choice: Literal["auto", "required", "none"] | None = None
    """Sent instead of the client's ``tool_choice`` when tools are offered; None passes it on.
    Servers that reject ``required`` (HTTP 500 from llama-cpp-python's) need ``auto``."""
    tool_messages: Literal["tool", "user"] = "tool"
    """How tool results are sent: as ``tool`` messages (OpenAI), or as ``user`` messages naming the
    tool (``user``: for chat templates that drop ``tool`` messages, such as llama-cpp-python's
    ``chatml-function-calling``, under which the model would never see what a tool returned)."""
    null_content: Literal["null", "empty"] = "null"
    """How an assistant message without text is sent: ``null`` (OpenAI) or ``empty`` (``""``, for
    servers that reject ``content: null``, such as llama-cpp-python's)."""


ProviderConfig = Annotated[BuiltinProviderConfig | OpenAICompatProviderConfig, Field(discriminator="kind")]


class RetryConfig(_Strict):
    """Retries of one provider before falling back to the next."""

    attempts_per_provider: int = Field(2, ge=1, le=10)
    backoff_initial_s: float = Field(0.05, ge=0, le=60)
    backoff_max_s: float = Field(2.0, ge=0, le=300)
    """Longest wait between retries (s); bounded so a typo cannot park a request for ever."""


class CooldownConfig(_Strict):
    """Skip a provider after ``failures`` failed attempts within ``window_s`` for ``cooldown_s``."""

    failures: int = Field(3, ge=1)
    window_s: float = Field(60.0, gt=0)
    cooldown_s: float = Field(30.0, ge=0)


class CacheConfig(_Strict):
    """Exact-match response cache."""

    enabled: bool = True
    ttl_s: float = Field(3600.0, gt=0)
    cache_nondeterministic: bool = False
    """Also cache requests whose temperature is unset or > 0 (normally only temperature 0 is)."""
    memory_entries: int = Field(4096, ge=0)
    """Size of the in-memory front of the SQLite cache."""


class Price(_Strict):
    """Price of an upstream model, USD per million tokens."""

    input_usd_per_mtok: float = Field(0.0, ge=0)
    output_usd_per_mtok: float = Field(0.0, ge=0)


class LimitsConfig(_Strict):
    """Budgets and rate limits. None means unlimited. Budgets reset at 00:00 UTC."""

    rpm: int | None = Field(None, ge=0)
    """Requests per rolling minute."""
    tpm: int | None = Field(None, ge=0)
    """Tokens (prompt + completion) per rolling minute."""
    tokens_per_day: int | None = Field(None, ge=0)
    cost_per_day_usd: float | None = Field(None, ge=0)


class VirtualKey(LimitsConfig):
    """A virtual key, stored only as its SHA-256 hex digest."""

    name: str
    team: str | None = None
    key_sha256: str

    @field_validator("key_sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", v):
            raise ValueError("key_sha256 must be 64 lowercase hex digits (use gateway.budgets.hash_key)")
        return v


class TeamConfig(LimitsConfig):
    """Budgets and rate limits shared by every key of a team."""

    name: str


class RedactionPattern(_Strict):
    """An extra pattern to redact; matches become ``[REDACTED:<name>]``."""

    name: str
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from exc
        return v


class RedactionConfig(_Strict):
    """Redaction of outgoing text for every provider except the built-in one."""

    enabled: bool = True
    extra_patterns: list[RedactionPattern] = Field(default_factory=list)


class GatewayConfig(_Strict):
    """The whole gateway configuration.

    Raises (via load_config / validation):
        ConfigError: when a route names an unknown provider, names clash, or a key's team is unknown.
    """

    providers: list[ProviderConfig] = Field(default_factory=lambda: [BuiltinProviderConfig()])
    routes: dict[str, list[str]] = Field(default_factory=lambda: {BUILTIN_MODEL: ["builtin"]})
    """Model alias -> ordered provider names (first is tried first)."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
    cooldown: CooldownConfig = Field(default_factory=CooldownConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    prices: dict[str, Price] = Field(default_factory=dict)
    """Upstream model name -> price; unknown models cost 0."""
    keys: list[VirtualKey] = Field(default_factory=list)
    """Virtual keys; when empty, the gateway is open (in-process use) and callers are 'anonymous'."""
    teams: list[TeamConfig] = Field(default_factory=list)
    run_cost_cap_usd: float | None = Field(None, ge=0)
    """Cap on cost per ``X-Warden-Run-Id``; None is unlimited."""
    run_token_cap: int | None = Field(None, ge=0)
    """Cap on tokens per ``X-Warden-Run-Id``; None is unlimited."""
    reserve_output_tokens: int = Field(4096, ge=1)
    """Completion tokens a budgeted request without ``max_tokens`` reserves (and is then sent with)."""
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    ledger_flush_interval_s: float = Field(0.2, gt=0, le=60)
    """Seconds between ledger flushes (at most 60: an infinite wait kills the store's writer thread)."""

    @model_validator(mode="after")
    def _consistent(self) -> GatewayConfig:
        names = [p.name for p in self.providers]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate provider names: {names}")
        for alias, chain in self.routes.items():
            if not chain:
                raise ValueError(f"route {alias!r} has no providers")
            unknown = [n for n in chain if n not in names]
            if unknown:
                raise ValueError(f"route {alias!r} names unknown providers {unknown}")
        teams = {t.name for t in self.teams}
        for key in self.keys:
            if key.team is not None and self.teams and key.team not in teams:
                raise ValueError(f"key {key.name!r} names unknown team {key.team!r}")
        if len({k.key_sha256 for k in self.keys}) != len(self.keys):
            raise ValueError("two virtual keys share a hash")
        return self


def default_config() -> GatewayConfig:
    """The offline default: alias ``warden-builtin`` served by the built-in diagnostician."""
    return GatewayConfig()


def load_config(path: str | Path) -> GatewayConfig:
    """Load a gateway config from a ``.toml``, ``.yaml`` or ``.yml`` file.

    Raises:
        ConfigError: naming the file when it is unreadable, not TOML/YAML, or invalid.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read gateway config: {exc}") from exc
    try:
        if p.suffix == ".toml":
            data = tomllib.loads(text)
        elif p.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"{p}: gateway config must be .toml, .yaml or .yml")
    except RecursionError:
        raise ConfigError(f"{p}: cannot parse gateway config: nested too deeply") from None
    except (tomllib.TOMLDecodeError, yaml.YAMLError, ValueError) as exc:  # ValueError: a 5,000-digit integer
        raise ConfigError(f"{p}: cannot parse gateway config: {exc}") from exc
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{p}: invalid gateway config: {exc}") from exc
