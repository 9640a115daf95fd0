"""Bad input to `warden diagnose`: one line naming the file, exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app

GOOD_SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              4242       gpu    train    alice  R      41:00      2 gpu[016-017]
"""

CASES = {
    "empty": ("slurm/squeue.txt", "squeue-text", b""),
    "non-utf8": ("slurm/squeue.txt", "squeue-text", GOOD_SQUEUE.encode() + b"\xff\xfe bad \x80\n"),
    "truncated-json": ("slurm/squeue.json", "squeue-json", b'{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": [{"job_id": 1'),
    "malformed-json": ("slurm/sinfo.json", "sinfo-json", b"[1, 2, 3]\n"),
    "truncated-table": ("lustre/lfs_df.txt", "lfs-df",
                        b"UUID                   1K-blocks        Used   Available Use% Mounted on\n"
                        b"lustre-OST0000_UUID   1000000  500000\n"),
    "broken-job-stats": ("lustre/job_stats.txt", "lctl-job-stats",
                         b"mdt.lustre-MDT0000.job_stats=\njob_stats:\n- job_id: 42\n  open: {samples: [\n"),
    "bad-prometheus": ("gpu/gpu01.prom", "dcgm-prometheus-text", b'DCGM_FI_DEV_GPU_UTIL{gpu="0" 55\n'),
}


def snapshot(tmp: Path, path: str, fmt: str, data: bytes) -> Path:
    root = tmp / "snap"
    (root / path).parent.mkdir(parents=True)
    (root / path).write_bytes(data)
    (root / "manifest.yaml").write_text(
        f"captured_at: 2026-03-04T10:15:00Z\nfiles:\n  - {{path: {path}, format: {fmt}}}\n")
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_alone_is_inconclusive_exit_3_naming_it(case: str, tmp_path: Path, monkeypatch):
    # The only file is unreadable: the Diagnosis says inconclusive, lists the file, and the exit code is 3.
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    path, fmt, data = CASES[case]
    root = snapshot(tmp_path, path, fmt, data)
    result = CliRunner().invoke(app, ["diagnose", str(root), "--json"])
    assert result.exit_code == 3, result.output
    d = json.loads(result.stdout)
    assert d["root_cause"] == "inconclusive" and d["nothing_read"] is True and d["proposed_actions"] == []
    assert [u["path"] for u in d["unreadable"]] == [path]
    assert "Traceback" not in result.output and path in result.stderr


def test_one_corrupt_file_among_good_ones_is_listed_and_the_rest_diagnosed(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    root = snapshot(tmp_path, "slurm/squeue.txt", "squeue-text", GOOD_SQUEUE.encode())
    (root / "gpu").mkdir()
    (root / "gpu" / "gpu01.prom").write_bytes(b'DCGM_FI_DEV_GPU_UTIL{gpu="0" 55\n')
    (root / "manifest.yaml").write_text("captured_at: 2026-03-04T10:15:00Z\nfiles:\n"
                                        "  - {path: slurm/squeue.txt, format: squeue-text}\n"
                                        "  - {path: gpu/gpu01.prom, format: dcgm-prometheus-text}\n")
    result = CliRunner().invoke(app, ["diagnose", str(root), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert [u["path"] for u in d["unreadable"]] == ["gpu/gpu01.prom"] and d["nothing_read"] is False
    assert d["root_cause"] != "healthy"  # what could not be read keeps it from claiming health
    strict = CliRunner().invoke(app, ["diagnose", str(root), "--json", "--strict"])
    assert strict.exit_code == 2 and strict.stderr.strip().splitlines() == [strict.stderr.strip()]
    assert "gpu/gpu01.prom" in strict.stderr and "Traceback" not in strict.output


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_with_strict_is_one_line_naming_it(case: str, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    path, fmt, data = CASES[case]
    root = snapshot(tmp_path, path, fmt, data)
    result = CliRunner().invoke(app, ["diagnose", str(root), "--json", "--strict"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and path in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_manifest_problems_are_named(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    root = snapshot(tmp_path, "slurm/squeue.txt", "squeue-text", GOOD_SQUEUE.encode())
    (root / "slurm" / "extra.txt").write_text("not listed\n")
    result = CliRunner().invoke(app, ["diagnose", str(root)])
    assert result.exit_code == 2 and "extra.txt" in result.stderr and "not listed" in result.stderr
    (root / "slurm" / "extra.txt").unlink()
    (root / "manifest.yaml").write_text("captured_at: 2026-03-04T10:15:00Z\nfiles:\n  - {path: a.txt, format: no-such}\n")
    result = CliRunner().invoke(app, ["diagnose", str(root)])
    assert result.exit_code == 2 and "files.0.format" in result.stderr


def test_not_a_snapshot_directory(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["diagnose", str(tmp_path)])
    assert result.exit_code == 2 and "not an incident" in result.stderr
