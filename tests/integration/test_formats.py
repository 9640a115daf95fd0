"""What the sandbox emits, read back through Warden's own sources and real parsers.

The sandbox's outputs must be the real formats: the kernel log, job logs, emulated Lustre files
and DCGM exporter text are parsed by tools.parsers exactly as a live or recorded cluster would be.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import emulated, faults
from sandbox.layout import Layout, SandboxConfig
from tools.parsers import parse_artifact
from tools.sources.base import FetchRequest, RawArtifact
from tools.sources.http import HTTPSource
from tools.sources.local import LocalSource


@pytest.fixture
def xid79(state_dir: Path):
    rec = faults.inject("gpu_xid79", state_dir)
    yield rec
    faults.clear("gpu_xid79", state_dir)


def _file(fmt: str, path: Path, **kw: str) -> RawArtifact:
    return RawArtifact(format=fmt, data=path.read_bytes(), path=str(path), **kw)  # type: ignore[arg-type]


def test_kernel_log_and_job_log_parse_to_the_fault(state_dir: Path, xid79: faults.InjectedFault) -> None:
    lay = Layout.of(state_dir)
    assert xid79.node and xid79.log_file and xid79.job
    events = parse_artifact(_file("kernel-log", lay.kernel_log(xid79.node), node=xid79.node))
    assert any(getattr(e, "xid", None) == 79 for e in events)
    log_events = parse_artifact(_file("job-log", xid79.log_file, job=xid79.job))
    kinds = [getattr(e, "kind", "") for e in log_events]
    assert "nccl_timeout" in kinds


def test_exporter_text_parses_with_dcgm_parser(config: SandboxConfig) -> None:
    url = f"http://127.0.0.1:{config.exporter_port('gpu01')}/metrics"
    samples = parse_artifact(HTTPSource().fetch(FetchRequest(format="dcgm-prometheus-text", url=url, node="gpu01")))
    util = [s for s in samples if getattr(s, "name", "") == "DCGM_FI_DEV_GPU_UTIL"]
    assert len(util) == config.gpus_per_node


def test_emulated_lustre_files_parse(state_dir: Path, config: SandboxConfig) -> None:
    lay = Layout.of(state_dir)
    rec = faults.inject("metadata_storm", state_dir)
    try:
        paths = emulated.lustre_paths(lay, config)
        entries = parse_artifact(_file("lctl-job-stats", paths["lctl-job-stats"]))
        storm = [e for e in entries if getattr(e, "job_id", None) == rec.job]
        assert storm and storm[0].ops["open"] == 48_210_334  # type: ignore[attr-defined]
        assert parse_artifact(_file("lctl-md-stats", paths["lctl-md-stats"]))
        assert len(parse_artifact(_file("lfs-df", paths["lfs-df"]))) == 3
        assert len(parse_artifact(_file("lfs-df-inodes", paths["lfs-df-inodes"]))) == 3
    finally:
        faults.clear("metadata_storm", state_dir)


def test_live_slurm_outputs_parse(slurm: LocalSource) -> None:
    nodes = parse_artifact(slurm.fetch(FetchRequest(format="scontrol-node-text", argv=["scontrol", "show", "node"])))
    assert len(nodes) == 4
    info = parse_artifact(slurm.fetch(FetchRequest(format="sinfo-json", argv=["sinfo", "--json"])))
    assert info
