"""check_gpu_corrected_ecc: a burst of corrected (single-bit) ECC errors that the snapshot cannot judge.

Corrected errors are corrected: on their own they cost nothing, and NVIDIA's memory error management guide
treats them as history unless they turn into a pending row remap or page retirement, a remap failure, or an
uncorrectable error (Xid 48/63/64/94/95, Xid 92 "high single-bit ECC error rate"). A fast-growing SBE count is
the early sign of a failing HBM stack, so whether it is benign depends on the row-remap / retirement fields and
the node's kernel log. Read clean, a burst is not a fault (no finding); not read, Warden cannot tell, and the
answer is ``inconclusive`` naming what to read — never ``healthy`` and never a drain on a counter alone.
Sources: DCGM field ids (DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, _AGG_TOTAL, ROW_REMAP_*, RETIRED_*), NVIDIA's A100/H100
memory error management guide, the Xid catalogue.
"""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import node_values
from tools.facts import Facts
from tools.facts.queries import kernel_log_nodes
from tools.knowledge.dcgm import GPU_FAULT_FIELDS, SBE_FIELDS
from tools.models.findings import Evidence, Finding
from tools.platform import node_ref

__all__ = ["CorrectedEccConfig", "check_gpu_corrected_ecc"]

_REMAP_FIELDS = tuple(f for f in GPU_FAULT_FIELDS if "REMAP" in f or "RETIRED" in f)


class CorrectedEccConfig(CheckConfig):
    """How many corrected errors make a burst: growth across a GPU's samples, or one volatile reading."""

    min_growth: int = 1000
    min_volatile: int = 10000


def _bursts(facts: Facts, cfg: CorrectedEccConfig) -> dict[str, list[tuple[str, float, str, str]]]:
    """{node: [(gpu, corrected errors, how, metric)]} for GPUs whose SBE count grew by ``min_growth`` across the
    samples of one series, or whose single volatile reading is ``min_volatile`` or more."""
    series: dict[tuple[str, str, str], list[float]] = {}
    for metric in SBE_FIELDS:
        for b in facts.sample_blocks(metric):
            for key, v in zip(b.keys, b.values):
                node = b.node or key[1]
                if node and v == v:  # NaN is no reading
                    k = (node, str(key[2]), metric)
                    series.setdefault(k, []).append(v)
    out: dict[str, list[tuple[str, float, str, str]]] = {}
    for (node, gpu, metric), vals in series.items():
        grew = max(vals) - min(vals) if len(vals) > 1 else 0.0
        if grew >= cfg.min_growth:
            out.setdefault(node, []).append((gpu, grew, f"grew by {grew:,.0f} across {len(vals)} samples", metric))
        elif len(vals) == 1 and metric.endswith("_VOL_TOTAL") and vals[0] >= cfg.min_volatile:
            out.setdefault(node, []).append((gpu, vals[0], f"{vals[0]:,.0f} since driver load", metric))
    return out


def _remap_read(facts: Facts, node: str) -> bool:
    """The node's row-remap / page-retirement fields were read (DCGM), whatever their values."""
    return any(node in node_values(facts, f) for f in _REMAP_FIELDS)


def check_gpu_corrected_ecc(facts: Facts, cfg: CorrectedEccConfig) -> list[Finding]:
    """inconclusive per node whose GPUs show a corrected-ECC burst (see ``_bursts``) while its row-remap /
    retirement fields were not read or its kernel log was not read: the burst may be a failing memory stack or
    nothing, and only those say which. Culprit: the node; no action (read-only next steps in the message). A
    node whose remap fields and kernel log were read gets no finding here: a real remap, retirement or
    uncorrectable error there is gpu_xid's, and a clean reading means the errors were corrected.

    Sources: DCGM SBE fields from dcgm-exporter pages or Prometheus query results; the kernel-log artifacts.
    """
    findings: list[Finding] = []
    kernel_nodes = kernel_log_nodes(facts)
    for node, hits in sorted(_bursts(facts, cfg).items()):
        missing = ([] if _remap_read(facts, node) else ["the row-remap / retired-page fields (nvidia-smi -q -d "
                                                         "ROW_REMAPPER,PAGE_RETIREMENT or DCGM ROW_REMAP_*)"])
        missing += [] if node in kernel_nodes else ["its kernel log (Xid 48/63/64/92/94/95)"]
        if not missing:
            continue
        gpus = ", ".join(f"GPU {g} {how}" for g, _, how, _ in hits[:4])
        findings.append(Finding(
            check="gpu_corrected_ecc", root_cause="inconclusive",
            message=f"{node}: corrected (single-bit) ECC errors in a burst ({gpus}) and no uncorrectable error read; "
                    "corrected errors alone are not a fault, but a fast-growing count can precede a failing memory "
                    f"stack, and {' and '.join(missing)} were not read — read them next (then dcgmi diag -r 3 when the "
                    "node is idle) before taking it out of service",
            culprits=[node_ref(facts, node).culprit],
            evidence=[Evidence(text=f"{node} GPU {g}: {m} {how}", metric=m, value=v) for g, v, how, m in hits[:4]],
            strength="heuristic", confidence=0.5, suggested_actions=[]))
    return findings
