"""check_node_failure_history: a node that fails the jobs sent to it, told from accounting history.

Two shapes (sacct): a **black hole** — many jobs, often of different users, fail within seconds of starting
on one node in a short window while the same jobs run elsewhere (the node accepts work and kills it: a
broken mount, driver, container runtime or prolog); and a **repeat offender** — one node in the failures
of several different jobs spread over days. Either raises a node fault over the jobs' own errors: the
job that failed there is a victim, not the cause.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from tools.checks.base import CheckConfig, job_culprits
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.slurm import SacctRecord
from tools.platform import node_ref, take_out_of_service

__all__ = ["NodeHistoryConfig", "check_node_failure_history"]

_FAILED = ("FAILED", "NODE_FAIL", "BOOT_FAIL")


class NodeHistoryConfig(CheckConfig):
    """Thresholds for failure history."""

    black_hole_jobs: int = 4
    """Jobs failing within ``quick_fail_s`` on one node, inside ``black_hole_window_h``, that make it a black hole."""
    quick_fail_s: int = 120
    black_hole_window_h: float = 6.0
    repeat_jobs: int = 3
    """Distinct failed jobs on one node, spread over at least ``repeat_span_h``, that make it a repeat offender."""
    repeat_span_h: float = 24.0
    max_share: float = 0.5
    """A node counts only if it holds at most this share of all failed jobs (a cluster-wide outage fails
    jobs everywhere; that is not one node's fault)."""


def _failed(r: SacctRecord) -> bool:
    return (r.state or "").split(" ")[0] in _FAILED


_OWN_FAILURES = ("checkpoint_load_failure", "cuda_oom")


def check_node_failure_history(facts: Facts, cfg: NodeHistoryConfig) -> list[Finding]:
    """node_software_fault per black-hole node, and per repeat-offender node, from sacct job rows (steps
    ignored). Multi-node jobs count for each of their nodes only when the node is the one they share
    with the other failures.

    Sources: sacct job rows (State, Start, End, Elapsed, NodeList, User).
    """
    # A job whose own log says why it failed (it could not load its checkpoint, it ran out of GPU memory)
    # is that job's failure, not the node's: it does not count towards a black hole.
    failed = [r for r in facts.acct_jobs() if _failed(r) and r.nodes
              and not any(e.kind in _OWN_FAILURES for e in facts.job_events(r.job_id))]
    if len(failed) < min(cfg.black_hole_jobs, cfg.repeat_jobs):
        return []
    by_node: dict[str, list[SacctRecord]] = defaultdict(list)
    for r in failed:
        for n in r.nodes:
            by_node[n].append(r)
    findings: list[Finding] = []
    # A multi-node job's failure counts against every node it held; once a node with more failures is
    # named, the failures it shares with others are explained and count no longer against them.
    explained: dict[str, int] = {}  # job id -> failures of the node that explains it
    for node, all_rows in sorted(by_node.items(), key=lambda kv: -len(kv[1])):
        rows = [r for r in all_rows if explained.get(r.job_id, 0) <= len(all_rows)]
        if len(rows) / len(failed) > cfg.max_share and len(by_node) > 1 and len(rows) > cfg.black_hole_jobs * 3:
            continue
        window = facts.captured_at - timedelta(hours=cfg.black_hole_window_h)
        quick = [r for r in rows if r.elapsed_s is not None and r.elapsed_s <= cfg.quick_fail_s
                 and (r.end_time is None or r.end_time >= window)]
        times = sorted(t for r in rows if (t := r.end_time or r.start_time) is not None)
        span_h = (times[-1] - times[0]).total_seconds() / 3600 if len(times) >= 2 else 0.0
        users = {r.user for r in rows if r.user}
        if len(quick) >= cfg.black_hole_jobs:
            shape = (f"black hole: {len(quick)} job(s) of {len({r.user for r in quick if r.user}) or '?'} user(s) "
                     f"failed within {cfg.quick_fail_s} s of starting in the last {cfg.black_hole_window_h:g} h "
                     f"(threshold {cfg.black_hole_jobs})")
            chosen, corroborated = quick, len({r.user for r in quick}) >= 2
        elif len({r.job_id for r in rows}) >= cfg.repeat_jobs and span_h >= cfg.repeat_span_h:
            shape = (f"repeat offender: in the failures of {len(rows)} different job(s) of {len(users) or '?'} "
                     f"user(s) over {span_h / 24:.1f} days (threshold {cfg.repeat_jobs} over {cfg.repeat_span_h:g} h)")
            chosen, corroborated = rows, len(users) >= 2
        else:
            continue
        for r in chosen:
            explained.setdefault(r.job_id, len(all_rows))
        ref = node_ref(facts, node)
        evidence = [Evidence(text=f"sacct: job {r.job_id} ({r.user or '?'}) {r.state} after {r.elapsed_s} s "
                                  f"on {','.join(r.nodes[:4])} at {r.end_time or r.start_time}", metric="sacct")
                    for r in chosen[:5]]
        findings.append(Finding(
            check="node_failure_history", root_cause="node_software_fault",
            message=f"{node} fails the jobs sent to it — {shape}",
            culprits=[ref.culprit, *job_culprits(r.job_id for r in chosen[:6])],
            evidence=evidence, strength="state", confidence=confidence("state", corroborated=corroborated),
            suggested_actions=take_out_of_service(facts, ref, f"jobs keep failing on this node ({shape[:60]})")
            + [ActionSpec(type="run_gpu_diagnostic", node=node, reason="find what fails the jobs here")],
        ))
    return findings
