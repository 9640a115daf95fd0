"""check_gpu_pcie_link: a GPU whose PCIe link is degraded — trained narrower or slower than it can run, or
replaying packets — which slows every transfer to and from it (a bad riser, slot, cable or GPU).

Sources: nvidia-smi ``pcie.link.width.current`` / ``.max`` and ``pcie.link.gen.current`` / ``.max`` (the
generation drops at idle to save power, so a lower generation counts only on a busy GPU; the width never
drops by design), the kernel's ``… available PCIe bandwidth, limited by … (capable of …)`` line for the
GPU's address, DCGM_FI_DEV_PCIE_REPLAY_COUNTER growth (two points, or an ``increase()`` query), and the
AER driver's corrected errors from the GPU's address (corroboration).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tools.checks.base import CheckConfig, kernel_evidence
from tools.facts import Facts
from tools.facts.queries import affected_jobs
from tools.knowledge.dcgm import PCIE_REPLAY
from tools.knowledge.host import nic_driver
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding
from tools.models.logs import PcieEvent
from tools.platform import node_ref, take_out_of_service, victims

__all__ = ["PcieLinkConfig", "check_gpu_pcie_link"]


class PcieLinkConfig(CheckConfig):
    """Thresholds for a degraded PCIe link."""

    busy_util_pct: float = 30.0
    """A GPU this busy should run at its top PCIe generation."""
    replay_increase: float = 50.0
    """PCIe replays within the recorded window that make a link faulty."""
    aer_corrected: int = 3
    """Corrected AER errors from one GPU's address that corroborate a degraded link."""


@dataclass
class _Node:
    evidence: list[Evidence] = field(default_factory=list)
    what: set[str] = field(default_factory=set)
    aer: int = 0


def _num(text: str | None) -> float | None:
    try:
        return float((text or "").split()[0])
    except (ValueError, IndexError):
        return None


def _smi(facts: Facts, cfg: PcieLinkConfig, nodes: dict[str, _Node], gpus: dict[str, set[str]]) -> None:
    for g in facts.gpu_status:
        if not g.node:
            continue
        if g.pci_bus_id:
            gpus[g.node].add(g.pci_bus_id.lower()[-12:])
        f = {k.lower().strip(): v for k, v in g.fields.items()}
        width, width_max = _num(f.get("pcie.link.width.current")), _num(f.get("pcie.link.width.max"))
        gen, gen_max = _num(f.get("pcie.link.gen.current")), _num(f.get("pcie.link.gen.max"))
        busy = (g.utilization_gpu_pct or 0.0) >= cfg.busy_util_pct
        if width and width_max and width < width_max:
            nodes[g.node].what.add(f"GPU {g.index} link x{width:g} of x{width_max:g}")
        elif gen and gen_max and gen < gen_max and busy:
            nodes[g.node].what.add(f"GPU {g.index} link Gen{gen:g} of Gen{gen_max:g} while {g.utilization_gpu_pct:.0f}% busy")
        else:
            continue
        nodes[g.node].evidence.append(Evidence(
            text=f"nvidia-smi on {g.node} GPU {g.index} ({g.pci_bus_id}): PCIe Gen{gen or '?'} x{width or '?'} "
                 f"(max Gen{gen_max or '?'} x{width_max or '?'}), {g.utilization_gpu_pct}% busy", metric="nvidia-smi"))


def _series_blocks(blocks: list) -> list:
    """The blocks of a raw replay counter that can hold a series of two or more points: a block of one node's
    GPUs, each GPU once, whose node no other block names gives each series one point (no growth, nothing
    _replays reports), so it is left out unread (a cluster's pages: one block per node)."""
    per_node: dict[str, int] = {}
    for b in blocks:
        if b.node:
            per_node[b.node] = per_node.get(b.node, 0) + 1
    out = []
    for b in blocks:
        if b.node and per_node[b.node] == 1 and len({k[2] or "?" for k in b.keys}) == len(b.keys):
            continue
        out.append(b)
    return out


