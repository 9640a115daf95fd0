"""Issue 14 item 3: --version, shell completion, doctor, config show, gateway keys create|list|revoke."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agent.cli.app import app

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    for var in ("WARDEN_GATEWAY_URL", "WARDEN_GATEWAY_KEY", "WARDEN_LIMIT_TOOL_CALLS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    assert "Traceback" not in r.output
    return r.exit_code, r.stdout, r.stderr


def test_version():
    from importlib.metadata import version

    code, out, _ = invoke("--version")
    assert code == 0 and out.strip() == f"warden {version('warden')}"


def test_completion_completes_commands_and_options(home: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home), "_WARDEN_COMPLETE": "complete_bash"}
    call = "import sys; sys.argv[0] = 'warden'; from agent.cli.app import main; main()"

    def complete(words: str) -> list[str]:
        e = {**env, "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        return subprocess.run([sys.executable, "-c", call], env=e, capture_output=True, text=True,
                              timeout=60).stdout.split()

    assert complete("warden dia") == ["diagnose"]
    assert complete("warden gateway k") == ["keys"]
    assert "--output" in complete("warden diagnose --ou")
    # Typer reads the shell from the process's ancestors unless told not to; a test run with no shell above it (a
    # detached CI job) would find none. With detection off, --show-completion takes the shell as its value.
    os.environ["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
    try:
        code, out, _ = invoke("--show-completion", "bash")
    finally:
        del os.environ["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"]
    assert code == 0 and "_WARDEN_COMPLETE=complete_bash" in out


def test_doctor_reports_each_check_with_a_hint(home: Path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no venv: `warden` is not on PATH here
    code, out, _ = invoke("doctor", "--output", "json")
    checks = json.loads(out)["checks"]
    assert {c["check"] for c in checks} == {"config", "path", "slurm", "prometheus", "gateway", "stores", "policies"}
    assert all(c["status"] in ("ok", "warn", "fail") for c in checks)
    assert all(c["hint"] for c in checks if c["status"] != "ok")
    path = next(c for c in checks if c["check"] == "path")
    assert path["status"] == "warn" and "export PATH=" in path["hint"]
    assert code == (1 if any(c["status"] == "fail" for c in checks) else 0)
    (home / "config.yaml").write_text("approval_ttl_s: nope\n")
    code, out, _ = invoke("doctor", "--check", "config", "-o", "json")
    bad = json.loads(out)["checks"][0]
    assert code == 1 and bad["status"] == "fail" and "approval_ttl_s" in bad["detail"]
    code, out, _ = invoke("doctor", "--check", "config")
    assert out.splitlines()[0].startswith("fail config")


def test_doctor_finds_a_corrupt_store(home: Path):
    (home / "audit.db").write_bytes(b"not a database, just bytes" * 50)
    code, out, _ = invoke("doctor", "--check", "stores", "-o", "json")
    bad = [c for c in json.loads(out)["checks"] if c["status"] == "fail"]
    assert code == 1 and bad and str(home / "audit.db") in bad[0]["detail"]


def test_config_show_says_where_each_value_came_from(home: Path, monkeypatch):
    (home / "config.yaml").write_text("approval_ttl_s: 60\nlimits: {wall_time_s: 30}\n")
    monkeypatch.setenv("WARDEN_LIMIT_TOOL_CALLS", "7")
    code, out, _ = invoke("config", "show", "-o", "json")
    settings = {s["key"]: s for s in json.loads(out)["settings"]}
    assert code == 0
    assert settings["approval_ttl_s"]["value"] == 60 and settings["approval_ttl_s"]["source"] == str(home / "config.yaml")
    assert settings["limits.wall_time_s"]["value"] == 30 and settings["limits.wall_time_s"]["source"].endswith("config.yaml")
    assert settings["limits.tool_calls"] == {"key": "limits.tool_calls", "value": 7,
                                             "source": "env WARDEN_LIMIT_TOOL_CALLS", "note": None}
    assert settings["limits.model_requests"]["source"] == "default"
    assert settings["home"]["source"] == "env WARDEN_HOME"
    assert settings["gateway.url"]["value"] == "in-process"
    code, out, _ = invoke("config", "show", "limits")
    assert code == 0 and "limits.wall_time_s = 30" in out and "approval_ttl_s" not in out


def _models_status(config: Path, key: str) -> int:
    from gateway.app import create_app
    from gateway.config import load_config

    async def call() -> int:
        app_ = create_app(load_config(config), store_path=config.parent / "gw.db")
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app_), base_url="http://gw") as client:
                return (await client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).status_code
        finally:
            await app_.aclose()

    return asyncio.run(call())


def test_gateway_keys_create_list_revoke_with_the_real_gateway(tmp_path: Path):
    cfg = tmp_path / "gateway.toml"
    cfg.write_text("# our gateway: keep this comment\nrun_cost_cap_usd = 2.0\n\n[[teams]]\nname = \"ml\"\n")
    code, key, err = invoke("gateway", "keys", "create", "alice", "--team", "ml", "--rpm", "60", "--config", str(cfg))
    key = key.strip()
    assert code == 0 and key.startswith("sk-warden-") and "shown only this once" in err
    code, key2, _ = invoke("gateway", "keys", "create", "bob", "--config", str(cfg))
    assert key not in cfg.read_text() and "# our gateway: keep this comment" in cfg.read_text()
    assert _models_status(cfg, key) == 200 and _models_status(cfg, key2.strip()) == 200
    assert _models_status(cfg, "sk-warden-forged") == 401
    code, out, _ = invoke("gateway", "keys", "list", "--config", str(cfg), "-o", "json")
    keys = json.loads(out)["keys"]
    assert [k["name"] for k in keys] == ["alice", "bob"] and keys[0]["rpm"] == 60 and len(keys[0]["key_sha256"]) == 64
    assert invoke("gateway", "keys", "create", "alice", "--config", str(cfg))[0] == 2  # names are unique
    code, out, _ = invoke("gateway", "keys", "revoke", "alice", "--config", str(cfg))
    assert code == 0 and "revoked key 'alice'" in out and "comments were not kept" not in out
    assert _models_status(cfg, key) == 401 and _models_status(cfg, key2.strip()) == 200
    assert "# our gateway: keep this comment" in cfg.read_text()
    code, _, err = invoke("gateway", "keys", "revoke", "alice", "--config", str(cfg))
    assert code == 2 and "no key named 'alice' (configured: bob)" in err


def test_gateway_keys_default_file_is_created_private(home: Path):
    code, key, _ = invoke("gateway", "keys", "create", "oncall-bot")
    path = home / "gateway.toml"
    assert code == 0 and path.is_file() and (path.stat().st_mode & 0o777) == 0o600
    code, out, _ = invoke("gateway", "keys", "list")
    assert "oncall-bot" in out
    assert invoke("gateway", "keys", "create", "bad name!")[0] == 2


def test_runs_show_without_runs_is_one_line(home: Path):
    code, out, err = invoke("runs", "show", "last")
    assert code == 2 and out == "" and "no runs yet" in err and len(err.strip().splitlines()) == 1
