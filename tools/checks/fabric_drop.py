"""check_fabric_drop: many nodes' fabric ports going down in the same moment — a switch, not the nodes.

When a leaf switch reboots or a spine link bundle fails, every HCA port cabled to it drops within a second
and comes back when the switch does. Each node's link is fine afterwards, so no node is at fault (draining
them takes good nodes out), but every multi-node job whose traffic crossed that switch died with NCCL remote
errors, printed by ranks on nodes that never lost a port. Shape: mlx5 ``Port: 1 Link DOWN`` /
``Link ACTIVE`` on several nodes with the same timestamp (IB switch reboot reports, NVIDIA UFM events).
"""

from __future__ import annotations

from datetime import timedelta

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import ENDED_BADLY, event_time, job_state, kernel_event_time
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.models.logs import LinkEvent
from tools.platform import resubmit_specs

__all__ = ["FabricDropConfig", "check_fabric_drop"]


class FabricDropConfig(CheckConfig):
    """How many nodes dropping together make it the fabric's event, and how close in time."""

    min_nodes: int = 3
    window_s: float = 10.0


def check_fabric_drop(facts: Facts, cfg: FabricDropConfig) -> list[Finding]:
    """interconnect_fault when ``min_nodes`` or more nodes logged a fabric (IB) port down within ``window_s`` of
    each other. Culprits: the jobs with NCCL network errors or that ended badly then (no node: each came back,
    or stays down with its switch); action: resubmit those jobs from their newest checkpoint.

    Sources: kernel-log link events (mlx5 port state) with timestamps; job-log NCCL errors; sacct/squeue states.
    """
    downs = [(t, e) for e in facts.kernel_events_of("ib_link") if isinstance(e, LinkEvent) and e.node
             and e.link_type == "ib" and e.state == "down" and (t := kernel_event_time(facts, e)) is not None]
    if len({e.node for _, e in downs}) < cfg.min_nodes:
        return []
    downs.sort(key=lambda te: te[0])
    best: list[tuple] = []
    start = 0
    for end in range(len(downs)):  # the widest set of nodes dropping within one window (two pointers: linear)
        while downs[end][0] - downs[start][0] > timedelta(seconds=cfg.window_s):
            start += 1
        if len({e.node for _, e in downs[start:end + 1]}) > len({e.node for _, e in best}):
            best = downs[start:end + 1]
    nodes = sorted({e.node for _, e in best})
    if len(nodes) < cfg.min_nodes:
        return []
    when = best[0][0]
    lo, hi = when - timedelta(minutes=1), when + timedelta(minutes=30)  # NCCL gives up minutes after the drop

    def near(e: object) -> bool:
        t = event_time(facts, e)
        return t is None or lo <= (t if t.tzinfo else t.replace(tzinfo=lo.tzinfo)) <= hi
    hit = [e for e in facts.job_events_of("nccl_remote_error", "nccl_timeout", "net_event") if e.job and near(e)]
    jobs = [j for j in dict.fromkeys(e.job for e in hit)
            if job_state(facts, j) in ENDED_BADLY or job_state(facts, j) == "RUNNING"]
    ended = [j for j in jobs if job_state(facts, j) in ENDED_BADLY]
    return [Finding(
        check="fabric_drop", root_cause="interconnect_fault",
        message=f"{len(nodes)} nodes' fabric ports went down within {cfg.window_s:.0f} s at {when:%H:%M:%S} "
                f"({', '.join(nodes[:4])}{'…' if len(nodes) > 4 else ''}): a switch or its links failed, not the nodes; "
                + (f"{len(jobs)} job(s) saw NCCL network errors then" if jobs else "no job's log recorded it"),
        culprits=job_culprits(jobs),
        evidence=[kernel_evidence(e) for _, e in best[:4]],
        strength="direct", confidence=confidence("direct", corroborated=bool(jobs)),
        suggested_actions=resubmit_specs(facts, ended, [], "collectives failed when a fabric switch dropped its ports"),
    )]
