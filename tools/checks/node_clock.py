"""check_node_clock: a node whose clock drifted, so the credentials it checks look expired or rewound.

Slurm signs job credentials (and MUNGE its tokens) with a time; a node whose clock runs minutes ahead sees
every credential as expired (``Invalid job credential … Job credential expired``, MUNGE ``Expired
credential``), one behind sees them from the future (``Rewound credential``). Every job step sent there fails
at launch while the node looks idle and healthy to the scheduler. The clock drifts when the node's time
service lost its sources (chronyd ``Can't synchronise: no selectable sources``, ntpd/timesyncd timeouts).
Sources: the Slurm and MUNGE docs on credential lifetimes; chrony's and slurmd's log messages.
"""

from __future__ import annotations

from tools.checks.base import CheckConfig, job_culprits, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import printed_on
from tools.knowledge.host import CLOCK_TROUBLE, CREDENTIAL_TIME
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["NodeClockConfig", "check_node_clock"]

_CREDENTIAL = ("job credential expired", *CREDENTIAL_TIME)  # slurmd's own words for the same refusal
_CLOCK = (*CLOCK_TROUBLE, "clock skew")


class NodeClockConfig(CheckConfig):
    """How many credential refusals make a node's clock the suspect without a time-service line."""

    min_refusals: int = 2


def check_node_clock(facts: Facts, cfg: NodeClockConfig) -> list[Finding]:
    """node_software_fault per node that refuses credentials as expired or rewound (its slurmd or munged log,
    or a job's srun line naming it), corroborated by its time service saying it is not synchronised (or by
    ``min_refusals`` refusals). Culprits: the node, then the jobs that failed to launch there; action: take it
    out of service until its clock is fixed (chrony/NTP sources, then ``chronyc makestep``).

    Sources: kernel-log/syslog (slurmd, munged, chronyd/ntpd/systemd-timesyncd); job-log srun lines.
    """
    refusals: dict[str, list] = {}
    for e in facts.kernel_events_of("slurm_node", "generic"):  # slurmd's and munged's lines; the rest never say it
        if e.node and any(w in e.message.lower() for w in _CREDENTIAL):
            refusals.setdefault(e.node, []).append(e)
    launches: dict[str, list] = {}
    for e in facts.job_events_of("slurm_message", "generic"):
        if any(w in e.message.lower() for w in _CREDENTIAL) and (node := printed_on(facts, e) or _named(facts, e.message)):
            launches.setdefault(node, []).append(e)
    findings: list[Finding] = []
    for node in sorted(set(refusals) | set(launches)):
        clock = [e for e in facts.kernel_events_on(node) if any(w in e.message.lower() for w in _CLOCK)]
        seen = refusals.get(node, []) + launches.get(node, [])
        if not clock and len(seen) < cfg.min_refusals:
            continue
        jobs = list(dict.fromkeys(e.job for e in launches.get(node, []) if e.job))
        ref = node_ref(facts, node)
        findings.append(Finding(
            check="node_clock", root_cause="node_software_fault",
            message=f"{node} refuses credentials as expired or rewound ({len(seen)} line(s))"
                    + (f" and its time service is not synchronised ({clock[0].message[:80]})" if clock else "")
                    + ": its clock has drifted; every job step sent there fails at launch — fix its time source "
                      "(chrony/NTP), then resume it",
            culprits=[ref.culprit, *job_culprits(jobs)],
            evidence=[kernel_evidence(e) for e in clock[:1] + refusals.get(node, [])[:2]]
            + [log_evidence(e) for e in launches.get(node, [])[:2]],
            strength="direct" if clock else "state", confidence=confidence("direct" if clock else "state",
                                                                            corroborated=bool(clock) and len(seen) >= 2),
            suggested_actions=take_out_of_service(facts, ref, "clock not synchronised: credentials refused as expired"),
        ))
    return findings


def _named(facts: Facts, message: str) -> str | None:
    """The node an srun line names (``Task launch for StepId=… failed on node n-07``), when Slurm knows it."""
    marker = "failed on node "
    i = message.find(marker)
    if i < 0:
        return None
    name = message[i + len(marker):].split(":", 1)[0].strip()
    return name if facts.node(name) is not None else None
