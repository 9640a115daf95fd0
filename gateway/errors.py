"""Warden gateway exceptions, each mapped to an HTTP status and an OpenAI-style error body.

Exception tree::

    GatewayError                      base; .status (HTTP), .code, .type
    ├── ConfigError                   invalid gateway config file or value (no HTTP use)
    ├── BadRequest                    400: malformed body, missing model/messages
    ├── AuthError                     401: missing or unknown virtual key
    ├── UnknownModel                  404: alias not in the routing table
    ├── LimitExceeded                 429: a budget, rate limit or run cap; .limit names it
    ├── ProviderError                 one upstream attempt failed; .provider, .retryable
    │   ├── ProviderTimeout           connect/read timeout (retryable)
    │   ├── ProviderConnectionError   refused, reset, DNS (retryable)
    │   ├── ProviderRateLimited       upstream 429 (retryable)
    │   ├── ProviderServerError       upstream 5xx (retryable)
    │   ├── ProviderRejected          upstream 4xx other than 429 (not retried)
    │   │   └── ProviderContextExceeded  the prompt does not fit the provider's context_tokens (not sent)
    │   └── ProviderBadResponse       upstream 2xx that is not a chat.completion (retryable)
    ├── AllProvidersFailed            502: every provider in the chain failed; .attempts
    │                                 (400 context_length_exceeded when the last one did not fit,
    │                                 504 upstream_timeout when every attempt timed out)
    └── DeadlineExceeded              504: no answer within the caller's X-Warden-Deadline-S

Every error renders as ``{"error": {"message", "type", "param", "code"}}``, the shape the
OpenAI SDK and pydantic-ai parse.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "GatewayError",
    "ConfigError",
    "BadRequest",
    "AuthError",
    "UnknownModel",
    "LimitExceeded",
    "ProviderError",
    "ProviderTimeout",
    "ProviderConnectionError",
    "ProviderRateLimited",
    "ProviderServerError",
    "ProviderRejected",
    "ProviderBadResponse",
    "ProviderContextExceeded",
    "AllProvidersFailed",
    "DeadlineExceeded",
]


class GatewayError(Exception):
    """Base of every gateway error.

    Attributes:
        status: HTTP status the gateway answers with.
        type: OpenAI error ``type`` field.
        code: OpenAI error ``code`` field.
    """

    status: int = 500
    type: str = "server_error"
    code: str = "gateway_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def param(self) -> str | None:
        """The OpenAI ``param`` field: what the error is about, if anything."""
        return None

    def headers(self) -> list[tuple[bytes, bytes]]:
        """Extra response headers (e.g. ``retry-after``)."""
        return []

    def body(self) -> dict[str, Any]:
        """OpenAI-style error body: ``{"error": {message, type, param, code}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class ConfigError(GatewayError):
    """The gateway config is invalid (file unreadable, unknown provider in a route, bad pattern)."""

    code = "config_error"


class BadRequest(GatewayError):
    """The request body is not a valid chat-completions request (HTTP 400)."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class AuthError(GatewayError):
    """Missing or unknown virtual key (HTTP 401)."""

    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class UnknownModel(GatewayError):
    """The requested model alias has no route (HTTP 404)."""

    status = 404
    type = "invalid_request_error"
    code = "model_not_found"


class LimitExceeded(GatewayError):
    """A budget, rate limit or per-run cap is exhausted (HTTP 429).

    Args:
        limit: Which limit, e.g. ``key_rpm``, ``team_cost_per_day_usd``, ``run_cost_cap_usd``.
        scope: Whom it applies to, e.g. ``key:alice``, ``team:ml``, ``run:r-42``.
        used: Amount already used in the limit's window (requests, tokens or USD).
        limit_value: The configured limit, same unit as ``used``.
        retry_after_s: Seconds until the window frees up, if known.
    """

    status = 429

    def __init__(
        self, limit: str, scope: str, used: float, limit_value: float, *, retry_after_s: float | None = None
    ) -> None:
        self.limit = limit
        self.scope = scope
        self.used = used
        self.limit_value = limit_value
        self.retry_after_s = retry_after_s
        is_rate = limit.endswith(("_rpm", "_tpm"))
        self.type = "requests" if is_rate else "insufficient_quota"
        self.code = "rate_limit_exceeded" if is_rate else "budget_exceeded"
        super().__init__(
            f"Warden gateway limit exceeded: {limit} for {scope} (used {used:g}, limit {limit_value:g})"
        )

    @property
    def param(self) -> str | None:
        return self.limit

    def headers(self) -> list[tuple[bytes, bytes]]:
        if self.retry_after_s is None:
            return []
        return [(b"retry-after", str(max(1, round(self.retry_after_s))).encode())]

    def body(self) -> dict[str, Any]:
        body = super().body()
        body["error"]["limit"] = {"name": self.limit, "scope": self.scope, "used": self.used, "limit": self.limit_value}
        return body


class ProviderError(GatewayError):
    """One attempt at one provider failed.

    Args:
        provider: The provider's configured name.
        message: What went wrong, for logs and the final error body.
        upstream_status: The upstream HTTP status, if there was a response.
    """

    status = 502
    type = "api_error"
    code = "provider_error"
    retryable: bool = True

    def __init__(self, provider: str, message: str, *, upstream_status: int | None = None) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.upstream_status = upstream_status


class ProviderTimeout(ProviderError):
    """The upstream did not connect or answer within its timeout."""

    code = "provider_timeout"


class ProviderConnectionError(ProviderError):
    """The upstream could not be reached (refused, reset, DNS)."""

    code = "provider_unreachable"


class ProviderRateLimited(ProviderError):
    """The upstream answered 429."""

    code = "provider_rate_limited"


class ProviderServerError(ProviderError):
    """The upstream answered 5xx."""

    code = "provider_server_error"


class ProviderRejected(ProviderError):
    """The upstream answered 4xx other than 429; retrying the same request will not help."""

    code = "provider_rejected"
    retryable = False


class ProviderContextExceeded(ProviderRejected):
    """The request's estimated prompt plus its max_tokens exceeds the provider's ``context_tokens``;
    it was not sent (the next provider of the chain may still take it)."""

    code = "context_length_exceeded"


class ProviderBadResponse(ProviderError):
    """The upstream answered 2xx with a body that is not a chat completion."""

    code = "provider_bad_response"


class AllProvidersFailed(GatewayError):
    """Every provider in the alias's chain failed (HTTP 502, or the upstream 4xx when rejected, or
    504 ``upstream_timeout`` when every attempt timed out: a slow model, not a broken one).

    Args:
        model: The requested alias.
        attempts: Each failed attempt, in order.
    """

    status = 502
    type = "api_error"
    code = "all_providers_failed"

    def __init__(self, model: str, attempts: list[ProviderError]) -> None:
        self.model = model
        self.attempts = attempts
        detail = "; ".join(a.message for a in attempts[-5:]) or "no provider available"
        super().__init__(f"All providers failed for model {model!r}: {detail}")
        last = attempts[-1] if attempts else None
        if isinstance(last, ProviderContextExceeded):
            self.status = 400
            self.type = "invalid_request_error"
            self.code = "context_length_exceeded"
        elif isinstance(last, ProviderRejected) and last.upstream_status is not None:
            self.status = last.upstream_status
            self.type = "invalid_request_error"
            self.code = "provider_rejected"
        elif attempts and all(isinstance(a, ProviderTimeout) for a in attempts):
            self.status = 504
            self.code = "upstream_timeout"


class DeadlineExceeded(GatewayError):
    """No provider answered within the deadline the caller sent (``X-Warden-Deadline-S``) (HTTP 504).

    Args:
        deadline_s: The caller's deadline (s).
    """

    status = 504
    type = "api_error"
    code = "deadline_exceeded"

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        super().__init__(f"No answer within the caller's deadline of {deadline_s:.1f} s")
