"""`warden chat` driven through a pseudo-terminal (pexpect) on a bundled incident with the built-in
model: a first question and two follow-ups, a plan's exact quoted commands, its approval by the OS
login user through the approval flow, every step in the hash-chained audit log; then --resume."""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path

import pexpect
import pytest

from agent.audit import AuditLog
from agent.chat.history import ChatLog
from agent.store import RunStore

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
PROMPT = "warden> "
DRAIN = "$ scontrol update NodeName=gpu007 State=DRAIN 'Reason=warden: GPU hardware fault (Xid 79)'"


def spawn(home: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home), "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(sys.executable, ["-m", "agent.cli.app", "chat", *args], cwd=str(REPO), env=env,
                         encoding="utf-8", timeout=180, dimensions=(60, 220))


def ask(child: pexpect.spawn, line: str, *expected: str) -> None:
    child.expect_exact(PROMPT)
    child.sendline(line)
    for text in expected:
        child.expect_exact(text)


@pytest.fixture()
def home(tmp_path) -> Path:
    user = getpass.getuser()
    (tmp_path / "config.yaml").write_text(f"approvers: {{{user}: [oncall]}}\n")
    return tmp_path


def test_a_session_diagnoses_answers_follow_ups_and_approves_a_plan(home):
    user = getpass.getuser()
    child = spawn(home, str(INCIDENT))
    child.expect_exact("Ask a question")
    ask(child, "Job 73412 died with an NCCL watchdog timeout. Why?",
        "gpu_hardware_fault: node:gpu007, job:73412", "1. drain gpu007")
    ask(child, "why not gpu005?", "gpu005 is not named", "no Xid", "What the named culprit has instead:",
        "gpu007.log:27")
    ask(child, "show the log lines", "The lines the diagnosis cites:", "snapshot/kernel/gpu007.log:27",
        "Job log of 73412", "pretrain-73412.out:196")
    ask(child, "/plan 1", DRAIN, "not yet asked for approval")
    ask(child, "/approve 1", "[pending_approval]", f"approved by {user}", "[dry_run]", "nothing ran")
    ask(child, "/approve 2", f"{user} asked for this irreversible plan and cannot approve it")
    ask(child, "/quit", "kept: warden chat --resume")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before

    store = RunStore(home / "warden.db")
    run_id = next(store.db["runs"].rows)["id"]
    turns = ChatLog(store).turns(run_id)
    assert [t.text for t in turns if t.role == "user"] == [
        "Job 73412 died with an NCCL watchdog timeout. Why?", "why not gpu005?", "show the log lines"]

    log = AuditLog(home / "audit.db")
    assert log.verify().ok
    recs = [r for r in log.records() if r.run_id == run_id]
    kinds = [r.kind for r in recs]
    assert kinds[0] == "run_start" and "diagnosis" in kinds
    calls = [r.payload for r in recs if r.kind == "tool_call"]
    assert {"tool": "get_evidence_coverage", "args": {"subjects": ["gpu005"]}} in calls  # the follow-up's reads
    assert any(c["tool"] == "get_job_log_events" and c["args"].get("job") == "73412" for c in calls)
    decisions = [r.payload for r in recs if r.kind == "policy_decision"]
    assert [d["action"] for d in decisions][:1] == ["drain_node"] and decisions[0]["requester"] == user
    assert decisions[0]["commands"] == [["scontrol", "update", "NodeName=gpu007", "State=DRAIN",
                                         "Reason=warden: GPU hardware fault (Xid 79)"]]
    events = [(r.kind, r.payload.get("event")) for r in recs if r.kind in ("approval_request", "approval")]
    assert events[:2] == [("approval_request", None), ("approval", "approve")]
    approve = next(r.payload for r in recs if r.kind == "approval" and r.payload.get("event") == "approve")
    assert approve["approver"] == user and approve["mac"]
    refused = [r.payload for r in recs if r.kind == "approval" and r.payload.get("event") == "refused"]
    assert refused and refused[0]["error"] == "SelfApprovalRefused"  # the irreversible resubmission
    assert not [r for r in recs if r.kind == "execution"]  # a snapshot: nothing ran
    log.close()

    child = spawn(home, "--resume", run_id[:12])
    child.expect_exact("(resumed: 3 earlier exchange(s))")
    ask(child, "what would draining cost?", "takes 8 GPUs of partition gpu out of service", "Already lost: 32.6")
    ask(child, "/plan 1", DRAIN)
    ask(child, "/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert len(ChatLog(RunStore(home / "warden.db")).turns(run_id)) == 8
