"""`approve`, `deny`, `act --as`, `approvals list` and `policy check` after issue 12/15: identities come
from the operating system, commands are shown shell-quoted, policy check reads a proposed action
from `diagnose --json` (or stdin) and exits non-zero on deny. CliRunner on a real $WARDEN_HOME."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.identity import os_user

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
REPO = HERE.parents[3]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
runner = CliRunner()


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    me = os_user()
    (h / "config.yaml").write_text(f"approvers: {{bob: [oncall], {me}: [oncall]}}\n")
    monkeypatch.setenv("WARDEN_HOME", str(h))
    monkeypatch.setenv("USER", "bob")  # the environment is not an identity
    monkeypatch.setenv("LOGNAME", "bob")
    return h


def _pending(home: Path) -> tuple[str, list[list[str]]]:
    from agent.approvals import ApprovalStore
    from agent.audit import AuditLog

    audit = AuditLog(home / "audit.db")
    store = ApprovalStore(home / "approvals.db", {"bob"}, audit=audit)
    cmds = [["scontrol", "update", "NodeName=gpu007", "State=DRAIN", "Reason=warden: Xid 79"]]
    req = store.request_approval("cd" * 32, "drain_node", {"type": "drain_node", "node": "gpu007"}, "alice", "run-x",
                                 600, commands=cmds)
    return req.id, cmds


def test_typed_approver_refused_unless_the_channel_authenticates(home):
    aid, _ = _pending(home)
    r = runner.invoke(app, ["approve", aid, "--approver", "bob"])
    assert r.exit_code == 2 and "does not authenticate names" in r.output
    r = runner.invoke(app, ["deny", aid, "--reason", "x", "--approver", "bob"])
    assert r.exit_code == 2 and "does not authenticate names" in r.output
    r = runner.invoke(app, ["act", "--as", "bob"])
    assert r.exit_code == 2 and "--as 'bob' refused" in r.output


def test_approver_is_the_os_login_user_not_USER(home):
    aid, cmds = _pending(home)
    r = runner.invoke(app, ["approve", aid])
    assert r.exit_code == 0, r.output
    assert f"by {os_user()}" in r.output and "by bob" not in r.output
    assert f"$ {shlex.join(cmds[0])}" in r.output


def test_approvals_list_shows_shell_quoted_commands(home):
    _pending(home)
    out = runner.invoke(app, ["approvals", "list"], terminal_width=250).output
    assert "'Reason=warden: Xid 79'" in out


def test_policy_check_takes_a_proposed_action_from_diagnose_json_on_stdin(home, tmp_path):
    d = runner.invoke(app, ["diagnose", str(INCIDENT), "--json", "--db", str(tmp_path / "w.db")])
    assert d.exit_code == 0, d.output
    items = json.loads(d.output)["proposed_actions"]
    drain = next(a for a in items if a["spec"]["type"] == "drain_node")
    r = runner.invoke(app, ["policy", "check", "-", "--principal", "alice"], input=json.dumps(drain))
    assert r.exit_code == 0 and r.output.startswith("needs_approval: drain_node"), r.output
    # the command alone on its line (no prompt sign), so that the line pastes into bash as it is
    assert f"\n    {shlex.join(drain['commands'][0])}\n" in r.output and drain["plan_hash"] in r.output
    f = tmp_path / "item.json"
    f.write_text(json.dumps(drain))
    denied = runner.invoke(app, ["policy", "check", str(f), "--principal", "alice", "--gpu-share-pct", "60"])
    assert denied.exit_code == 1 and denied.output.startswith("deny:"), denied.output
    observe = runner.invoke(app, ["policy", "check", str(f), "--principal", "alice", "--mode", "observe"])
    assert observe.exit_code == 1 and "observe-mode" in observe.output
    execute = runner.invoke(app, ["policy", "check", str(f), "--principal", "alice", "--mode", "execute"])
    assert execute.exit_code == 0 and execute.output.startswith("allow:") and "execute-mode-reversible" in execute.output


def test_override_resume_is_recorded_by_the_os_user(home):
    r = runner.invoke(app, ["act", "--override-resume", "gpu007", "--reason", "board swapped"])
    assert r.exit_code == 0, r.output
    from agent.audit import AuditLog

    (rec,) = [x for x in AuditLog(home / "audit.db").records() if x.kind == "approval"]
    assert rec.payload == {"event": "operator_override", "node": "gpu007", "operator": os_user(),
                           "reason": "board swapped"}
    assert runner.invoke(app, ["act", "--override-resume", "gpu007"]).exit_code == 2


def test_slack_identity_comes_from_the_verified_user_id():
    from agent.identity import slack_approver
    from tools.errors import ConfigError

    assert slack_approver({"U012AB3CD": "bob"}, "U012AB3CD") == "bob"
    with pytest.raises(ConfigError, match="not mapped"):
        slack_approver({"U012AB3CD": "bob"}, "U999")
