"""Issue 14 item 2: every error a user can cause is one line on stderr with the next step, exit 2, no traceback.

Real parts throughout: a real gateway served by `warden gateway serve` on loopback (for the refused
key), a really closed port (unreachable gateway), a really bound one (busy port), real files.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("WARDEN_GATEWAY_URL", raising=False)
    monkeypatch.delenv("WARDEN_GATEWAY_KEY", raising=False)
    monkeypatch.delenv("WARDEN_DEBUG", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def one_line(args: list[str], *, code: int = 2) -> str:
    """Run the CLI; assert exit ``code``, exactly one line on stderr, nothing on stdout, no traceback."""
    result = CliRunner().invoke(app, args)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == code, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    return lines[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_model_alias():
    line = one_line(["diagnose", str(INCIDENT), "--model", "no-such-alias"])
    assert "unknown model alias 'no-such-alias'" in line and "warden-builtin" in line


@pytest.fixture()
def keyed_gateway(tmp_path: Path, home: Path):
    """`warden gateway serve` with one virtual key, as a real process on a free loopback port."""
    cfg = tmp_path / "gw.toml"
    assert CliRunner().invoke(app, ["gateway", "keys", "create", "alice", "--config", str(cfg)]).exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "agent.cli.app", "gateway", "serve", "--port", "0", "--config",
                             str(cfg)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # printed once the socket is bound
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+/v1)", line)
        assert m, line
        yield m[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_refused_key(keyed_gateway: str, monkeypatch):
    monkeypatch.setenv("WARDEN_GATEWAY_URL", keyed_gateway)
    monkeypatch.setenv("WARDEN_GATEWAY_KEY", "sk-warden-wrong")
    line = one_line(["diagnose", str(INCIDENT)])
    assert "refused the key" in line and "401" in line and "warden gateway keys create" in line


def test_unreachable_gateway(monkeypatch):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    monkeypatch.setenv("WARDEN_GATEWAY_URL", url)
    line = one_line(["diagnose", str(INCIDENT)])
    assert f"cannot reach the gateway at {url}" in line and "warden gateway serve" in line


def test_busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        line = one_line(["gateway", "serve", "--port", str(port)])
    assert f"127.0.0.1:{port} is already in use" in line and "--port" in line


def test_bad_gateway_config_names_file_and_field(tmp_path: Path):
    bad = tmp_path / "gw.toml"
    bad.write_text('[[providers]]\nname = "up"\nkind = "openai_compat"\nopenai_base_url = "http://x/v1"\n'
                   'openai_timeout_s = -1\n')
    line = one_line(["gateway", "keys", "list", "--config", str(bad)])
    assert str(bad) in line and "openai_timeout_s" in line and "greater than 0" in line


def test_bad_settings_file_names_file_and_field(home: Path):
    (home / "config.yaml").write_text("approval_ttl_s: -5\n")
    line = one_line(["approvals", "list"])
    assert str(home / "config.yaml") in line and "approval_ttl_s" in line
    (home / "config.yaml").write_text("limits: {wall_time_s: -1}\n")
    line = one_line(["config", "show"])
    assert str(home / "config.yaml") in line and "limits.wall_time_s" in line


def test_bad_live_config_names_file_and_field(tmp_path: Path):
    bad = tmp_path / "warden.toml"
    bad.write_text('[slurm]\nvia = "telnet"\n')
    line = one_line(["diagnose", "--live", "--config", str(bad)])
    assert str(bad) in line and "slurm.via" in line


def test_missing_approver_config_names_the_file(home: Path):
    from agent.approvals import ApprovalStore
    from agent.audit import AuditLog

    store = ApprovalStore(home / "approvals.db", audit=AuditLog(home / "audit.db"))
    req = store.request_approval("ab" * 32, "requeue_job", {"type": "requeue_job", "job": "1"}, "alice", "run-1", 600,
                                 commands=[["scontrol", "requeue", "1"]])
    line = one_line(["approve", req.id])  # as the login user, whom no config names
    assert str(home / "config.yaml") in line and "approvers" in line and "is absent" in line


def test_usage_errors_are_one_line_too():
    line = one_line(["diagnose", "--no-such-flag"])
    assert "--no-such-flag" in line and "warden diagnose --help" in line
    assert "Did you mean 'diagnose'" in one_line(["diagnos"])
    assert "--json and --output yaml disagree" in one_line(["diagnose", str(INCIDENT), "--json", "-o", "yaml"])


def test_a_corrupt_store_is_one_line(home: Path):
    (home / "warden.db").write_bytes(b"this is not sqlite" * 100)
    assert "not a readable SQLite database" in one_line(["runs", "list"])


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setenv("WARDEN_DEBUG", "1")
    result = CliRunner().invoke(app, ["diagnose", str(INCIDENT), "--model", "no-such-alias"])
    assert result.exit_code == 2 and "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: unknown model alias")


def test_an_unexpected_exception_is_one_line_exit_1(capsys):
    from agent.cli.errors import report

    try:
        raise RuntimeError("boom\nsecond line")
    except RuntimeError as e:
        code = report(e)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "internal error: RuntimeError: boom second line" in err[0]
    assert "WARDEN_DEBUG=1" in err[0]


def test_the_console_script_path_has_no_traceback_either(tmp_path: Path, home: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home)}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "agent.cli.app", "audit", "verify", "--anchor", "x"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "" and time.monotonic() - t0 < 120
    assert len(proc.stderr.strip().splitlines()) == 1 and "--anchor 'x'" in proc.stderr
