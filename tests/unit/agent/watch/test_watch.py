"""`warden watch --once` through the CLI over a snapshot directory that changes between sweeps: the
new finding is posted once, the unchanged one not again, a healthy cluster never; the cool-down
lives in the run store, so separate processes (cron) agree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app

REPO = Path(__file__).resolve().parents[4]
XID = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
MDT = REPO / "evals" / "incidents" / "metadata-wall-open-stat-storm" / "snapshot"
HEALTHY = REPO / "evals" / "incidents" / "healthy-long-job-progressing" / "snapshot"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("WARDEN_HOME", str(h))
    return h


def _sweep(snap: Path) -> str:
    r = CliRunner().invoke(app, ["watch", str(snap), "--once", "--post", "file:w.jsonl"])
    assert r.exit_code == 0, r.output
    return r.output


def _posted(home: Path) -> list[dict]:
    p = home / "posts" / "w.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_changed_snapshot_posts_once_per_new_finding(home, tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(XID, snap)
    assert "posted: file:" in _sweep(snap)
    assert "unchanged" in _sweep(snap)
    shutil.rmtree(snap)
    shutil.copytree(MDT, snap)  # the cluster changed: another cause
    assert "posted: file:" in _sweep(snap)
    assert "unchanged" in _sweep(snap)
    causes = [p["diagnosis"]["root_cause"] for p in _posted(home)]
    assert causes == ["gpu_hardware_fault", "metadata_wall"]
    assert all(p["mode"] == "observe" and all(x["status"] in ("observed", "refused") for x in p["plans"]) for p in _posted(home))


def test_healthy_is_never_posted(home):
    assert "healthy: nothing to post" in _sweep(HEALTHY)
    assert _posted(home) == []


def test_bad_options_are_one_line_errors(home):
    r = CliRunner().invoke(app, ["watch", "--once"])
    assert r.exit_code == 2 and "PATH or --live" in r.output
    r = CliRunner().invoke(app, ["watch", str(XID), "--every", "1s"])
    assert r.exit_code == 2 and "at least 10 s" in r.output
    r = CliRunner().invoke(app, ["watch", str(XID), "--post", "irc:#ops"])
    assert r.exit_code == 2 and "slack:CHANNEL_ID" in r.output
