"""check_interconnect_link_down: a node whose network link (InfiniBand, RoCE/Ethernet, NVLink) is down or flapping.

Attribution is to the node whose port or NIC reported the fault, never to the rank that printed the
collective's timeout: the kernel's link lines (mlx5 port state, cable-module errors, ``ens1f0np0: Link
down``), NCCL's ``NET/IB : Got async event : port error`` and UCX transport errors printed by a host about its
own NIC, NVLink Xids (74, 144-150), DCGM NVLink recovery errors, and node_exporter InfiniBand counters that
grew (link downed, symbol errors) in a Prometheus range query or between two scrapes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from pydantic import Field

from tools.checks.base import CheckConfig, kernel_evidence, log_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs, first_seen, job_nodes, powered_off
from tools.knowledge.dcgm import IB_COUNTER_FIELDS
from tools.knowledge.precedence import confidence
from tools.knowledge.xid import NVLINK_XIDS, xid_class
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import LinkEvent, NetEvent, XidEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["InterconnectConfig", "check_interconnect_link_down"]


class InterconnectConfig(CheckConfig):
    """Thresholds for link events."""

    min_link_down: int = 1
    """Link-fault events on one node that make it a culprit."""
    flap_downs: int = 2
    """Downs of one port, each followed by the link coming back, that make it a flapping link. A
    port that went down once and came back up (link training at boot, a reseated cable) is not a
    fault; one still down is, however often it went down."""
    nvlink_xids: frozenset[int] = Field(default=NVLINK_XIDS)
    min_counter_increase: float = 10.0
    """Growth of an IB error counter (symbol errors, receive errors ...) within the query window; link-downed
    counts are judged like kernel link-down lines (``flap_downs``)."""
    counter_window_h: float = 24.0
    """How far back counter growth counts: errors that stopped growing before this are history."""
    nvlink_recovery_errors: float = 1.0
    """DCGM NVLink recovery errors on one GPU that make its link faulty."""


@dataclass
class _Node:
    events: list[object] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    what: set[str] = field(default_factory=set)
    direct: bool = False


def _link_state(ev: LinkEvent) -> str | None:
    """``up``/``down`` for link and cable events: a port going down, a cable unplugged or reporting
    an error (bad or shorted cable/module) is down; a port up or a cable plugged in is up."""
    if ev.state in ("down", "up"):
        return ev.state
    detail = (ev.detail or "").lower()
    if ev.state in ("module_error", "error") or "unplugged" in detail:
        return "down"
    if ev.state == "module_event" and "plugged" in detail:
        return "up"
    return None


def _names_nvlink(ev: XidEvent) -> bool:
    """An Xid outside the known classes whose driver text names an NVLink link (``Link Training Failed: NVLink link
    7``): newer drivers add NVLink Xids before any table lists them; the driver's own words say what failed."""
    return xid_class(ev.xid) == "unknown" and "nvlink" in ev.message.lower()


def _kernel_links(facts: Facts, cfg: InterconnectConfig, nodes: dict[str, _Node]) -> None:
    port_downs: dict[tuple[str, str, str], list[LinkEvent]] = defaultdict(list)
    port_up: dict[tuple[str, str, str], bool] = {}
    for ev in facts.kernel_events_of("ib_link"):
        if ev.node and powered_off(facts, ev.node):
            continue  # power saving shut the node off: its ports going down are that shutdown
        state = _link_state(ev) if ev.node else None
        if state is None:
            continue
        port = (ev.node, ev.device or "", ev.port or f"module {ev.module or ''}")
        port_up[port] = state == "up"
        if state == "down":
            port_downs[port].append(ev)
    for port, events in port_downs.items():
        if port_up[port] and len(events) < cfg.flap_downs:
            continue  # went down and came back: recovered, not a fault
        n = nodes[port[0]]
        n.events += events
        n.evidence += [kernel_evidence(e) for e in events]
        n.what.add(f"{events[0].link_type} port {port[2]} " + ("flapping" if port_up[port] else "down"))
        n.direct = True
    named: dict[str, set[str | None]] = defaultdict(set)  # node -> GPUs with an NVLink-named Xid of no known class
    for ev in facts.kernel_events_of("xid"):
        if isinstance(ev, XidEvent) and ev.node and _names_nvlink(ev):
            named[ev.node].add(ev.pci)
    for ev in facts.kernel_events_of("xid"):
        # On more than two GPUs of a node at once it is one event across them (fabric, power, driver): gpu_xid's.
        by_name = _names_nvlink(ev) and len(named[ev.node]) <= 2 if isinstance(ev, XidEvent) and ev.node else False
        if isinstance(ev, XidEvent) and ev.node and (ev.xid in cfg.nvlink_xids or by_name):
            n = nodes[ev.node]
            n.events.append(ev)
            n.evidence.append(kernel_evidence(ev))
            n.what.add(f"NVLink Xid {ev.xid}")
            n.direct = True


