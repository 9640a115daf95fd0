"""`warden diagnose --live` against a login node it cannot reach: inconclusive, names what is missing, exit 3;
`warden record` that captured nothing exits non-zero. A real SSH client (Fabric) against a closed port."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from typer.testing import CliRunner

from agent.cli.app import app


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens here once the socket closes


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "warden.toml"
    cfg.write_text(f'cluster = "far"\n[slurm]\nvia = "ssh"\nhost = "127.0.0.1"\nport = {_closed_port()}\n'
                   'user = "nobody"\n[bounds]\ntimeout_s = 5\n')
    return cfg


def test_unreachable_login_node_is_inconclusive_exit_3(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["diagnose", "--live", "--config", str(_config(tmp_path)), "--json"])
    assert result.exit_code == 3, result.output
    d = json.loads(result.stdout)
    assert d["root_cause"] == "inconclusive" and d["nothing_read"] is True and d["proposed_actions"] == []
    assert d["unreadable"] and all(u["kind"] == "fetch" for u in d["unreadable"])
    assert any("squeue" in (u["command"] or "") for u in d["unreadable"])
    assert "no evidence could be read" in result.stderr and "Traceback" not in result.output


def test_record_that_captured_nothing_exits_non_zero(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    out = tmp_path / "snap"
    result = CliRunner().invoke(app, ["record", "--out", str(out), "--config", str(_config(tmp_path))])
    assert result.exit_code == 3, result.output
    assert "captured nothing" in result.stderr and "Traceback" not in result.output
