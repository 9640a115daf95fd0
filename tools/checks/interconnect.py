"""check_interconnect_link_down: InfiniBand link flaps and NVLink errors on a node."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, affected_jobs, job_culprits, kernel_evidence, resubmit_specs
from tools.facts import Facts
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["InterconnectConfig", "check_interconnect_link_down"]


class InterconnectConfig(CheckConfig):
    """Thresholds for link events."""

    min_link_down: int = 1
    """IB link-down events on one node that make it a culprit."""
    nvlink_xids: frozenset[int] = frozenset({74})


def check_interconnect_link_down(facts: Facts, cfg: InterconnectConfig) -> list[Finding]:
    """interconnect_fault per node with InfiniBand links going down (mlx5 / ipoib lines) or NVLink Xids.

    Sources: kernel-log events of kind ib_link (fields.state = down|up) and xid (74).
    """
    evidence: dict[str, list[Evidence]] = defaultdict(list)
    downs: dict[str, int] = defaultdict(int)
    for ev in facts.kernel_events:
        if not ev.node:
            continue
        if ev.kind == "ib_link" and ev.fields.get("state", "").lower() == "down":
            downs[ev.node] += 1
            evidence[ev.node].append(kernel_evidence(ev))
        elif ev.kind == "xid" and ev.xid in cfg.nvlink_xids:
            downs[ev.node] += 1
            evidence[ev.node].append(kernel_evidence(ev))
    findings: list[Finding] = []
    for node, n in downs.items():
        if n < cfg.min_link_down:
            continue
        jobs = affected_jobs(facts, [node])
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
