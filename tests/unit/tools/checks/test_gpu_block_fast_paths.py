"""The GPU checks' block-at-once fast paths (a block of one node's GPUs read or skipped whole) give the findings
the per-sample path gives: the same checks run over facts whose blocks name no node (``SampleBlock.node`` None
turns every such fast path off), on generated clusters and on pages with two scrapes of one node, NaN, -0.0,
clock-event bits, power caps and growing PCIe replay counters."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from sandbox.scale import ScaleSpec, generate
from tools.checks import CHECKS
from tools.checks.gpu_peers import gpu_activity
from tools.facts import Facts, build_facts
from tools.sources.base import RawArtifact
from tools.sources.snapshot import SnapshotSource

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
GPU_CHECKS = ("gpu_busy_unowned", "gpu_pcie_link", "gpu_thermal_throttle", "gpu_app_clocks", "gpu_straggler")


def _per_sample(facts: Facts) -> Facts:
    for b in facts.sample_store.blocks(*facts.metric_names()):
        b.node = None
    return facts


def _findings(facts: Facts) -> dict[str, str]:
    out = {}
    for name in GPU_CHECKS:
        spec = CHECKS[name]
        try:
            out[name] = repr([f.model_dump(mode="json") for f in spec.fn(facts, spec.config.model_validate({}))])
        except Exception as e:  # noqa: BLE001 - a check that raises must raise alike
            out[name] = f"{type(e).__name__}: {e}"
    return out


def _built(arts: list[RawArtifact]) -> Facts:
    return build_facts(iter(arts), captured_at=NOW)


def _snapshot(root: Path) -> list[RawArtifact]:
    src = SnapshotSource(root / "snapshot", allow_absent=True)
    return [src.read_bounded(e)[0] for e in src.entries()]


@pytest.mark.parametrize("fault", ["thermal", "xid79", "none"])
def test_generated_cluster(fault: str, tmp_path: Path) -> None:
    arts = _snapshot(generate(ScaleSpec(nodes=40, jobs=300, fault=fault), tmp_path).path)
    fast = _built(arts)
    assert any(b.node for b in fast.sample_blocks("DCGM_FI_DEV_GPU_UTIL"))
    assert _findings(fast) == _findings(_per_sample(_built(arts)))
    assert list(gpu_activity(fast)[1].items()) == list(gpu_activity(_per_sample(_built(arts)))[1].items())


def _page(node: str, values: dict[str, list[str]]) -> RawArtifact:
    lines = []
    for name, vals in values.items():
        lines += [f"# HELP {name} x", f"# TYPE {name} gauge"]
        lines += [f'{name}{{gpu="{i}",UUID="GPU-{node}-{i}",Hostname="{node}"}} {v}' for i, v in enumerate(vals)]
    return RawArtifact(path=f"gpu/{node}-{len(lines)}.prom", format="dcgm-prometheus-text",
                       data=("\n".join(lines) + "\n").encode(), captured_at=NOW, node=node)


def _values(util: str = "90", fb: str = "30000", reason: str = "0", replay: str = "0", clock: str = "1980",
            act: str = "0.9", limit: str = "700", temp: str = "60") -> dict[str, list[str]]:
    return {"DCGM_FI_DEV_GPU_UTIL": [util] * 4, "DCGM_FI_DEV_FB_USED": [fb] * 4,
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": [reason, "0", "0", "0"],
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": [replay] * 4, "DCGM_FI_DEV_SM_CLOCK": [clock, clock, clock, "1980"],
            "DCGM_FI_PROF_SM_ACTIVE": [act, "0.9", "0.9", "0.9"], "DCGM_FI_DEV_POWER_MGMT_LIMIT": [limit] * 4,
            "DCGM_FI_DEV_GPU_TEMP": [temp, "60", "60", "60"]}


def _nodes(n: int) -> RawArtifact:
    """scontrol show node: g0..g{n-1} idle (so a busy GPU there is nobody's)."""
    text = "".join(f"NodeName=g{i} Arch=x86_64\n   Gres=gpu:4\n   State=IDLE ThreadsPerCore=1\n   Partitions=gpu\n\n"
                   for i in range(n))
    return RawArtifact(path="slurm/scontrol_show_node.txt", format="scontrol-node-text", data=text.encode(),
                       captured_at=NOW)


@pytest.mark.parametrize("case", ["two_scrapes", "nan_and_negative_zero", "bits"])
def test_odd_pages(case: str) -> None:
    pages = [_nodes(10)] + [_page(f"g{i}", _values()) for i in range(6)]
    if case == "two_scrapes":  # the same node scraped twice: its replay counter grew, its activity is a mean
        pages += [_page("g1", _values(replay="500", act="0.2")), _page("g2", _values(util="0", fb="0"))]
    elif case == "nan_and_negative_zero":
        pages += [_page("g6", _values(act="-0.0", temp="NaN", util="NaN", replay="NaN")),
                  _page("g7", _values(reason="NaN"))]
    else:  # applications clocks, SW power cap, thermal slowdown, a low power limit
        pages += [_page("g6", _values(reason="2", clock="1200")), _page("g7", _values(reason="4", clock="1000")),
                  _page("g8", _values(reason="32", temp="91")), _page("g9", _values(limit="300"))]
    fast = _built(pages)
    assert _findings(fast) == _findings(_per_sample(_built(pages)))
    assert repr(list(gpu_activity(fast)[1].items())) == repr(list(gpu_activity(_per_sample(_built(pages)))[1].items()))