def _transport(facts: Facts, cfg: InterconnectConfig, nodes: dict[str, _Node]) -> None:
    """NCCL/UCX events a host printed about its own NIC (a port error, retries exceeded). A port error
    followed by ``port active`` on the same host and device is a recovered flap: counted only when it
    recurred ``flap_downs`` times (every rank prints the same event once: one episode)."""
    by_port: dict[tuple[str, str], list[NetEvent]] = defaultdict(list)
    for ev in facts.job_events_of("net_event"):
        if not isinstance(ev, NetEvent) or not ev.local:
            continue  # "retries exceeded" blames the far end, whose port the kernel lines name
        allocated = job_nodes(facts, ev.job or "")
        host = ev.host if ev.host and (facts.node(ev.host) or ev.host in allocated) else None
        if host is None:
            host = allocated[0] if len(allocated) == 1 else None
        if host is not None:
            by_port[(host, ev.device or "")].append(ev)
    for (host, _device), events in by_port.items():
        events.sort(key=lambda e: (e.file, e.line))
        episodes, down = 0, False
        for e in events:
            if e.fatal and not down:
                episodes += 1
            down = e.fatal
        if not episodes or (not down and episodes < cfg.flap_downs):
            continue  # came back and did not recur
        fatal = [e for e in events if e.fatal]
        n = nodes[host]
        n.events += fatal
        n.evidence += [log_evidence(e) for e in fatal[:3]]
        n.what |= {f"{e.transport} {e.what}" + (f" on {e.device}" if e.device else "") for e in fatal[:2]}


