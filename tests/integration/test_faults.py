"""Each sandbox fault injects its real symptoms, and clear puts the sandbox back."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from sandbox import faults, jobs
from sandbox.emulated import lustre_paths
from sandbox.fault_waits import node_responding, prometheus_value
from sandbox.layout import Layout, SandboxConfig
from tools.sources.base import FetchRequest
from tools.sources.http import HTTPSource
from tools.sources.local import LocalSource


@pytest.fixture(autouse=True)
def _no_leftover_fault(state_dir: Path):
    """Clear every fault a test left active, even when it failed half-way."""
    yield
    for name in list(faults.active(state_dir)):
        faults.clear(name, state_dir)


def _exporter_lines(cfg: SandboxConfig, node: str, field: str) -> list[str]:
    url = f"http://127.0.0.1:{cfg.exporter_port(node)}/metrics"
    text = HTTPSource().fetch(FetchRequest(format="dcgm-prometheus-text", url=url)).data.decode()
    return [line for line in text.splitlines() if line.startswith(field + "{")]


def _manifest_ok(ckpt: Path) -> bool:
    manifest = json.loads((ckpt / "manifest.json").read_text())
    return all(
        (ckpt / f["path"]).stat().st_size == f["size_bytes"]
        and hashlib.sha256((ckpt / f["path"]).read_bytes()).hexdigest() == f["sha256"]
        for f in manifest["files"]
    )


def test_gpu_xid79(state_dir: Path, config: SandboxConfig) -> None:
    lay = Layout.of(state_dir)
    rec = faults.inject("gpu_xid79", state_dir)
    assert rec.node == "gpu02" and rec.job
    kernel = lay.kernel_log(rec.node).read_text()
    assert re.search(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] NVRM: Xid \(PCI:0000:47:00\): 79, pid='<unknown>', "
                     r"name=<unknown>, GPU has fallen off the bus\.$", kernel, re.M)
    xid = _exporter_lines(config, rec.node, "DCGM_FI_DEV_XID_ERRORS")
    assert [line.rsplit(" ", 1)[1] for line in xid] == ["0", "0", "79", "0"]
    assert rec.log_file is not None
    assert re.search(r"^\[rank0\]:\[E\d{4} [\d:.]+ \d+ ProcessGroupNCCL\.cpp:\d+\] \[Rank 0\] Watchdog caught collective "
                     r"operation timeout: WorkNCCL\(SeqNum=\d+, OpType=ALLREDUCE", rec.log_file.read_text(), re.M)
    assert jobs.job_state(lay, rec.job) == ("RUNNING", rec.node)
    deadline = time.monotonic() + 4 * config.scrape_interval_s + 5
    while (prometheus_value(config, f'max(DCGM_FI_DEV_XID_ERRORS{{Hostname="{rec.node}"}})') or 0) != 79:
        assert time.monotonic() < deadline, "Prometheus never scraped Xid 79"
        time.sleep(1)

    faults.clear("gpu_xid79", state_dir)
    assert "Xid" not in lay.kernel_log(rec.node).read_text()
    assert {line.rsplit(" ", 1)[1] for line in _exporter_lines(config, rec.node, "DCGM_FI_DEV_XID_ERRORS")} == {"0"}
    assert jobs.job_state(lay, rec.job)[0] == "CANCELLED"


def test_node_unresponsive(state_dir: Path, slurm: LocalSource) -> None:
    lay = Layout.of(state_dir)
    rec = faults.inject("node_unresponsive", state_dir)
    assert rec.node == "gpu03"
    state = slurm.run(["sinfo", "-h", "-n", rec.node, "-o", "%T"]).decode().strip()
    assert state.endswith("*") or state.startswith("down"), state
    faults.clear("node_unresponsive", state_dir)
    assert node_responding(lay, rec.node)


def test_straggler(state_dir: Path, config: SandboxConfig) -> None:
    rec = faults.inject("straggler", state_dir)
    assert rec.node == "gpu04"
    assert {line.rsplit(" ", 1)[1] for line in _exporter_lines(config, "gpu04", "DCGM_FI_DEV_SM_CLOCK")} == {"705"}
    assert {line.rsplit(" ", 1)[1] for line in _exporter_lines(config, "gpu01", "DCGM_FI_DEV_SM_CLOCK")} == {"1410"}
    assert (prometheus_value(config, 'max(DCGM_FI_DEV_SM_CLOCK{Hostname="gpu04"})') or 0) < 1000
    util = prometheus_value(config, 'avg(DCGM_FI_DEV_GPU_UTIL{Hostname="gpu04"})')
    assert util is not None and util < 50
    faults.clear("straggler", state_dir)
    assert {line.rsplit(" ", 1)[1] for line in _exporter_lines(config, "gpu04", "DCGM_FI_DEV_SM_CLOCK")} == {"1410"}


def test_gpu_oom(state_dir: Path, slurm: LocalSource) -> None:
    rec = faults.inject("gpu_oom", state_dir)
    acct = slurm.run(["sacct", "-n", "-X", "-P", "-j", str(rec.job), "-o", "State,ExitCode"]).decode().strip()
    assert acct == "FAILED|1:0"
    log = rec.log_file.read_text() if rec.log_file else ""
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity" in log
    assert "step=3 loss=" in log and "step=4 loss=" not in log
    assert faults.clear("gpu_oom", state_dir) is not None


def test_pending_forever(state_dir: Path, slurm: LocalSource) -> None:
    rec = faults.inject("pending_forever", state_dir)
    time.sleep(2)
    row = slurm.run(["squeue", "-h", "-j", str(rec.job), "-o", "%T|%D|%r"]).decode().strip()
    state, nodes, reason = row.split("|")
    assert state == "PENDING" and nodes == "5"
    assert reason in ("PartitionNodeLimit", "PartitionConfig"), reason
    faults.clear("pending_forever", state_dir)
    assert jobs.job_state(Layout.of(state_dir), str(rec.job))[0] == "CANCELLED"


def test_timeout_without_checkpoint(state_dir: Path, slurm: LocalSource) -> None:
    lay = Layout.of(state_dir)
    rec = faults.inject("timeout_without_checkpoint", state_dir)
    limit = slurm.run(["squeue", "-h", "-j", str(rec.job), "-o", "%l"]).decode().strip()
    assert limit == "1:00"
    jobs.wait_job_state(lay, str(rec.job), {"TIMEOUT"}, timeout_s=180)
    log = rec.log_file.read_text() if rec.log_file else ""
    assert re.search(rf"\*\*\* JOB {rec.job} ON gpu\d\d CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*", log)
    assert "step=30 loss=" in log and "saved checkpoint" not in log
    assert rec.log_file is not None and not any((rec.log_file.parent / "checkpoints").iterdir())
    faults.clear("timeout_without_checkpoint", state_dir)


def test_metadata_storm(state_dir: Path, config: SandboxConfig) -> None:
    lay = Layout.of(state_dir)
    rec = faults.inject("metadata_storm", state_dir)
    paths = lustre_paths(lay, config)
    job_stats = paths["lctl-job-stats"].read_text()
    assert job_stats.startswith(f"mdt.{config.lustre_fs}-MDT0000.job_stats=\njob_stats:\n")
    block = job_stats.split(f"- job_id:          {rec.job}\n", 1)[1].split("- job_id:", 1)[0]
    assert re.search(r"^  open:\s+\{ samples:\s+48210334, unit: usecs,", block, re.M)
    md = paths["lctl-md-stats"].read_text()
    assert re.search(r"^getattr\s+96\d{6} samples \[usecs\]", md, re.M)
    assert jobs.job_state(lay, str(rec.job))[0] == "RUNNING"
    faults.clear("metadata_storm", state_dir)
    assert f"job_id:          {rec.job}\n" not in paths["lctl-job-stats"].read_text()


def test_checkpoint_corrupt(state_dir: Path, slurm: LocalSource) -> None:
    rec = faults.inject("checkpoint_corrupt", state_dir)
    acct = slurm.run(["sacct", "-n", "-X", "-P", "-j", str(rec.job), "-o", "State,ExitCode"]).decode().strip()
    assert acct == "FAILED|1:0"
    log = rec.log_file.read_text() if rec.log_file else ""
    assert "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory" in log
    ckpts = sorted((rec.files[0].parent.parent).glob("step_*"))
    assert [c.name for c in ckpts] == ["step_000002", "step_000004", "step_000006"]
    assert not _manifest_ok(ckpts[-1]) and _manifest_ok(ckpts[-2])
    faults.clear("checkpoint_corrupt", state_dir)
    assert _manifest_ok(ckpts[-1])
