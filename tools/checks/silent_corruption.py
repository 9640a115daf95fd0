"""check_nan_on_one_node: NaN/inf losses that only the ranks of one node report (silent data corruption)."""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes, job_user, rank_node, same_run_jobs
from tools.knowledge.precedence import confidence
from tools.platform import node_ref, resubmit_specs, take_out_of_service
from tools.models.findings import ActionSpec, Finding
from tools.models.logs import JobLogEventBase

__all__ = ["NanConfig", "check_nan_on_one_node"]


class NanConfig(CheckConfig):
    """Minimum NaN events before blaming a node."""

    min_events: int = 2
    min_jobs: int = 2
    """Different jobs whose NaN reports all come from one node that make the node the common cause."""


_NAN = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)
_NAN_SUBJECT = re.compile(r"loss|grad", re.IGNORECASE)
_FIRST_RERUN = re.compile(
    r"Rank (?P<rank>\d+), node (?P<node>[A-Za-z0-9][\w.-]{0,63}), device (?P<dev>\d+), iteration #(?P<it>\d+): "
    r"First rerun: unexpected result is (?P<not>not )?reproducible")
_PERSISTENT = re.compile(r"Possible persistent error")
"""Megatron-LM's rerun state machine (RerunMode.VALIDATE_RESULTS): a NaN or spiky result is recomputed on the
same GPU, then on another; reproducible on the first GPU but not elsewhere is a GPU giving wrong answers
every time (``Possible persistent error``); not even reproducible on the same GPU is a transient fault."""
_RAISED = re.compile(r"^\s*(?:\w+\.)*\w+(?:Error|Exception):")
_NAMED_NODE = re.compile(r"\bnode:? (?P<node>[A-Za-z0-9][\w.-]{0,63})")


def _is_nan_report(e: JobLogEventBase) -> bool:
    """A NaN/inf loss line, or an exception raised because a loss or gradient was NaN/inf
    (Megatron's ``AssertionError: Rank 43: found NaN in local grad norm ... Device: 3, node: gpu-a-022``)."""
    if e.kind == "nan_loss":
        return True
    # An exception line without its Traceback header (``grep AssertionError``) is a generic event.
    raised = e.kind == "traceback" or (e.kind == "generic" and bool(_RAISED.search(e.message)))
    return raised and bool(_NAN.search(e.message)) and bool(_NAN_SUBJECT.search(e.message))


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
    seen: set[tuple[str | None, int | None]] = set()
    for e in facts.job_events_of("nan_loss", "traceback", "generic"):
        if e.job and _is_nan_report(e) and (e.file, e.line) not in seen:  # one line may be two events
            seen.add((e.file, e.line))
            by_job[e.job].append(e)
    verdicts = _rerun_verdicts(facts) + _replica_drift(facts)
    findings: list[Finding] = list(verdicts)
    for job, events in by_job.items():
        if len(events) < cfg.min_events or any(f"job:{job}" in f.culprits for f in findings):
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
    return findings + _nan_across_jobs(facts, cfg, by_job, verdicts)


def _nan_across_jobs(facts: Facts, cfg: NanConfig, by_job: dict[str, list],
                     verdicts: list[Finding]) -> list[Finding]:
    """silent_data_corruption when the NaN reports of ``min_jobs`` or more different jobs each come from
    one node, and that node is the same for all of them and for no other node: the jobs share only that
    node's GPUs (a repeat offender told by what failed, not only by where)."""
    told = {c for f in verdicts for c in f.culprits}
    per_node: dict[str, list[tuple[str, list]]] = defaultdict(list)
    for job, events in by_job.items():
        if f"job:{job}" in told:
            continue  # Megatron's own verdict names the GPU already
        j = facts.job(job) or facts.acct_job(job)
        if not j or not j.nodes:
            continue
        nodes = {_event_node(facts, j.nodes, job, e) for e in events} if len(j.nodes) > 1 else {j.nodes[0]}
        nodes.discard(None)
        if len(nodes) == 1:
            per_node[nodes.pop()].append((job, events))
    common = [n for n, jobs in per_node.items() if len(jobs) >= cfg.min_jobs]
    if len(common) != 1:
        return []  # NaNs spread over several nodes are the data or the code, not one node's GPUs
    node = common[0]
    jobs = per_node[node]
    users = {u for job, _ in jobs if (u := job_user(facts, job))}
    strength = "state" if len(users) >= 2 else "symptom"
    return [Finding(
        check="nan_on_one_node", root_cause="silent_data_corruption",
        message=f"{len(jobs)} different job(s) of {len(users) or '?'} user(s) ({', '.join(j for j, _ in jobs[:6])}) "
                f"died on NaN/inf losses or gradients that came from {node} (threshold {cfg.min_jobs} jobs)",
        culprits=[f"node:{node}"],
        evidence=[log_evidence(events[0]) for _, events in jobs[:4]],
        strength=strength, confidence=confidence(strength, corroborated=len(jobs) > cfg.min_jobs),
        suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="suspected silent data corruption"),
                           *take_out_of_service(facts, node_ref(facts, node), "NaNs of several jobs from this node")],
    )]


