"""`warden record` on a live sandbox incident, and the recording replayed: the same diagnosis as live."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from agent.cli.app import app
from agent.diagnose import diagnose
from agent.live.act import diagnose_live
from agent.live.config import render_toml
from agent.live.record import write_snapshot
from agent.live.session import sandbox_config
from sandbox import cluster, faults
from tools.read.context import ReadContext
from tools.snapshot.manifest import load_manifest
from tools.sources.local import LocalSource


def _same(a, b) -> None:
    assert (a.root_cause, a.culprits, a.confidence) == (b.root_cause, b.culprits, b.confidence)
    assert [p.spec for p in a.proposed_actions] == [p.spec for p in b.proposed_actions]
    assert [p.plan_hash for p in a.proposed_actions] == [p.plan_hash for p in b.proposed_actions]
    assert sorted(f.message for f in a.findings) == sorted(f.message for f in b.findings)


def test_recorded_incident_replays_to_the_live_diagnosis(state_dir: Path, tmp_path: Path) -> None:
    cfg = sandbox_config(state_dir)
    rec = faults.inject("gpu_xid79", state_dir)
    try:
        question = f"Job {rec.job} has logged nothing for minutes. Why?"
        run = diagnose_live(cfg, question, runner=LocalSource(env=cluster.env(state_dir)), audit=False)
        snap = write_snapshot(run.artifacts, tmp_path / "snap", captured_at=run.collector.captured_at,
                              cluster=cfg.cluster, checks=[c.model_dump() for c in cfg.checks])
        # A second, independent recording through the CLI while the fault is still active.
        conf = tmp_path / "warden.toml"
        conf.write_text(render_toml(cfg))
        res = CliRunner().invoke(app, ["record", "--out", str(tmp_path / "cli-snap"), "--config", str(conf)])
        assert res.exit_code == 0, res.output
    finally:
        faults.clear("gpu_xid79", state_dir)
    live = run.diagnosis
    assert live is not None and live.root_cause == "gpu_hardware_fault"
    replayed = diagnose(ReadContext.from_snapshot(snap), question, audit=False)
    _same(live, replayed)

    manifest = load_manifest(snap)
    formats = {e.format for e in manifest.files}
    assert {"scontrol-job-text", "scontrol-node-text", "squeue-text", "sinfo-text", "sinfo-reasons-text", "sacct-text",
            "sdiag-text", "prometheus-query-json", "kernel-log", "job-log", "lctl-md-stats", "lctl-job-stats",
            "lfs-df", "lfs-df-inodes"} <= formats
    assert manifest.cluster.name == "sandbox" and manifest.cluster.slurm_version == "22.05.8"
    assert all(e.command or e.url for e in manifest.files)
    assert any(e.format == "kernel-log" and e.node == rec.node for e in manifest.files)
    assert any(e.format == "job-log" and e.job == rec.job for e in manifest.files)

    cli = load_manifest(tmp_path / "cli-snap")  # complete and loadable: every file listed, nothing unlisted
    assert {e.format for e in cli.files} == formats
    raw = yaml.safe_load((tmp_path / "cli-snap" / "manifest.yaml").read_text())
    assert raw["captured_at"].endswith("Z") or "+00:00" in str(raw["captured_at"])
    res = CliRunner().invoke(app, ["diagnose", str(tmp_path / "cli-snap"), "--question", question, "--json"])
    assert res.exit_code == 0 and '"gpu_hardware_fault"' in res.output, res.output
