"""Adversarial class from issue 15 item 6: a snapshot too big to read within the run's time limit.

Before: ``limits.wall_time_s`` was checked only before model requests and tool calls, so a run given
a 20,000-file snapshot read and parsed every file, however long that took, and only then stopped
(bench/hardening.py measures it). Now the run's wall time bounds reading too: the limit is asked
before each file is read and before each is parsed; past it, what was read is diagnosed (a partial
Diagnosis, ``stopped_by: wall_time``) and every file not read is listed as unreadable evidence of
kind ``time``.

The guard's clock is replaced by one that advances one second per reading, so which files are read
does not depend on how busy the machine is; the snapshot, the parsers, the checks, the agent loop
and the built-in model are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.limits
from agent.cli.app import app
from agent.diagnose import diagnose
from agent.limits import LoopLimits
from tools.read.context import ReadContext

XID = "[{t:>12.6f}] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
N = 40


def snapshot(tmp_path: Path, n: int = N) -> Path:
    """n kernel logs, each with an Xid 79 on its own node (gpu000 ... gpu039), in manifest order."""
    root = tmp_path / "snap"
    (root / "kernel").mkdir(parents=True)
    entries = []
    for i in range(n):
        (root / f"kernel/gpu{i:03d}.log").write_text(XID.format(t=100.0 + i))
        entries.append({"path": f"kernel/gpu{i:03d}.log", "format": "kernel-log", "node": f"gpu{i:03d}"})
    (root / "manifest.yaml").write_text(json.dumps({"captured_at": "2026-03-04T10:15:00Z", "files": entries}))
    return root


@pytest.fixture()
def ticking(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The guard's clock: one second later on every reading."""
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(agent.limits, "monotonic", tick)
    return now


def test_a_run_stops_reading_at_its_wall_time_and_diagnoses_what_it_read(tmp_path: Path, ticking) -> None:
    d = diagnose(ReadContext.from_snapshot(snapshot(tmp_path)), limits=LoopLimits(wall_time_s=20), audit=False)
    assert d.stopped_by and d.stopped_by.startswith("wall_time:"), d.stopped_by
    assert d.root_cause == "inconclusive" and d.answered_by == "checks"
    unread = [u for u in d.unreadable if u.kind == "time"]
    assert 0 < len(unread) < N
    assert all("wall-time limit (20 s, limits.wall_time_s)" in u.reason for u in unread)
    # what was read is the manifest's first files, diagnosed; the rest are the ones listed as not read
    flagged = {c for f in d.findings if f.root_cause == "gpu_hardware_fault" for c in f.culprits}
    read = [f"gpu{i:03d}" for i in range(N) if f"node:gpu{i:03d}" in flagged]
    assert read and read == [f"gpu{i:03d}" for i in range(len(read))]
    assert [u.node for u in unread] == [f"gpu{i:03d}" for i in range(N - len(unread), N)]
    assert len(read) + len(unread) == N


def test_without_a_time_limit_reached_every_file_is_read(tmp_path: Path, ticking) -> None:
    d = diagnose(ReadContext.from_snapshot(snapshot(tmp_path)), limits=LoopLimits(wall_time_s=10_000), audit=False)
    assert d.stopped_by is None and not [u for u in d.unreadable if u.kind == "time"]
    flagged = {c for f in d.findings for c in f.culprits}
    assert {f"node:gpu{i:03d}" for i in range(N)} <= flagged


def test_the_cli_shows_the_partial_diagnosis_and_counts_what_it_did_not_read(tmp_path: Path, ticking,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("limits: {wall_time_s: 20}\n")
    monkeypatch.setenv("WARDEN_HOME", str(home))
    snap = snapshot(tmp_path)
    r = CliRunner().invoke(app, ["diagnose", str(snap)])
    assert r.exit_code == 0, r.output
    assert "wall_time" in r.output and "not read: the run's wall-time limit" in r.output
    assert "more not read before the run's time limit" in r.output  # counted, not 30 lines of it
    js = CliRunner().invoke(app, ["diagnose", str(snap), "--output", "json"])
    data = json.loads(js.stdout)
    assert data["stopped_by"].startswith("wall_time:")
    assert any(u["kind"] == "time" for u in data["unreadable"])


def test_a_live_collection_past_the_limit_skips_its_second_phase(tmp_path: Path) -> None:
    """Live: phase one (the Slurm views) is read and diagnosed; the follow-up fetches (here a failed job's
    log) are not made, each listed as not read. The log is a real file read by real ``tail``."""
    from test_paths_from_cluster_data import USER, HostileCluster, _job

    from tools.live.collect import LiveCollector, live_context
    from tools.live.model import JobLogAccess, LivePlanInput

    root = tmp_path / "scratch"
    (root / "alice").mkdir(parents=True)
    (root / "alice" / "train.out").write_text("step 10 loss 1.0\n")
    jobs = _job(7, str(root / "alice" / "train.out"))
    cfg = LivePlanInput(job_logs=JobLogAccess(roots=[str(root)]))
    free = live_context(LiveCollector(cfg, HostileCluster(jobs)))
    assert [a.path for a in free.facts.artifacts if a.format == "job-log"]  # unhurried: the log is read
    late = live_context(LiveCollector(cfg, HostileCluster(jobs)))
    late.stop_reading = lambda: "not read: the run's wall-time limit (20 s, limits.wall_time_s) was reached"
    facts = late.facts
    assert not [a for a in facts.artifacts if a.format == "job-log"]
    (timed,) = [u for u in facts.unreadable if u.kind == "time"]
    assert timed.job == "7" and timed.format == "job-log" and "wall-time limit" in timed.reason
    assert USER  # the job's owner is this user: the log would have been read