def _replica_drift(facts: Facts) -> list[Finding]:
    """silent_data_corruption from Megatron's weight-hash check across data-parallel replicas: the ranks of one
    node print most of the ``Hash not matching for <param>`` lines (at least twice as many as any other node's
    and at least half of all), so its replica's weights are the ones that drifted. The job is resubmitted from
    its newest checkpoint without the node."""
    by_job: dict[str, list] = defaultdict(list)
    for e in facts.job_events_of("generic"):
        if e.job and e.exception_type == "ParamHashMismatch" and e.rank is not None:
            by_job[e.job].append(e)
    out: list[Finding] = []
    for job, events in by_job.items():
        per_node: dict[str, list] = defaultdict(list)
        for e in events:
            if (node := rank_node(facts, job, e.rank)) is not None:
                per_node[node].append(e)
        ranked = sorted(per_node.items(), key=lambda kv: -len(kv[1]))
        if not ranked:
            continue
        node, mine = ranked[0]
        nxt = len(ranked[1][1]) if len(ranked) > 1 else 0
        if len(mine) < 3 or len(mine) < 2 * nxt or 2 * len(mine) < len(events):
            continue  # no one replica stands out: the check cannot say whose weights drifted
        ranks = sorted({e.rank for e in mine})
        out.append(Finding(
            check="nan_on_one_node", root_cause="silent_data_corruption",
            message=f"job {job}: Megatron's weight-hash check across data-parallel replicas failed; {len(mine)} of "
                    f"{len(events)} mismatch lines come from the ranks on {node} ({', '.join(map(str, ranks[:8]))}): "
                    "that replica's weights drifted",
            culprits=[f"node:{node}", f"job:{job}"],
            evidence=[log_evidence(e) for e in mine[:3]],
            strength="direct", confidence=confidence("direct"),
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="replica weights drifted here"),
                               *take_out_of_service(facts, node_ref(facts, node), "its DP replica's weights drifted"),
                               *resubmit_specs(facts, [job], [node], f"weights drifted on {node}")],
        ))
    return out


def _rerun_verdicts(facts: Facts) -> list[Finding]:
    """silent_data_corruption from Megatron's own result validation: the GPU that reproduced a wrong result
    which a different GPU did not (``Possible persistent error`` in the same training run), or that could not
    even reproduce it itself (a transient fault). The run's newest job is resubmitted without the node."""
    out: list[Finding] = []
    for first in facts.job_events_of("generic"):
        m = _FIRST_RERUN.search(first.message)
        if not m or not first.job:
            continue
        # The verdict comes from the resumed run (often a new job id): the same run, or the same iteration
        run = same_run_jobs(facts, first.job)
        persistent = [e for e in facts.job_events_of("generic") if _PERSISTENT.search(e.message)
                      and (e.job in run or f"iteration #{m['it']}:" in e.message)]
        if not m["not"] and not persistent:
            continue  # reproducible on the same GPU, no verdict from another GPU yet: the data or the code
        node = m["node"]
        if facts.node(node) is None and facts.k8s_node(node) is None and node not in job_nodes(facts, first.job):
            continue  # a name no record knows: quoted by unexplained_signals, not blamed
        newest = (persistent[-1].job if persistent else None) or first.job
        verdict = "gives the same wrong result every time, a different GPU does not" if persistent else \
            "could not reproduce its own result (a transient fault)"
        out.append(Finding(
            check="nan_on_one_node", root_cause="silent_data_corruption",
            message=f"Megatron's result validation: GPU {m['dev']} of {node} (rank {m['rank']}) {verdict}",
            culprits=[f"node:{node}", f"job:{newest}"],
            evidence=[log_evidence(first)] + [log_evidence(e) for e in persistent[:1]],
            strength="direct" if persistent else "symptom", confidence=confidence("direct" if persistent else "symptom"),
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="GPU fails result validation"),
                               *take_out_of_service(facts, node_ref(facts, node), "GPU fails Megatron result validation"),
                               *resubmit_specs(facts, [newest], [node], f"wrong results from {node}'s GPU")],
        ))
        break  # one verdict per snapshot is the rule; the first names the GPU
    return out
