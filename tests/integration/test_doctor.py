"""`warden doctor` against the real sandbox: Slurm's commands answer, Prometheus is ready, the live
config validates (and a stopped Prometheus is a failed line with a hint, not a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.cli.app import app
from agent.live.session import write_sandbox_config


def test_doctor_on_the_sandbox(state_dir: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    write_sandbox_config(state_dir, tmp_path / "home" / "warden.toml")
    r = CliRunner().invoke(app, ["doctor", "--check", "config", "--check", "slurm", "--check", "prometheus",
                                 "-o", "json"])
    checks = {c["check"]: c for c in json.loads(r.stdout)["checks"] if c["check"] in ("slurm", "prometheus")}
    assert checks["slurm"]["status"] == "ok" and "partition" in checks["slurm"]["detail"], checks
    assert checks["prometheus"]["status"] == "ok", checks
    live = [c for c in json.loads(r.stdout)["checks"] if c["check"] == "config" and "warden.toml" in c["detail"]]
    assert live and live[0]["status"] == "ok"


def test_doctor_names_an_unreachable_prometheus(state_dir: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    path = write_sandbox_config(state_dir, tmp_path / "home" / "warden.toml")
    text = path.read_text()
    import re

    path.write_text(re.sub(r'url = "http://[^"]+"', 'url = "http://127.0.0.1:9"', text, count=1))
    r = CliRunner().invoke(app, ["doctor", "--check", "prometheus"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stdout.startswith("fail prometheus") and "[prometheus] url" in r.stdout
