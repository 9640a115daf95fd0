"""check_gpu_app_clocks: GPUs held below their clocks by an applications-clocks setting someone left behind
(``nvidia-smi -ac 1593,1005`` for an acceptance benchmark or a power test, never reset with ``-rac``). NVML then
reports the clock-event reason ``Applications Clocks Setting`` (bit 0x2) with no thermal or power reason, and
the SM clock sits at the set value on a busy GPU: that node's ranks run slower and the whole job waits for them.

A straggler by configuration, not a fault of the hardware: the node is taken out of service until its clocks are
reset. Sources: nvidia-smi ``-q`` (Clocks, Applications Clocks, Max Clocks, Clocks Event Reasons) or
``--query-gpu`` CSV with clocks and clocks_event_reasons columns; DCGM_FI_DEV_CLOCKS_EVENT_REASONS (or
_CLOCK_THROTTLE_REASONS) with DCGM_FI_DEV_SM_CLOCK against the node's peers; squeue for the jobs there.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import sample_rows
from tools.facts import Facts
from tools.knowledge.dcgm import CLOCK_EVENT_FIELDS
from tools.knowledge.precedence import confidence
from tools.models.findings import Evidence, Finding
from tools.platform import node_ref, take_out_of_service

__all__ = ["GpuAppClocksConfig", "check_gpu_app_clocks"]

_APP_BIT = 0x2
_HW_BITS = 0x8 | 0x20 | 0x40 | 0x80


class GpuAppClocksConfig(CheckConfig):
    """How far below its maximum a GPU's SM clock must sit."""

    max_ratio: float = 0.9
    """SM clock / max SM clock (or the peers' median) at or under which the GPU is held down."""


def _held_smi(facts: Facts, cfg: GpuAppClocksConfig) -> dict[str, list[str]]:
    held: dict[str, list[str]] = defaultdict(list)
    for g in facts.gpu_status:
        reasons = " ".join(g.clocks_event_reasons).lower()
        if (g.node and "applications clocks" in reasons and g.clocks_sm_mhz and g.clocks_max_sm_mhz
                and g.clocks_sm_mhz <= cfg.max_ratio * g.clocks_max_sm_mhz
                and not any(w in reasons for w in ("thermal", "power brake", "hw slowdown"))):
            held[g.node].append(f"GPU {g.index} at {g.clocks_sm_mhz:.0f} of {g.clocks_max_sm_mhz:.0f} MHz")
    return held


def _held_dcgm(facts: Facts, cfg: GpuAppClocksConfig) -> dict[str, list[str]]:
    if not any(k[1] and v > 0 for k, v in sample_rows(facts, "DCGM_FI_DEV_SM_CLOCK")):
        return {}
    # Only the event-reason blocks where some GPU has the applications-clocks bit are read sample by sample
    # (int() of each distinct value in file order, so the first value int() refuses raises as it did per sample).
    candidates = [b for b in facts.sample_blocks(*CLOCK_EVENT_FIELDS)
                  if any(int(v) & _APP_BIT for v in dict.fromkeys(b.values))]
    if not candidates:
        return {}
    sm = {(k[1], k[2]): v for k, v in sample_rows(facts, "DCGM_FI_DEV_SM_CLOCK") if k[1] and v > 0}
    peers = median(sm.values())
    held: dict[str, list[str]] = defaultdict(list)
    for k, v in ((k, v) for b in candidates for k, v in zip(b.keys, b.values)):
        bits = int(v)
        if not bits & _APP_BIT:
            continue
        node, gpu = k[1], k[2]
        clock = sm.get((node, gpu))
        if node and not bits & _HW_BITS and clock and clock <= cfg.max_ratio * peers:
            held[node].append(f"GPU {gpu} at {clock:.0f} MHz (peers' median {peers:.0f})")
    return held


def check_gpu_app_clocks(facts: Facts, cfg: GpuAppClocksConfig) -> list[Finding]:
    """straggler_node per node with GPUs whose clock event is the applications-clocks setting alone and whose SM
    clock is at most ``max_ratio`` of its maximum (or of the peers' median); culprits the node and the jobs
    running there; take it out of service until ``nvidia-smi -rac`` resets the clocks."""
    held = _held_smi(facts, cfg)
    for node, gpus in _held_dcgm(facts, cfg).items():
        held.setdefault(node, gpus)
    findings: list[Finding] = []
    for node, gpus in sorted(held.items()):
        ref = node_ref(facts, node)
        jobs = [j.job_id for j in facts.jobs_on_node(node, states=("RUNNING",))]
        findings.append(Finding(
            check="gpu_app_clocks", root_cause="straggler_node",
            message=f"{node}: {len(gpus)} GPU(s) held down by an applications-clocks setting ({'; '.join(gpus[:3])}), "
                    "no thermal or power reason: clocks left set (nvidia-smi -ac) after a benchmark; reset them with "
                    "nvidia-smi -rac",
            culprits=[ref.culprit, *(f"job:{j}" for j in jobs[:4])], strength="state",
            confidence=confidence("state", corroborated=len(gpus) >= 2),
            evidence=[Evidence(text=f"{node} {g}: clock event reason Applications Clocks Setting", metric="nvidia-smi")
                      for g in gpus[:3]],
            suggested_actions=take_out_of_service(facts, ref, "GPU applications clocks left below their maximum")))
    return findings
