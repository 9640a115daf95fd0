"""Small probes the fault module waits on: a node's responsiveness and a Prometheus value."""

from __future__ import annotations

import json

from sandbox.layout import Layout, SandboxConfig
from sandbox.services import node_states
from tools.errors import HTTPSourceError
from tools.sources.http import HTTPSource

__all__ = ["node_state", "node_responding", "node_not_responding", "prometheus_value"]


def node_state(lay: Layout, node: str) -> str:
    """``sinfo`` long state of ``node`` (lower case; ``*`` suffix = not responding), or ``""``."""
    return node_states(lay.root).get(node, "")


def node_not_responding(lay: Layout, node: str) -> bool:
    """True once slurmctld marks ``node`` NOT_RESPONDING (``*``) or DOWN."""
    state = node_state(lay, node)
    return state.endswith("*") or state.startswith("down")


def node_responding(lay: Layout, node: str) -> bool:
    """True when ``node`` responds and is usable (idle, mixed, allocated, completing)."""
    state = node_state(lay, node)
    return bool(state) and not state.endswith("*") and state.startswith(("idle", "mix", "alloc", "comp"))


def prometheus_value(cfg: SandboxConfig, query: str) -> float | None:
    """The first sample of an instant PromQL query against the sandbox's Prometheus, or None."""
    try:
        _url, body = HTTPSource().get(f"{cfg.prometheus_url}/api/v1/query", params={"query": query}, timeout_s=5)
    except HTTPSourceError:
        return None
    result = json.loads(body).get("data", {}).get("result", [])
    if not result:
        return None
    return float(result[0]["value"][1])
