"""`warden policy check`, `approvals list`, `approve`, `deny` and `audit verify` through CliRunner
on a real $WARDEN_HOME (SQLite files), the real Cedar policy and a real incident snapshot."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
REPO = HERE.parents[3]
SNAP = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
runner = CliRunner()


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    # These tests name approvers with --approver, which only a channel that authenticates names may do.
    (h / "config.yaml").write_text("approvers: {bob: [oncall], carol: [admins], alice: [oncall]}\n"
                                   "asserted_identity: true\n")
    monkeypatch.setenv("WARDEN_HOME", str(h))
    return h


def invoke(*args: str):
    return runner.invoke(app, list(args))


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def plan_file(tmp_path: Path, spec: dict, as_plan: bool) -> Path:
    from tools.actions import build_action
    from tools.models.findings import ActionSpec

    p = tmp_path / "plan.json"
    data = build_action(ActionSpec(**spec)).plan().model_dump_json() if as_plan else json.dumps(spec)
    p.write_text(data)
    return p


@pytest.mark.parametrize("as_plan", [True, False])
def test_policy_check_explains_each_decision(home, tmp_path, as_plan):
    p = plan_file(tmp_path, {"type": "drain_node", "node": "gpu007", "reason": "Xid 79"}, as_plan)
    r = invoke("policy", "check", str(p), "--principal", "alice", "--groups", "oncall")
    assert r.exit_code == 0 and r.output.startswith("needs_approval: drain_node on Node::\"gpu007\""), r.output
    assert "reversible-approved" in r.output
    r = invoke("policy", "check", str(p), "--principal", "alice", "--approved-by", "bob")
    assert r.exit_code == 0 and r.output.startswith("allow:"), r.output
    r = invoke("policy", "check", str(p), "--principal", "alice", "--approved-by", "bob", "--snapshot", str(SNAP),
               "--gpu-share-pct", "99")  # the snapshot's facts win over the flag
    assert r.output.startswith("allow:") and "partition_gpu_share_pct=7 (limit 25)" in r.output, r.output
    r = invoke("policy", "check", str(p), "--approved-by", "bob", "--gpu-share-pct", "40")
    assert r.output.startswith("deny:") and "drain-partition-share-limit" in r.output


def test_policy_check_irreversible_self_approval_denied(home, tmp_path):
    p = plan_file(tmp_path, {"type": "cancel_job", "job": "73440"}, True)
    r = invoke("policy", "check", str(p), "--principal", "alice", "--approved-by", "alice", "--json")
    d = json.loads(r.output)
    assert d["decision"] == "deny" and "no-self-approval-of-irreversible" in d["policy_ids"]


def test_policy_check_errors_are_one_line(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{")
    assert "bad.json" in one_line_error(invoke("policy", "check", str(bad)))
    bad.write_text('{"type": "format_disk"}')
    assert "not a Plan or ActionSpec" in one_line_error(invoke("policy", "check", str(bad)))
    broken = tmp_path / "broken.cedar"
    broken.write_text('@id("x")\npermit (principal, action, resource) when { context.dry_run &&& };\n')
    (home / "config.yaml").write_text(f"policy_paths: [{broken}]\n")
    p = plan_file(tmp_path, {"type": "drain_node", "node": "gpu007"}, True)
    assert "broken.cedar" in one_line_error(invoke("policy", "check", str(p)))


def _paused_run(home: Path) -> tuple[str, str]:
    """Start a run whose model asks to drain gpu007; it pauses on the approval."""
    from flow_script import model

    from agent.approvals import ApprovalStore
    from agent.audit import AuditLog
    from agent.execute import ExecutionSetup
    from agent.runs import start_run
    from agent.store import RunStore
    from policies import PolicyEngine
    from tools.read.context import ReadContext

    audit = AuditLog(home / "audit.db")
    approvals = ApprovalStore(home / "approvals.db", {"bob", "carol", "alice"}, audit=audit)
    setup = ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="alice",
                           approver_groups={"bob": ["oncall"]}, dry_run=False)
    out = start_run(ReadContext.from_snapshot(SNAP), "Job 73412 failed. Why?", setup=setup, model_override=model(),
                    store=RunStore(home / "warden.db"), target=str(SNAP))
    return out.run_id, out.paused.metadata["x1"]["approval_id"]


def test_list_approve_resumes_the_paused_run(home):
    assert invoke("approvals", "list").output.strip() == "No pending approvals."
    run_id, aid = _paused_run(home)
    listed = json.loads(invoke("approvals", "list", "--json").output)
    assert [(a["id"], a["action"], a["params"]["node"]) for a in listed] == [(aid, "drain_node", "gpu007")]
    assert aid in invoke("approvals", "list").output
    one_line_error(invoke("approve", aid, "--approver", "mallory"))
    one_line_error(invoke("approve", aid, "--approver", "bob", "--plan-hash", "deadbeef"))
    r = invoke("approve", aid, "--approver", "bob")
    assert r.exit_code == 0, r.output
    assert f"approved {aid}" in r.output and f"run {run_id} resumed (dry run)" in r.output
    assert "approved and allowed; nothing was run" in r.output
    assert "already approved" in one_line_error(invoke("approve", aid, "--approver", "carol"))
    assert invoke("approvals", "list").output.strip() == "No pending approvals."


def test_deny_resumes_with_the_reason(home):
    run_id, aid = _paused_run(home)
    r = invoke("deny", aid, "--reason", "reservation until 14:00", "--approver", "bob")
    assert r.exit_code == 0 and f"run {run_id} resumed" in r.output, r.output
    from agent.audit import AuditLog

    starts = [x.payload for x in AuditLog(home / "audit.db").records(run_id=run_id) if x.kind == "run_start"]
    assert [s["resumed"] for s in starts] == [False, True]
    one_line_error(invoke("deny", aid, "--reason", "again", "--approver", "bob"))
    assert "no such approval" in one_line_error(invoke("deny", "000000000000", "--reason", "x"))


def test_audit_verify_detects_a_tampered_row(home):
    assert "no audit log" in one_line_error(invoke("audit", "verify"))
    _paused_run(home)
    r = invoke("audit", "verify")
    assert r.exit_code == 0 and r.output.startswith("audit log ok:"), r.output
    head = r.output.split("head ")[1].split()[0]
    assert invoke("audit", "verify", "--anchor", head).exit_code == 0
    one_line_error(invoke("audit", "verify", "--anchor", "12:xyz"))
    con = sqlite3.connect(home / "audit.db")
    con.execute("DROP TRIGGER audit_no_update")
    con.execute("UPDATE audit SET payload = replace(payload, 'gpu007', 'gpu008') WHERE kind = 'policy_decision'")
    con.commit()
    con.close()
    r = invoke("audit", "verify")
    assert r.exit_code == 1 and "FAILED at row" in r.output and "row edited" in r.output, r.output


def test_every_command_help_ends_with_an_example():
    for cmd in (["policy", "check"], ["approvals", "list"], ["approve"], ["deny"], ["audit", "verify"]):
        out = invoke(*cmd, "--help").output
        assert "Example: warden " + cmd[0] in out, (cmd, out)
