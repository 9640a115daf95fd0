"""`warden watch --live --once` on the sandbox (issue 11 item 4, live): with an Xid 79 injected, the
first sweep of the live cluster posts the finding, the second (the cluster unchanged) does not; in
observe mode nothing is carried out (the node is not drained)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.cli.app import app
from agent.live.session import write_sandbox_config
from sandbox import cluster, faults
from tests.integration.live_helpers import cancel_jobs, wait_healthy
from tools.sources.local import LocalSource


def test_live_sweeps_post_a_new_finding_once(state_dir: Path, tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write_sandbox_config(state_dir, home / "warden.toml")
    monkeypatch.setenv("WARDEN_HOME", str(home))
    slurm = LocalSource(env=cluster.env(state_dir))
    rec = faults.inject("gpu_xid79", state_dir)

    def sweep() -> str:
        r = CliRunner().invoke(app, ["watch", "--live", "--config", str(home / "warden.toml"), "--once",
                                     "--post", "file:w.jsonl"])
        assert r.exit_code == 0, r.output
        return r.output

    try:
        assert "posted: file:" in sweep()
        assert "unchanged" in sweep()
        posts = [json.loads(x) for x in (home / "posts" / "w.jsonl").read_text().splitlines()]
        assert len(posts) == 1, [p["diagnosis"]["root_cause"] for p in posts]
        d = posts[0]["diagnosis"]
        assert d["root_cause"] == "gpu_hardware_fault" and f"node:{rec.node}" in d["culprits"], d["summary"]
        assert posts[0]["mode"] == "observe" and all(p["status"] != "executed" for p in posts[0]["plans"])
        assert not cluster.node_states(state_dir)[rec.node].startswith(("drain", "drng"))
    finally:
        cancel_jobs(slurm, rec.jobs_submitted)
        faults.clear("gpu_xid79", state_dir)
    wait_healthy(state_dir, slurm)
