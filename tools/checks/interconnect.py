"""check_interconnect_link_down: InfiniBand link flaps and NVLink errors on a node."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from tools.checks.base import (CheckConfig, affected_jobs, job_culprits, kernel_event_time, kernel_evidence,
                               resubmit_specs)
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import KernelEvent

__all__ = ["InterconnectConfig", "check_interconnect_link_down"]


class InterconnectConfig(CheckConfig):
    """Thresholds for link events."""

    min_link_down: int = 1
    """IB link-down events on one node that make it a culprit."""
    flap_downs: int = 2
    """Downs of one port, each followed by the link coming back, that make it a flapping link. A
    port that went down once and came back up (link training at boot, a reseated cable) is not a
    fault; one still down is, however often it went down."""
    nvlink_xids: frozenset[int] = frozenset({74})


def _link_state(ev: KernelEvent) -> str | None:
    """``up``/``down`` for link and cable events: a port going down, a cable unplugged or reporting
    an error (bad or shorted cable/module) is down; a port up or a cable plugged in is up."""
    state = ev.fields.get("state", "").lower()
    if state in ("down", "up"):
        return state
    detail = ev.fields.get("detail", "").lower()
    if state == "module_error" or "unplugged" in detail:
        return "down"
    if state == "module_event" and "plugged" in detail:
        return "up"
    return None


def check_interconnect_link_down(facts: Facts, cfg: InterconnectConfig) -> list[Finding]:
    """interconnect_fault per node with an InfiniBand port that is down (its last state printed is
    down) or flapping (went down and came back ``flap_downs`` times or more), or NVLink Xids.

    Sources: kernel-log events of kind ib_link (fields.state = down|up, device, port) and xid (74).
    """
    evidence: dict[str, list[Evidence]] = defaultdict(list)
    downs: dict[str, int] = defaultdict(int)
    port_downs: dict[tuple[str, str, str], list[KernelEvent]] = defaultdict(list)
    port_up: dict[tuple[str, str, str], bool] = {}
    counted: list[KernelEvent] = []
    for ev in facts.kernel_events:
        if not ev.node:
            continue
        state = _link_state(ev) if ev.kind == "ib_link" else None
        if state is not None:
            port = (ev.node, ev.fields.get("device", ""), ev.fields.get("port") or f"module {ev.fields.get('module', '')}")
            port_up[port] = state == "up"
            if not port_up[port]:
                port_downs[port].append(ev)
        elif ev.kind == "xid" and ev.xid in cfg.nvlink_xids:
            downs[ev.node] += 1
            evidence[ev.node].append(kernel_evidence(ev))
            counted.append(ev)
    for port, events in port_downs.items():
        if port_up[port] and len(events) < cfg.flap_downs:
            continue  # went down and came back: recovered, not a fault
        downs[port[0]] += len(events)
        evidence[port[0]].extend(kernel_evidence(ev) for ev in events)
        counted.extend(events)
    first_seen: dict[str, datetime] = {}
    for ev in counted:
        when = kernel_event_time(facts, ev)
        if when is not None and ev.node and (ev.node not in first_seen or when < first_seen[ev.node]):
            first_seen[ev.node] = when
    findings: list[Finding] = []
    for node, n in downs.items():
        if n < cfg.min_link_down:
            continue
        jobs = affected_jobs(facts, [node], since=first_seen.get(node))
        actions = [ActionSpec(type="drain_node", node=node, reason=f"interconnect fault: {n} link-down event(s)")]
        actions += resubmit_specs(facts, jobs, [node], f"collectives failed on {node}'s link")
        findings.append(
            Finding(
                check="interconnect_link_down",
                root_cause="interconnect_fault",
                message=f"{n} link-down / NVLink error event(s) on {node} (threshold {cfg.min_link_down})",
                culprits=[f"node:{node}", *job_culprits(jobs)],
                evidence=evidence[node][:5],
                confidence=0.85,
                suggested_actions=actions,
            )
        )
    return findings