_WINDOWED = re.compile(r"^\s*(increase|rate|irate|delta)\(\s*(\w+)\s*(\{[^}]*\})?\s*\[(\d+)([smhdw])\]\s*\)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _windowed(facts: Facts) -> dict[tuple[str, str, str], float]:
    """Growth of IB counters that the query itself measured over its window (``increase(x[24h])``,
    ``rate(x[5m])`` times the window), per (node, counter, port). A counter is cumulative until cleared:
    the growth is what says whether the port is failing now, not the total."""
    out: dict[tuple[str, str, str], float] = {}
    for name in sorted(facts.metric_names()):  # a set: sorted, so the evidence order is the same in every process
        m = _WINDOWED.match(name)
        if not m or m.group(2) not in IB_COUNTER_FIELDS:
            continue
        seconds = int(m.group(4)) * _UNIT_S[m.group(5)]
        scale = seconds if m.group(1) in ("rate", "irate") else 1
        for s in facts.samples(name):
            if s.node:
                key = (s.node, m.group(2), f"{s.labels.get('device', '?')}:{s.labels.get('port', '?')}")
                out[key] = max(out.get(key, 0.0), s.value * scale)
    return out


def _recent_growth(points: list[tuple[float, float]], now_s: float, window_s: float) -> float:
    """Growth of a cumulative counter within the ``window_s`` before ``now_s``: the newest value minus
    the newest value at or before the window's start (or the oldest point inside it). A reset (the value
    going down: counters cleared, host rebooted) restarts the count."""
    points = sorted(points)
    start = now_s - window_s
    base = next((v for t, v in reversed(points) if t <= start), None)
    inside = [(t, v) for t, v in points if t > start]
    if not inside:
        return 0.0
    grew, prev = 0.0, base if base is not None else inside[0][1]
    for _t, v in inside:
        grew += v - prev if v >= prev else v  # after a reset the new value is all growth
        prev = v
    return grew


def _counters(facts: Facts, cfg: InterconnectConfig, nodes: dict[str, _Node]) -> None:
    """Counters that grew within the last ``counter_window_h`` (a range query or several scrapes), or whose
    ``increase()``/``rate()`` over the query's window crosses the threshold, per node and port. A non-zero
    total that is not growing is history (a reseated cable), not a fault."""
    series: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for s in facts.samples(*IB_COUNTER_FIELDS):
        if s.node:
            port = f"{s.labels.get('device', '?')}:{s.labels.get('port', '?')}"
            series[(s.node, s.name, port)].append((s.timestamp_s or 0.0, s.value))
    now_s = facts.captured_at.timestamp()
    # The window ends at the series' newest point (a range query may cover a past incident), never later.
    growth = {key: _recent_growth(points, min(now_s, max(t for t, _ in points)), cfg.counter_window_h * 3600)
              for key, points in series.items() if len(points) >= 2}
    measured = _windowed(facts)
    growth.update(measured)  # the query's own increase() is the better measurement of the same thing
    for (node, name, port), grew in growth.items():
        limit = cfg.flap_downs if name == "node_infiniband_link_downed_total" else cfg.min_counter_increase
        if grew >= limit:
            how = "over the query's window" if (node, name, port) in measured else \
                f"in the last {cfg.counter_window_h:g} h"
            n = nodes[node]
            n.evidence.append(Evidence(text=f"{name} on {node} {port} grew by {grew:g} {how} "
                                            f"(threshold {limit:g})", metric=name, value=grew,
                                       unit="count"))
            n.what.add(f"IB {IB_COUNTER_FIELDS[name]} on {port}")
            n.direct = True
    for s in facts.samples("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"):
        if s.node and s.value >= cfg.nvlink_recovery_errors:
            n = nodes[s.node]
            n.evidence.append(Evidence(text=f"{s.name}={s.value:g} on {s.node} GPU {s.gpu}", metric=s.name,
                                       value=s.value, unit="count"))
            n.what.add("NVLink recovery errors")
            n.direct = True


IB_RATE = "node_infiniband_rate_bytes_per_second"
"""node_exporter's infiniband collector: the port's negotiated data rate (bytes/s): width x lane speed."""


def _slow_ports(facts: Facts, nodes: dict[str, _Node]) -> None:
    """A port up at a fraction of the rate the fleet's other ports run (retrained at 1x or a lower speed after
    a flap): the link carries traffic, slowly, and every collective through it waits."""
    rates: dict[tuple[str, str], float] = {}
    for s in facts.samples(IB_RATE):
        if s.node and s.value > 0:
            rates[(s.node, f"{s.labels.get('device', '?')}:{s.labels.get('port', '?')}")] = s.value
    if len(rates) < 4:
        return
    values = sorted(rates.values())
    typical = values[len(values) // 2]
    for (node, port), rate in rates.items():
        if rate < 0.5 * typical:
            n = nodes[node]
            n.evidence.append(Evidence(text=f"{IB_RATE} on {node} {port} = {rate / 1e9:g} GB/s, the fleet's ports "
                                            f"run at {typical / 1e9:g} GB/s", metric=IB_RATE, value=rate, unit="B/s"))
            n.what.add(f"IB port {port} trained at {rate / typical:.0%} of its peers' rate")
            n.direct = True


def check_interconnect_link_down(facts: Facts, cfg: InterconnectConfig) -> list[Finding]:
    """interconnect_fault per node with a link that is down or flapping, NVLink Xids or recovery errors,
    IB fault counters that grew, or NIC transport errors it printed itself (see the module docstring).

    Evidence strength: direct for kernel lines and counters; symptom for transport errors alone.
    """
    nodes: dict[str, _Node] = defaultdict(_Node)
    _kernel_links(facts, cfg, nodes)
    _transport(facts, cfg, nodes)
    _counters(facts, cfg, nodes)
    _slow_ports(facts, nodes)
    findings: list[Finding] = []
    for node, n in nodes.items():
        if len(n.evidence) < cfg.min_link_down:
            continue
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node], since=first_seen(facts, n.events))
        what = ", ".join(sorted(n.what))
        culprits, follow = victims(facts, ref, f"collectives failed on {node}'s link", jobs=jobs)
        strength = "direct" if n.direct else "symptom"
        if _host_network_lost(facts, node, n):
            # Only Ethernet lost, and slurmctld cannot reach slurmd: the network it talks over is what went.
            findings.append(Finding(
                check="interconnect_link_down", root_cause="node_unresponsive",
                message=f"{node} lost its host network ({what}) and Slurm marks it not responding: slurmd cannot "
                        "reach slurmctld over it (management Ethernet or bond), whatever the job fabric does",
                culprits=[ref.culprit, *culprits], evidence=n.evidence[:6], strength="direct",
                confidence=confidence("direct", corroborated=True),
                suggested_actions=take_out_of_service(facts, ref, f"host network down: {what[:80]}") + follow,
            ))
            continue
        running = _unhurt_jobs(facts, node, n)
        if running:
            findings.append(Finding(
                check="interconnect_link_down", root_cause="healthy",
                message=f"{what} on {node}, but slurmd answers and job(s) {', '.join(running[:3])} there run on, their "
                        "logs free of network errors: an Ethernet port off the job's path (a second port, a cable being worked "
                        "on); fix it at leisure, nothing to drain or resubmit",
                culprits=[ref.culprit], evidence=n.evidence[:4], strength="state", confidence=0.3))
            continue
        findings.append(Finding(
            check="interconnect_link_down", root_cause="interconnect_fault",
            message=f"{len(n.evidence)} link fault event(s) on {node}: {what} (threshold {cfg.min_link_down})",
            culprits=[ref.culprit, *culprits], evidence=n.evidence[:6],
            strength=strength, confidence=confidence(strength, corroborated=len(n.what) >= 2),
            suggested_actions=take_out_of_service(facts, ref, f"interconnect fault: {what[:80]}") + follow
            # An NVLink error is the GPU baseboard's: NVIDIA's field diagnostic tells a bad link from a bad GPU.
            + ([ActionSpec(type="run_gpu_diagnostic", node=node, reason="NVLink errors: dcgmi diag -r 3 (NVLink and "
                           "GPU tests) before the node returns")] if any(w.startswith("NVLink") for w in n.what) else []),
        ))
    return findings


