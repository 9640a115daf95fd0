"""Adversarial class from issue 15 item 11: values that validated but crashed later, and names
Slurm reads as more than one thing.

Before: ``approval_ttl_s: .inf`` validated and then ``timedelta`` overflowed when an approval was
requested; ``WARDEN_LIMIT_WALL_TIME_S=abc`` ended ``warden diagnose`` as "internal error:
ValidationError" (exit 1) and ``=inf`` was taken; ``timeout_s = inf`` in warden.toml validated (a
fetch's wait then overflows); a WARDEN_HOME that is a file was a FileExistsError traceback line;
``drain_node`` on node ``ALL`` rendered ``scontrol update NodeName=ALL State=DRAIN`` (every node);
a model's culprit ``node:gpu 01`` was taken. Now each is refused with the field (or variable) named,
exit 2 for the CLI, before anything runs or any plan is rendered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from agent.cli.app import app
from agent.live.config import load_live_config
from tools.actions import plan_spec
from tools.errors import ConfigError
from tools.models.findings import ActionSpec, DiagnosisDraft

INCIDENT = Path(__file__).parents[2] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
runner = CliRunner()


def one_line_exit_2(args: list[str], *fragments: str) -> str:
    r = runner.invoke(app, args)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output, r.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.mark.parametrize("node", ["ALL", "all", "Default"])
@pytest.mark.parametrize("action", ["drain_node", "resume_node", "run_gpu_diagnostic"])
def test_slurm_keywords_are_not_node_names(action: str, node: str) -> None:
    planned = plan_spec(ActionSpec(type=action, node=node, reason="Xid 79"))
    assert planned.commands == [] and "is a Slurm keyword" in (planned.error or "")


def test_a_culprit_with_a_space_is_refused_in_the_models_answer() -> None:
    with pytest.raises(ValidationError, match="culprit 'node:gpu 01' is not kind:name"):
        DiagnosisDraft(root_cause="gpu_hardware_fault", confidence=0.9, summary="s", culprits=["node:gpu 01"])


@pytest.mark.parametrize("value", [".inf", "1e300", ".nan", "-5"])
def test_approval_lifetime_must_be_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    (tmp_path / "config.yaml").write_text(f"approval_ttl_s: {value}\n")
    one_line_exit_2(["approvals", "list"], str(tmp_path / "config.yaml"), "approval_ttl_s")


@pytest.mark.parametrize("value", ["abc", "inf", "1e300", "nan", "0"])
def test_bad_warden_limit_variables_name_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WARDEN_LIMIT_WALL_TIME_S", value)
    one_line_exit_2(["diagnose", str(INCIDENT)], "WARDEN_LIMIT_WALL_TIME_S")


def test_limits_in_config_yaml_are_used_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    (tmp_path / "config.yaml").write_text("limits: {wall_time_s: .inf}\n")
    one_line_exit_2(["diagnose", str(INCIDENT)], str(tmp_path / "config.yaml"), "limits.wall_time_s")
    (tmp_path / "config.yaml").write_text("limits: {tool_calls: 1}\n")  # before: config.yaml's limits were ignored
    r = runner.invoke(app, ["diagnose", str(INCIDENT), "--json"])
    assert '"stopped_by": "tool_calls: call 2 would exceed the limit of 1"' in r.output, r.output[-2000:]


@pytest.mark.parametrize(("section", "line", "field"), [
    ("bounds", "timeout_s = inf", "bounds.timeout_s"),
    ("bounds", "sacct_window_h = 1e300", "bounds.sacct_window_h"),
    ("bounds", "timeout_s = nan", "bounds.timeout_s"),
    ("kernel_logs", "since_h = 1e300", "kernel_logs.since_h"),
    ("job_logs", "max_bytes = 100000000000", "job_logs.max_bytes"),
    ("job_logs", 'roots = ["/"]', "job_logs.roots"),
])
def test_live_config_values_that_would_overflow(tmp_path: Path, section: str, line: str, field: str) -> None:
    p = tmp_path / "warden.toml"
    p.write_text(f'cluster = "c"\n[{section}]\n{line}\n')
    with pytest.raises(ConfigError, match=f"{p}: {field}"):
        load_live_config(p)


def test_an_unusable_warden_home_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "afile"
    f.write_text("")
    for home, why in ((f, "is not a directory"), (f / "sub", "cannot be created: Not a directory")):
        monkeypatch.setenv("WARDEN_HOME", str(home))
        one_line_exit_2(["diagnose", str(INCIDENT)], f"WARDEN_HOME={home}", why)


DEEP_YAML, DEEP_TOML = "[" * 5000 + "]" * 5000, "[" * 5000 + "]" * 5000
HUGE = "9" * 5000


@pytest.mark.parametrize("value", [DEEP_YAML, HUGE], ids=["5000-deep", "5000-digits"])
@pytest.mark.parametrize("where", ["config.yaml", "warden.toml", "incident.yaml", "gateway.toml", "policy_config"])
def test_hostile_config_documents_are_one_line_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              where: str, value: str) -> None:
    """Before: RecursionError or ValueError, reported as "internal error ... a Warden bug" (exit 1)."""
    import shutil

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("WARDEN_HOME", str(home))
    inc = tmp_path / "inc"
    shutil.copytree(INCIDENT, inc)
    target = {"config.yaml": home / "config.yaml", "warden.toml": home / "warden.toml",
              "incident.yaml": inc / "incident.yaml", "gateway.toml": home / "gateway.toml",
              "policy_config": tmp_path / "policy.yaml"}[where]
    old = target.read_text() if target.exists() else ""
    target.write_text(old + (f"x = {value}\n" if where.endswith(".toml") else f"x: {value}\n"))
    args = ["diagnose", str(inc if where == "incident.yaml" else inc / "snapshot")]
    if where == "warden.toml":
        args = ["diagnose", "--live"]
    elif where == "policy_config":
        (home / "config.yaml").write_text(f"policy_config: {target}\n")
        args = ["policy", "check", "-"]
    r = runner.invoke(app, args, input='{"type": "drain_node", "node": "gpu01", "reason": "x"}')
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and str(target) in lines[0], r.output[-500:]
    assert "internal error" not in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(("line", "field"), [
    ("ledger_flush_interval_s = inf", "ledger_flush_interval_s"),  # the ledger's writer thread died: OverflowError
    ("ledger_flush_interval_s = 1e300", "ledger_flush_interval_s"),
    ("[retry]\nbackoff_initial_s = inf", "retry.backoff_initial_s"),  # a retry slept forever
    ("[retry]\nbackoff_max_s = 1e300", "retry.backoff_max_s"),
])
def test_gateway_config_values_that_hang_or_kill_a_thread(tmp_path: Path, line: str, field: str) -> None:
    """Before: each validated; the first killed the gateway's store thread (usage never recorded), the
    third left a request waiting for ever after one upstream 500."""
    from gateway.config import load_config
    from gateway.errors import ConfigError as GatewayConfigError

    p = tmp_path / "gateway.toml"
    p.write_text(line + "\n")
    with pytest.raises(GatewayConfigError, match=f"(?s){p}.*{field.split('.')[-1]}.*(?:less than or equal|finite number)"):
        load_config(p)
