"""GPU samples kept as columns (tools/models/gpu_columns.py, tools/facts/sample_store.py) read as the MetricSamples
the page parser returns: on every dcgm-exporter page in the project, and through Facts' queries on a snapshot that
mixes pages with other sources' samples."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.facts import Facts, build_facts
from tools.models.gpu import MetricSample
from tools.models.gpu_columns import SampleBlock
from tools.parsers.gpu.dcgm_prometheus_text import parse_dcgm_prometheus_blocks, parse_dcgm_prometheus_text
from tools.sources.base import RawArtifact

CORPUS = files_of("dcgm-prometheus-text")
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _dump(samples: list[MetricSample]) -> str:
    return repr([s.model_dump() for s in samples])


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_blocks_hold_the_parsers_samples(path: str, text: str) -> None:
    try:
        expected = parse_dcgm_prometheus_text(text, path=path, node="g1")
    except Exception:  # noqa: BLE001 - the columnar reader must raise alike
        with pytest.raises(Exception):
            parse_dcgm_prometheus_blocks(text, path=path, node="g1")
        return
    got = parse_dcgm_prometheus_blocks(text, path=path, node="g1")
    flat = [s for r in got for s in (r.samples() if isinstance(r, SampleBlock) else [r])]
    assert _dump(flat) == _dump(expected)


def _page(node: str, temps: list[str]) -> bytes:
    lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    lines += [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="GPU-{i}",Hostname="{node}"}} {t}' for i, t in enumerate(temps)]
    lines += ["# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).", "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"]
    lines += [f'DCGM_FI_DEV_SM_CLOCK{{gpu="{i}",UUID="GPU-{i}",Hostname="{node}"}} 1410' for i in range(len(temps))]
    return ("\n".join(lines) + "\n").encode()


def _art(path: str, fmt: str, data: bytes, node: str | None = None) -> RawArtifact:
    return RawArtifact(path=path, format=fmt, data=data, captured_at=NOW, node=node)


def _facts() -> Facts:
    odd = b'# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="g3"} 50 1767225600000\n'
    query = (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP",'
             b'"Hostname":"g4","gpu":"1"},"value":[1767225600,"77"]}]}}')
    return build_facts([
        _art("gpu/g1.prom", "dcgm-prometheus-text", _page("g1", ["40", "9223372036854775794", "NaN"]), "g1"),
        _art("gpu/g3.prom", "dcgm-prometheus-text", odd, "g3"),  # a timestamp: not the plain shape, read as objects
        _art("prom/temp.json", "prometheus-query-json", query),
        _art("gpu/g2.prom", "dcgm-prometheus-text", _page("g2", ["61", "62"]), "g2"),
    ], captured_at=NOW)


def test_facts_give_every_sample_in_file_order_once() -> None:
    facts = _facts()
    temps = facts.samples("DCGM_FI_DEV_GPU_TEMP")
    assert [(s.node, s.gpu, s.value) for s in temps][:1] == [("g1", "0", 40.0)]
    assert [(s.node, s.gpu) for s in temps] == [("g1", "0"), ("g1", "2"), ("g3", "0"), ("g4", "1"), ("g2", "0"),
                                                ("g2", "1")]  # the DCGM blank on g1 GPU 1 is dropped, NaN kept
    assert temps[2].timestamp_s == 1767225600.0
    assert len(facts.gpu_samples) == len(list(facts.gpu_samples)) == 11
    assert facts.samples("DCGM_FI_DEV_GPU_TEMP")[0] is temps[0]  # made once
    assert [s for s in facts.gpu_samples if s.name == "DCGM_FI_DEV_GPU_TEMP"] == temps
    blocks = facts.sample_blocks("DCGM_FI_DEV_GPU_TEMP")
    assert [v for b in blocks for v in b.values][:1] == [40.0]
    assert [b.node for b in blocks] == ["g1", "g3", "g4", "g2"]
    assert [s for b in blocks for s in b.samples()] == temps
    assert facts.sampled_nodes() == {"g1", "g2", "g3", "g4"}
    assert facts.metric_names() == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK"}
    assert next(a for a in facts.artifacts if a.path == "gpu/g1.prom").records == 5
    assert facts.records_read() == 11 + 4


def test_samples_can_be_given_and_replaced() -> None:
    s = MetricSample(name="DCGM_FI_DEV_GPU_UTIL", value=5.0, node="n1", gpu="0")
    facts = Facts(captured_at=NOW, gpu_samples=[s])
    assert list(facts.gpu_samples) == [s] and facts.samples("DCGM_FI_DEV_GPU_UTIL") == [s]
    facts.gpu_samples = []
    assert not facts.gpu_samples and facts.samples("DCGM_FI_DEV_GPU_UTIL") == []
    copy = _facts().model_copy()
    assert len(copy.gpu_samples) == 11