_PCI_FN = re.compile(r"\b([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d)\b", re.IGNORECASE)
_HURT = ("nccl_timeout", "nccl_remote_error", "traceback")


def _unhurt_jobs(facts: Facts, node: str, n: _Node) -> list[str]:
    """Jobs running on ``node`` that its faults left alone, when every fault is an Ethernet port (or a cable
    module of the same PCI function) and slurmd still answers: each job RUNNING, its log read and free of NCCL
    timeouts, remote errors and tracebacks. Empty otherwise (including when no job runs there)."""
    slurm = facts.node(node)
    if slurm is None or slurm.not_responding or not n.events or not all(isinstance(e, LinkEvent) for e in n.events):
        return []
    eth_fns = {m.group(1) for e in facts.kernel_events_on(node) if isinstance(e, LinkEvent) and e.link_type == "ethernet"
               and (m := _PCI_FN.search(e.message))}
    for e in n.events:
        fn = _PCI_FN.search(e.message)
        if e.link_type != "ethernet" and not (fn and fn.group(1) in eth_fns):  # type: ignore[union-attr]
            return []
    jobs = facts.jobs_on_node(node, states=None)
    if not jobs or any((j.state or "") != "RUNNING" for j in jobs):
        return []
    logged = facts.cached("logged_jobs", lambda: {s.job for s in facts.job_logs if s.job})
    if any(j.job_id not in logged for j in jobs):
        return []  # a job whose log was not read may be failing: nothing says it is unhurt
    if any(ev.kind in _HURT for j in jobs for ev in facts.job_events(j.job_id)):
        return []
    return [j.job_id for j in jobs]


def _host_network_lost(facts: Facts, node: str, n: _Node) -> bool:
    """Every fault on the node is an Ethernet port down (``ice … ens1f0: NIC Link is Down``, bond members) and
    slurmctld marks the node not responding. A RoCE rail port that fails leaves slurmd reachable over the
    management network; when slurmd is unreachable, the Ethernet that failed is the one slurmd uses."""
    slurm = facts.node(node)
    if slurm is None or not (slurm.not_responding or "not responding" in (facts.reason_of(node) or "").lower()):
        return False
    return bool(n.events) and all(isinstance(e, LinkEvent) and e.link_type == "ethernet" for e in n.events)