def _replays(facts: Facts, cfg: PcieLinkConfig, nodes: dict[str, _Node]) -> None:
    series: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    growth: dict[tuple[str, str], float] = {}
    # Only the replay counter's samples (by name, through the index), not every sample of the page: with two
    # or more such names (a raw counter and an increase() query) file order across them needs the full list.
    names = [n for n in facts.metric_names() if PCIE_REPLAY in n]
    if len(names) <= 1:  # one name: its columns (no MetricSample made per sample)
        blocks = facts.sample_blocks(*names)
        if names and not names[0].startswith(("increase(", "rate(", "delta(")):
            blocks = _series_blocks(blocks)
        rows = ((b.name, k, v, b.times[i] if b.times is not None else None)
                for b in blocks for i, (k, v) in enumerate(zip(b.keys, b.values)))
    else:
        rows = ((s.name, (s.labels, s.node, s.gpu), s.value, s.timestamp_s)
                for s in facts.gpu_samples if PCIE_REPLAY in s.name)
    for name, k, value, ts in rows:
        if not k[1]:
            continue
        key = (k[1], k[2] or "?")
        if name.startswith(("increase(", "rate(", "delta(")):
            growth[key] = max(growth.get(key, 0.0), value)  # the query computed the growth already
        else:
            series[key].append((ts or 0.0, value))
    for key, points in series.items():
        if len(points) >= 2:
            points.sort()
            growth[key] = max(growth.get(key, 0.0), points[-1][1] - points[0][1])
    for (node, gpu), grew in growth.items():
        if grew >= cfg.replay_increase:
            nodes[node].evidence.append(Evidence(text=f"{PCIE_REPLAY} on {node} GPU {gpu} grew by {grew:g} "
                                                      f"(threshold {cfg.replay_increase:g})", metric=PCIE_REPLAY,
                                                 value=grew, unit="replays"))
            nodes[node].what.add(f"GPU {gpu} PCIe replays +{grew:g}")


def _kernel(facts: Facts, nodes: dict[str, _Node], gpus: dict[str, set[str]]) -> None:
    # A GPU's address is also any PCI address an Xid names on that node (NVRM prints it with each Xid).
    xid_pci = {(e.node, (e.pci or "")[-12:]) for e in facts.kernel_events_of("xid") if getattr(e, "pci", None)}
    for e in facts.kernel_events_of("pcie_error"):
        if not isinstance(e, PcieEvent) or not e.node or nic_driver(e.message):
            continue  # a network adapter's own line: nic_pcie_link's
        gpu_address = ((e.pci or "")[-12:] in gpus.get(e.node, set()) or e.message.startswith("nvidia ")
                       or (e.node, (e.pci or "")[-12:]) in xid_pci)
        if e.what == "link_degraded" and (gpu_address or not gpus.get(e.node)):
            nodes[e.node].evidence.append(kernel_evidence(e))
            nodes[e.node].what.add(f"link trained below capability at {e.pci}")
        elif e.what == "aer" and e.corrected and gpu_address:
            nodes[e.node].aer += 1
        elif e.what == "aer" and not e.corrected and gpu_address:
            # An uncorrected (non-fatal or fatal) AER error from the GPU's own address: the link or board
            # lost data; the driver's Xid 32/45/79 that follow are its echo.
            if not any(x.startswith("uncorrected") for x in nodes[e.node].what):
                nodes[e.node].evidence.append(kernel_evidence(e))
            nodes[e.node].what.add(f"uncorrected PCIe error at GPU {e.pci}")


def check_gpu_pcie_link(facts: Facts, cfg: PcieLinkConfig) -> list[Finding]:
    """gpu_hardware_fault per node with a GPU whose PCIe link is degraded (see the module docstring), or
    that reported an uncorrected AER error from a GPU's address (nvidia-smi's bus id, the ``nvidia`` driver's
    own AER lines, or the address of an Xid on that node); repeated corrected AER errors from the same GPU
    corroborate. Drain (or cordon) and resubmit the
    victims, as for any GPU hardware fault: the link is slot, riser or board hardware."""
    nodes: dict[str, _Node] = defaultdict(_Node)
    gpus: dict[str, set[str]] = defaultdict(set)
    _smi(facts, cfg, nodes, gpus)
    _replays(facts, cfg, nodes)
    _kernel(facts, nodes, gpus)
    findings: list[Finding] = []
    for node, n in nodes.items():
        if not n.evidence:
            continue
        ref = node_ref(facts, node)
        jobs = affected_jobs(facts, [node], since=facts.captured_at)
        culprits, follow = victims(facts, ref, f"slowed or failed by {node}'s degraded PCIe link", jobs=jobs)
        aer = f"; {n.aer} corrected AER error(s) from the GPU" if n.aer >= 1 else ""
        findings.append(Finding(
            check="gpu_pcie_link", root_cause="gpu_hardware_fault",
            message=f"{node}: GPU PCIe link {'failed' if any(w.startswith('uncorrected') for w in n.what) else 'degraded'} "
                    f"({', '.join(sorted(n.what))}){aer}",
            culprits=[ref.culprit, *culprits], evidence=n.evidence[:5],
            strength="direct", confidence=confidence("direct", corroborated=n.aer >= cfg.aer_corrected or len(n.what) >= 2),
            suggested_actions=[ActionSpec(type="run_gpu_diagnostic", node=node, reason="degraded PCIe link")]
            + take_out_of_service(facts, ref, "GPU PCIe link degraded") + follow,
        ))
    return findings
