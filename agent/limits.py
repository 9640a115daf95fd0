"""Loop limits on every agent run (DESIGN.md, safety invariant 4).

One :class:`LoopGuard` per run counts model requests, tool calls, tokens, wall time and cost,
and watches for loops that are not byte-identical repeats:

- **near-identical calls**: the same tool with arguments that normalise to the same thing
  (keys sorted, strings stripped and lower-cased, None and default values dropped, lists of
  scalars sorted, paging arguments such as ``limit`` ignored);
- **short cycles**: the normalised call sequence ending in a block of 2-4 calls repeated back to
  back (A,B,A,B or A,B,C,A,B,C).

It reaches the run two ways, both reading the guard from ``ctx.deps.guard``:
:class:`GuardedToolset` (a pydantic-ai ``WrapperToolset``) checks before each tool call, and
:class:`LoopGuardCapability` checks before each model request. Either raises
:class:`LimitExceeded`, naming the limit, which ``diagnose()`` turns into a partial Diagnosis
(``stopped_by``), never an exception dump.

Limits come from :class:`LoopLimits`, a pydantic-settings model: defaults below, overridable by
``WARDEN_LIMIT_<FIELD>`` environment variables or ``limits:`` in the Warden settings file.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_settings import BaseSettings, SettingsConfigDict

from tools.errors import WardenError

if TYPE_CHECKING:  # annotations only: importing the gateway config here would load it for every limits user
    from gateway.config import GatewayConfig

__all__ = [
    "priced", "usage_limit_kind",
    "LimitKind",
    "LoopLimits",
    "LimitExceeded",
    "LoopGuard",
    "GuardedToolset",
    "LoopGuardCapability",
    "normalize_call",
    "monotonic",
]

LimitKind = Literal["model_requests", "tool_calls", "total_tokens", "wall_time", "cost", "repeated_call", "cycle",
                    "context", "budget", "timeout", "upstream_error", "invalid_output"]
"""Why a run stopped early: a loop limit, or a model-side failure (agent.model_failures)."""


class LoopLimits(BaseSettings):
    """Bounds on one run; every field has a sensible default."""

    model_config = SettingsConfigDict(env_prefix="WARDEN_LIMIT_", extra="forbid", frozen=True)

    model_requests: int = Field(default=8, ge=1, le=10_000)
    """Model requests per run (the built-in model needs 2-3)."""
    tool_calls: int = Field(default=40, ge=1, le=100_000)
    """Tool calls per run, all tools together."""
    total_tokens: int = Field(default=400_000, ge=1, le=10**10)
    """Input plus output tokens over the run, as the gateway reports them."""
    wall_time_s: float = Field(default=300.0, gt=0, le=86_400)
    """Seconds from the start of the run (at most a day); checked before each model request and tool call."""
    cost_usd: float = Field(default=2.0, ge=0, le=1e6)
    """Spend per run, USD: the gateway's reported cost, else tokens x the prices below."""
    input_usd_per_mtok: float = Field(default=0.0, ge=0, le=1e6)
    """Price of input tokens (USD per million) when the gateway reports no cost."""
    output_usd_per_mtok: float = Field(default=0.0, ge=0, le=1e6)
    """Price of output tokens (USD per million) when the gateway reports no cost."""
    max_similar_calls: int = Field(default=2, ge=1, le=10_000)
    """Times one tool may be called with near-identical arguments; the next such call stops the run."""
    max_cycle_period: int = Field(default=4, ge=2, le=1_000)
    """Longest block of calls checked for back-to-back repetition (2 = A,B,A,B)."""
    ignored_args: tuple[str, ...] = ("limit",)
    """Arguments that do not make two calls different (paging sizes)."""


