"""Prometheus metrics of one gateway app, on its own registry (served at ``GET /metrics``).

Metric names:
    warden_gateway_requests_total{model,provider,status}
    warden_gateway_request_latency_seconds{model}            histogram, gateway-measured
    warden_gateway_cache_total{result}                        result: hit | miss
    warden_gateway_provider_failures_total{provider,code}     one per failed attempt
    warden_gateway_fallbacks_total{model}                     requests served by a later provider
    warden_gateway_limit_rejections_total{limit}
    warden_gateway_tokens_total{model,kind}                   kind: prompt | completion
    warden_gateway_cost_usd_total{model}
    warden_gateway_redactions_total{kind}
    warden_gateway_provider_cooled_down{provider}             1 while cooled down
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "GatewayMetrics"]


class GatewayMetrics:
    """All counters of one app; a fresh registry per app keeps tests independent."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        p = "warden_gateway_"
        self.requests = Counter(p + "requests", "Chat requests answered", ["model", "provider", "status"], registry=r)
        self.latency = Histogram(
            p + "request_latency_seconds",
            "Time from request to response end, measured in the gateway",
            ["model"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.cache = Counter(p + "cache", "Cache lookups", ["result"], registry=r)
        self.provider_failures = Counter(
            p + "provider_failures", "Failed provider attempts", ["provider", "code"], registry=r
        )
        self.fallbacks = Counter(p + "fallbacks", "Requests answered by a later provider", ["model"], registry=r)
        self.limit_rejections = Counter(p + "limit_rejections", "Requests refused by a limit", ["limit"], registry=r)
        self.tokens = Counter(p + "tokens", "Tokens", ["model", "kind"], registry=r)
        self.cost = Counter(p + "cost_usd", "Cost in USD", ["model"], registry=r)
        self.redactions = Counter(p + "redactions", "Redacted matches", ["kind"], registry=r)
        self.cooled_down = Gauge(p + "provider_cooled_down", "1 while a provider is cooled down", ["provider"],
                                 registry=r)

        self._children: dict[tuple[str, str, str], tuple[Any, ...]] = {}

    def observe_request(
        self, model: str, provider: str, status: int, latency_s: float, prompt_tokens: int,
        completion_tokens: int, cost_usd: float,
    ) -> None:
        """Count one answered request (label children cached: this runs on every request)."""
        key = (model, provider, str(status))
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(model, provider, key[2]),
                self.latency.labels(model),
                self.tokens.labels(model, "prompt"),
                self.tokens.labels(model, "completion"),
                self.cost.labels(model),
            )
            self._children[key] = children
        requests, latency, prompt, completion, cost = children
        requests.inc()
        latency.observe(latency_s)
        if prompt_tokens:
            prompt.inc(prompt_tokens)
        if completion_tokens:
            completion.inc(completion_tokens)
        if cost_usd:
            cost.inc(cost_usd)

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format."""
        return generate_latest(self.registry)
