"""check_nan_on_one_node: NaN/inf losses that only the ranks of one node report (silent data corruption)."""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import rank_node
from tools.knowledge.precedence import confidence
from tools.platform import node_ref, resubmit_specs, take_out_of_service
from tools.models.findings import ActionSpec, Finding
from tools.models.logs import JobLogEventBase

__all__ = ["NanConfig", "check_nan_on_one_node"]


class NanConfig(CheckConfig):
    """Minimum NaN events before blaming a node."""

    min_events: int = 2


_NAN = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)
_NAN_SUBJECT = re.compile(r"loss|grad", re.IGNORECASE)
_NAMED_NODE = re.compile(r"\bnode:? (?P<node>[A-Za-z0-9][\w.-]{0,63})")


def _is_nan_report(e: JobLogEventBase) -> bool:
    """A NaN/inf loss line, or an exception raised because a loss or gradient was NaN/inf
    (Megatron's ``AssertionError: Rank 43: found NaN in local grad norm ... Device: 3, node: gpu-a-022``)."""
    if e.kind == "nan_loss":
        return True
    return e.kind == "traceback" and bool(_NAN.search(e.message)) and bool(_NAN_SUBJECT.search(e.message))


def _event_node(facts: Facts, job_nodes: list[str], job_id: str, e: JobLogEventBase) -> str | None:
    """The node a NaN report comes from: the node the message names when it is one of the job's,
    else the node of its rank."""
    m = _NAMED_NODE.search(e.message)
    if m and m["node"].rstrip(".,") in job_nodes:
        return m["node"].rstrip(".,")
    return rank_node(facts, job_id, e.rank) if e.rank is not None else None


def check_nan_on_one_node(facts: Facts, cfg: NanConfig) -> list[Finding]:
    """silent_data_corruption when a multi-node job's NaN/inf loss or grad-norm lines come only from
    ranks on one node while the other nodes' ranks keep training (no Xid needed: the GPU computes
    wrong numbers without reporting an error).

    Sources: job-log nan_loss events with ranks, and tracebacks raised on a NaN loss or gradient
    (with the rank, or the node the message names); squeue/sacct node lists and GPU counts.
    """
    by_job: dict[str, list] = defaultdict(list)
    for e in facts.job_events_of("nan_loss", "traceback"):
        if e.job and _is_nan_report(e):
            by_job[e.job].append(e)
    findings: list[Finding] = []
    for job, events in by_job.items():
        if len(events) < cfg.min_events:
            continue
        j = facts.job(job) or facts.acct_job(job)
        if not j or len(j.nodes) < 2:
            continue
        nodes = {_event_node(facts, j.nodes, job, e) for e in events}
        if None in nodes or len(nodes) != 1:
            continue
        node = nodes.pop()
        ranks = sorted({e.rank for e in events if e.rank is not None})
        findings.append(Finding(
            check="nan_on_one_node", root_cause="silent_data_corruption",
            message=f"job {job}: {len(events)} NaN/inf loss line(s), all from ranks {ranks} on {node} "
            f"(of {len(j.nodes)} nodes; threshold {cfg.min_events})",
            culprits=[f"node:{node}", f"job:{job}"],
            evidence=[log_evidence(e) for e in events[:4]],
            strength="symptom", confidence=confidence("symptom", corroborated=len(events) >= 2 * cfg.min_events),
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="suspected silent data corruption"),
                               *take_out_of_service(facts, node_ref(facts, node), "NaNs only on this node's GPUs"),
                               *resubmit_specs(facts, [job], [node], f"NaNs from {node}'s GPUs")],
        ))
    return findings
