"""check_lustre_unavailable: clients losing their Lustre servers (lost connections, evictions, LNet timeouts)."""

from __future__ import annotations

from collections import defaultdict

from tools.checks.base import CheckConfig, affected_jobs, job_culprits, kernel_event_time, kernel_evidence
from tools.facts import Facts
from tools.models.findings import ActionSpec, Finding
from tools.models.logs import KernelEvent

__all__ = ["LustreUnavailableConfig", "check_lustre_unavailable"]

_BAD_STATES = ("connection_lost", "evicted", "request_timeout", "lnet_timeout", "op_failed")


class LustreUnavailableConfig(CheckConfig):
    """Thresholds for client-side Lustre errors."""

    min_events: int = 2
    """Error events (lost connection, eviction, timeout) that make a finding."""
    single_client_share: float = 0.34
    """If no more than this share of nodes with kernel logs report errors, the fault is on those
    clients (drain them); above it, the servers or LNet are at fault."""


def _fs(ev: KernelEvent) -> str | None:
    target = ev.fields.get("target") or ""
    for sep in ("-OST", "-MDT", "-MGS"):
        if sep in target:
            return target.split(sep)[0]
    return None


def check_lustre_unavailable(facts: Facts, cfg: LustreUnavailableConfig) -> list[Finding]:
    """storage_unavailable when kernel logs show Lustre clients losing OST/MDT connections, being
    evicted, or LNet timing out — and the connections were not restored afterwards.

    Sources: kernel-log events of kind lustre_error (fields state, target, nid), hung_task events.
    """
    bad: dict[str, list[KernelEvent]] = defaultdict(list)
    restores: dict[str, list[KernelEvent]] = defaultdict(list)
    for ev in facts.kernel_events:
        if ev.kind != "lustre_error" or not ev.node:
            continue
        state = ev.fields.get("state", "")
        if state == "connection_restored":
            restores[ev.node].append(ev)
        elif state in _BAD_STATES:
            bad[ev.node].append(ev)

    def recovered(e: KernelEvent) -> bool:
        """A later "Connection restored" on the node to the same target or server NID; an LNet
        timeout that names neither ("Timed out tx: active_txs") is recovered by any later restore."""
        later = [r for r in restores[e.node or ""] if r.file == e.file and r.line > e.line]
        keys = {e.fields.get("target"), e.fields.get("nid")} - {None, ""}
        return any(not keys or keys & {r.fields.get("target"), r.fields.get("nid")} for r in later)

    # Errors followed by a restored connection to the same server are a recovered blip.
    for node in list(bad):
        bad[node] = [e for e in bad[node] if not recovered(e)]
        if len(bad[node]) < cfg.min_events:
            del bad[node]
    if not bad:
        return []
    logged_nodes = {e.node for e in facts.kernel_events if e.node} | {a.node for a in facts.artifacts
                                                                      if a.format == "kernel-log" and a.node}
    share = len(bad) / max(len(logged_nodes), 1)
    events = [e for evs in bad.values() for e in evs]
    fss = sorted({fs for e in events if (fs := _fs(e))})
    targets = sorted({e.fields["target"] for e in events if e.fields.get("target")})
    hung = [e for e in facts.kernel_events if e.kind == "hung_task" and e.node in bad]
    times = [t for e in events if (t := kernel_event_time(facts, e)) is not None]
    slow_only = all(e.fields.get("state") == "request_timeout" for e in events)
    jobs = affected_jobs(facts, bad, since=min(times) if times else None)
    client_side = share <= cfg.single_client_share and len(logged_nodes) >= 3
    culprits = ([f"node:{n}" for n in sorted(bad)] if client_side else []) + [f"fs:{fs}" for fs in fss]
    # Confined to a few clients: drain them. Servers or LNet down: nothing on the compute nodes to
    # fix, so tell the owners of the hung jobs (a resubmit would hang the same way).
    actions = [ActionSpec(type="drain_node", node=n, reason="Lustre client lost its servers") for n in sorted(bad)] \
        if client_side else [ActionSpec(type="notify_owner", job=j, reason="job hung on unreachable Lustre servers")
                             for j in jobs]
    where = f"{len(bad)} of {len(logged_nodes)} node(s)"
    return [Finding(
        check="lustre_unavailable", root_cause="storage_unavailable",
        message=f"{len(events)} Lustre connection loss/eviction/timeout event(s) on {where} "
        f"({', '.join(targets[:4]) or 'targets not named'}; threshold {cfg.min_events} per node)"
        + (f"; {len(hung)} hung task(s)" if hung else "")
        + ("; confined to these clients" if client_side else "; servers or LNet unreachable"),
        culprits=culprits + job_culprits(jobs),
        evidence=[kernel_evidence(e) for e in (events[:4] + hung[:2])],
        # Only "timed out for slow reply": the servers answer, slowly (an overloaded MDS/OSS), so this
        # is a symptom of load, not lost servers; a check that sees the load should outrank it.
        confidence=0.5 if slow_only else 0.8 if len(events) >= 2 * cfg.min_events or hung else 0.7,
        suggested_actions=actions,
    )]
