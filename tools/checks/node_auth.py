"""check_node_auth_refused: slurmctld refusing one node's messages as not authentic — ``auth_g_verify:
MESSAGE_NODE_REGISTRATION_STATUS has authentication error`` from ``[gn19]:41922`` with MUNGE's ``Invalid
credential`` — so the node's registrations never count and it falls back to DOWN ``Not responding`` minutes
after every resume, while it boots and answers ssh. The node's MUNGE key is not the cluster's (a reimage that
generated its own: ``mungekey: Created "/etc/munge/munge.key"``), or its munged runs with another key.
Resuming again cannot help: the key must be replaced (copy the cluster's munge.key, restart munged, then slurmd).

A clock far off gives ``Expired``/``Rewound`` credentials instead: that is node_clock's. Sources: the
controller host's slurmctld syslog/journal lines; the node's own munged/mungekey/cloud-init lines
(corroboration); sinfo/scontrol node state.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.findings import Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["NodeAuthConfig", "check_node_auth_refused"]

_REFUSED = re.compile(r"\[\[?(?P<node>[A-Za-z][\w.-]*?)\]?\]?:\d+\]?\s*auth_g_verify: \w+ has authentication error"
                      r"|auth_g_verify: \w+ has authentication error.*?\bfrom (?P<from>[A-Za-z][\w.-]+)", re.IGNORECASE)
_OWN_KEY = re.compile(r"mungekey.*Created .*munge\.key|munged.*(?:Invalid|Unable to) .*key|munge\.key.*(?:differ|mismatch)",
                      re.IGNORECASE)


class NodeAuthConfig(CheckConfig):
    """How many refused messages name a node before it is reported."""

    min_refusals: int = 2


def check_node_auth_refused(facts: Facts, cfg: NodeAuthConfig) -> list[Finding]:
    """node_software_fault per node whose messages slurmctld refused as unauthentic ``min_refusals`` times (or
    once, with the node's own log showing a new MUNGE key); culprit the node; take it out of service until its
    MUNGE key is replaced (never resume it as is)."""
    refused: dict[str, list] = defaultdict(list)
    for ev in facts.kernel_events:
        msg = ev.message
        if "authentication error" in msg and (m := _REFUSED.search(msg)):
            name = m["node"] or m["from"]
            if name and (facts.node(name) is not None or facts.k8s_node(name) is not None):
                refused[name].append(ev)
    findings: list[Finding] = []
    for node, events in sorted(refused.items()):
        own = [ev for ev in facts.kernel_events_on(node) if _OWN_KEY.search(ev.message)]
        if len(events) < cfg.min_refusals and not own:
            continue
        ref = node_ref(facts, node)
        state = facts.node(node)
        findings.append(Finding(
            check="node_auth_refused", root_cause="node_software_fault",
            message=f"slurmctld refused {len(events)} message(s) from {node} as not authentic (MUNGE credential "
                    "invalid): its MUNGE key is not the cluster's"
                    + (" — the node created its own key at install" if own else "")
                    + (f"; it is {state.state}{'+' + '+'.join(state.flags) if state and state.flags else ''} because its "
                       "registrations never count, and resuming it will not help" if state and state.state else "")
                    + ": copy the cluster's munge.key, restart munged and slurmd",
            culprits=[ref.culprit], strength="direct",
            confidence=confidence("direct", corroborated=bool(own) or len(events) >= 3),
            evidence=[kernel_evidence(e) for e in events[:2] + own[:1]],
            suggested_actions=take_out_of_service(facts, ref, "MUNGE key differs from the cluster's")))
    return findings
