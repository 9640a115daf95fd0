"""Warden's LLM gateway: an OpenAI-compatible ASGI app with routing, fallback, caching, budgets,
rate limits, redaction, a usage ledger and Prometheus metrics.

Entry points: ``gateway.app.create_app``, ``gateway.app.serve``, ``gateway.client.make_model``,
``gateway.usage.summarize_usage``. Modules import only third-party packages.
"""

__all__: list[str] = []