class LimitExceeded(WardenError):
    """A loop limit stopped the run.

    Attributes:
        limit: which limit (``model_requests``, ``tool_calls``, ``total_tokens``, ``wall_time``,
            ``cost``, ``repeated_call``, ``cycle``), or which model-side failure (``context``,
            ``budget``, ``timeout``, ``upstream_error``, ``invalid_output``).
        detail: one line: actual against the limit.
    """

    def __init__(self, limit: LimitKind, detail: str) -> None:
        self.limit = limit
        self.detail = detail
        super().__init__(f"{limit}: {detail}")


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    if isinstance(value, dict):
        return {str(k).lower(): _norm(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, (list, tuple)):
        items = [_norm(v) for v in value]
        if all(isinstance(v, (str, int, float, bool)) for v in items):
            return sorted(items, key=lambda v: (type(v).__name__, v))
        return items
    return value


def normalize_call(name: str, args: dict[str, Any], defaults: dict[str, Any] | None = None,
                   ignored: tuple[str, ...] = ()) -> str:
    """A canonical string for a tool call: two near-identical calls give the same string.

    Args:
        name: tool name.
        args: the call's arguments (JSON data).
        defaults: the tool's parameter defaults; an argument equal to its default is dropped.
        ignored: argument names dropped altogether (paging sizes).
    """
    defaults = defaults or {}
    kept = {k: v for k, v in args.items()
            if v is not None and k not in ignored and not (k in defaults and _norm(defaults[k]) == _norm(v))
            and v not in ("", [], {})}
    return name.lower() + json.dumps(_norm(kept), sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class LoopGuard:
    """Per-run counters and checks. ``clock`` is monotonic seconds (tests may pass a fake one).

    ``on_stop`` is called once with the LimitExceeded before it is raised (the audit hook).
    """

    limits: LoopLimits = field(default_factory=LoopLimits)
    clock: Callable[[], float] | None = None
    """Monotonic seconds; None uses ``monotonic()`` of this module (tests patch it)."""
    on_stop: Callable[[LimitExceeded], None] | None = None
    context_tokens: int | None = None
    """The model's context window (gateway config ``context_tokens``); None when unknown."""
    max_output_tokens: int | None = None
    """Completion tokens reserved per request out of ``context_tokens``."""
    compact_tools: bool = False
    """Send compact tool definitions (agent.tool_compact; gateway config ``compact_tools``)."""
    started: float = field(init=False)
    requests: int = field(default=0, init=False)
    calls: list[str] = field(default_factory=list, init=False)
    stopped: LimitExceeded | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = monotonic
        self.started = self.clock()

    def _stop(self, limit: LimitKind, detail: str) -> LimitExceeded:
        err = LimitExceeded(limit, detail)
        if self.stopped is None:
            self.stopped = err
            if self.on_stop:
                self.on_stop(err)
        return err

    def check_time(self) -> None:
        """Raises LimitExceeded(wall_time) once the run is past its deadline."""
        elapsed = self.clock() - self.started  # type: ignore[misc]
        if elapsed > self.limits.wall_time_s:
            raise self._stop("wall_time", f"{elapsed:.1f} s elapsed (limit {self.limits.wall_time_s:g} s)")

    def time_up(self) -> str | None:
        """Why reading evidence must stop now (the run is past its wall time), else None; the next
        check (before the first model request) then ends the run with a partial Diagnosis."""
        elapsed = self.clock() - self.started  # type: ignore[misc]
        if elapsed <= self.limits.wall_time_s:
            return None
        return (f"not read: the run's wall-time limit ({self.limits.wall_time_s:g} s, limits.wall_time_s) was "
                f"reached after {elapsed:.1f} s")

    def remaining_s(self) -> float:
        """Seconds left before the run's wall-time limit (never below 1: the check above stops it first)."""
        return max(1.0, self.limits.wall_time_s - (self.clock() - self.started))  # type: ignore[misc]

    def cost_usd(self, input_tokens: int, output_tokens: int, reported: float = 0.0) -> float:
        """The run's spend: the reported cost if any, else tokens x configured prices."""
        if reported:
            return reported
        lim = self.limits
        return (input_tokens * lim.input_usd_per_mtok + output_tokens * lim.output_usd_per_mtok) / 1e6

    def before_request(self, input_tokens: int = 0, output_tokens: int = 0, reported_cost: float = 0.0) -> None:
        """Check before the next model request; counts it when it may go ahead.

        Raises:
            LimitExceeded: model_requests, wall_time, total_tokens or cost.
        """
        lim = self.limits
        self.check_time()
        if self.requests >= lim.model_requests:
            raise self._stop("model_requests", f"request {self.requests + 1} would exceed the limit of {lim.model_requests}")
        tokens = input_tokens + output_tokens
        if tokens > lim.total_tokens:
            raise self._stop("total_tokens", f"{tokens} tokens used (limit {lim.total_tokens})")
        cost = self.cost_usd(input_tokens, output_tokens, reported_cost)
        if cost > lim.cost_usd:
            raise self._stop("cost", f"${cost:.4f} spent (limit ${lim.cost_usd:g})")
        self.requests += 1

    def before_tool(self, name: str, args: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        """Check before a tool call; records it when it may go ahead.

        Raises:
            LimitExceeded: tool_calls, wall_time, repeated_call or cycle.
        """
        lim = self.limits
        self.check_time()
        if len(self.calls) >= lim.tool_calls:
            raise self._stop("tool_calls", f"call {len(self.calls) + 1} would exceed the limit of {lim.tool_calls}")
        sig = normalize_call(name, args, defaults, lim.ignored_args)
        seen = Counter(self.calls)[sig]
        if seen >= lim.max_similar_calls:
            raise self._stop("repeated_call", f"{name} called {seen + 1} times with near-identical arguments "
                             f"(limit {lim.max_similar_calls})")
        seq = [*self.calls, sig]
        for period in range(2, lim.max_cycle_period + 1):
            if len(seq) >= 2 * period and seq[-period:] == seq[-2 * period:-period] and len(set(seq[-period:])) > 1:
                names = [s.split("{", 1)[0] for s in seq[-period:]]
                raise self._stop("cycle", f"the calls {' -> '.join(names)} repeat back to back (period {period})")
        self.calls.append(sig)


def monotonic() -> float:
    """The guard's default clock (``time.monotonic``), looked up per guard so tests can replace it."""
    return time.monotonic()


def _guard(ctx: RunContext[Any]) -> LoopGuard | None:
    return getattr(ctx.deps, "guard", None)


def _defaults(tool: ToolsetTool[Any]) -> dict[str, Any]:
    props = (tool.tool_def.parameters_json_schema or {}).get("properties", {})
    return {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}


@dataclass
class GuardedToolset(WrapperToolset[Any]):
    """Wraps a toolset so that every call first passes ``ctx.deps.guard.before_tool``."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        guard = _guard(ctx)
        if guard is not None:
            guard.before_tool(name, tool_args, _defaults(tool))
        return await super().call_tool(name, tool_args, ctx, tool)


@dataclass
class LoopGuardCapability(AbstractCapability[Any]):
    """Checks ``ctx.deps.guard`` before each model request (requests, tokens, cost, wall time), bounds the
    request by the run's remaining wall time (client timeout and ``X-Warden-Deadline-S`` for the gateway),
    and fits it into the model's context (``agent.context_fit``)."""

    async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
        guard = _guard(ctx)
        if guard is None:
            return request_context
        u = ctx.usage
        guard.before_request(u.input_tokens or 0, u.output_tokens or 0, float(getattr(u, "cost", 0) or 0))
        from agent.context_fit import fit_request  # here: agent.context_fit imports this module

        left = guard.remaining_s()
        settings = dict(request_context.model_settings or {})
        settings["timeout"] = left
        settings["extra_headers"] = {**(settings.get("extra_headers") or {}), "X-Warden-Deadline-S": f"{left:.1f}"}
        if guard.max_output_tokens is not None:
            settings["max_tokens"] = guard.max_output_tokens
        request_context = replace(request_context, model_settings=settings)
        if guard.compact_tools:
            from agent.tool_compact import compact_request
            request_context = compact_request(request_context)
        from agent.answer_now import answer_now, answer_only
        if answer_now(guard) is not None:  # looping, or the last request: ask for the answer
            request_context = answer_only(request_context)
        return fit_request(guard, request_context)


def priced(limits: LoopLimits, model: str, config: GatewayConfig | None) -> LoopLimits:
    """The limits with their token prices (USD per million tokens) filled from the gateway config's price for the
    model's first route; the limits unchanged when they carry prices already or no price is known."""
    if limits.input_usd_per_mtok or limits.output_usd_per_mtok or config is None:
        return limits
    chain = config.routes.get(model, [])
    provider = next((p for p in config.providers if chain and p.name == chain[0]), None)
    upstream = getattr(provider, "openai_model", None) or model
    price = config.prices.get(upstream)
    if price is None:
        return limits
    return limits.model_copy(update={"input_usd_per_mtok": price.input_usd_per_mtok,
                                     "output_usd_per_mtok": price.output_usd_per_mtok})


def usage_limit_kind(e: Exception) -> LimitKind:
    """Which loop limit a pydantic-ai ``UsageLimitExceeded`` reports (read from its message)."""
    text = str(e)
    if "request_limit" in text:
        return "model_requests"
    if "tool_calls_limit" in text:
        return "tool_calls"
    return "total_tokens"
