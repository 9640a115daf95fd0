"""The approval store on a real SQLite file: approvals bound to the plan hash, single-use and
expiring; attacks refused; state that survives a new process, including a paused pydantic-ai
run resumed by another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agent.approvals import (
    ApprovalTampered,
    ApprovalAlreadyDecided,
    ApprovalError,
    ApprovalExpired,
    ApprovalNotFound,
    ApprovalNotGranted,
    ApprovalReused,
    ApprovalStore,
    ApproverNotAllowed,
    PendingToolCall,
    PlanHashMismatch,
    SelfApprovalRefused,
)

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)
HASH = "9f2c1e" + "0" * 58
OTHER_HASH = "9f2c1e" + "1" * 58


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "warden.db"


@pytest.fixture()
def store(db: Path) -> ApprovalStore:
    return ApprovalStore(db, allowed_approvers={"alice", "bob"})


def ask(store: ApprovalStore, action: str = "cancel_job", requester: str = "alice", ttl_s: float = 900):
    return store.request_approval(HASH, action, {"job": "4242"}, requester, "run-1", ttl_s, now=T0)


def test_valid_approval_works_exactly_once(store: ApprovalStore) -> None:
    req = ask(store)
    approved = store.approve(req.id, "bob", HASH, now=T0 + timedelta(minutes=1))
    assert (approved.status, approved.approver) == ("approved", "bob")
    used = store.consume(req.id, HASH, now=T0 + timedelta(minutes=2))
    assert used.status == "consumed"
    assert used.consumed_at == T0 + timedelta(minutes=2)
    with pytest.raises(ApprovalReused, match=req.id):
        store.consume(req.id, HASH, now=T0 + timedelta(minutes=3))


def test_expired_approval_refused_at_approve_and_at_consume(store: ApprovalStore) -> None:
    req = ask(store, ttl_s=600)
    with pytest.raises(ApprovalExpired):
        store.approve(req.id, "bob", HASH, now=T0 + timedelta(seconds=600))
    req2 = ask(store, ttl_s=600)
    store.approve(req2.id, "bob", HASH, now=T0 + timedelta(seconds=599))
    with pytest.raises(ApprovalExpired):
        store.consume(req2.id, HASH, now=T0 + timedelta(seconds=601))
    assert store.get(req2.id).status == "approved"  # a refusal changes nothing


def test_wrong_plan_hash_refused(store: ApprovalStore) -> None:
    req = ask(store)
    with pytest.raises(PlanHashMismatch):
        store.approve(req.id, "bob", OTHER_HASH, now=T0)
    store.approve(req.id, "bob", HASH, now=T0)
    with pytest.raises(PlanHashMismatch):
        store.consume(req.id, OTHER_HASH, now=T0)
    assert store.consume(req.id, HASH, now=T0).status == "consumed"


@pytest.mark.parametrize("action", ["cancel_job", "requeue_job", "evict_pod", "drain_k8s_node", "format_disk"])
def test_self_approval_of_irreversible_refused(store: ApprovalStore, action: str) -> None:
    req = ask(store, action=action, requester="alice")
    with pytest.raises(SelfApprovalRefused, match="alice"):
        store.approve(req.id, "alice", HASH, now=T0)
    assert store.get(req.id).status == "pending"


@pytest.mark.parametrize("action", ["drain_node", "hold_job", "cordon_node"])
def test_self_approval_of_reversible_allowed(store: ApprovalStore, action: str) -> None:
    req = ask(store, action=action, requester="alice")
    assert store.approve(req.id, "alice", HASH, now=T0).status == "approved"


@pytest.mark.parametrize("approver", ["mallory", "", "ALICE", "bob "])
def test_unauthorized_approver_refused(store: ApprovalStore, approver: str) -> None:
    req = ask(store, action="drain_node")
    with pytest.raises(ApproverNotAllowed):
        store.approve(req.id, approver, HASH, now=T0)


def test_empty_allowed_set_fails_closed(db: Path) -> None:
    store = ApprovalStore(db)
    req = ask(store, action="drain_node")
    with pytest.raises(ApproverNotAllowed):
        store.approve(req.id, "bob", HASH, now=T0)


def test_approver_removed_from_config_cannot_be_consumed(db: Path) -> None:
    req = ask(ApprovalStore(db, {"bob"}))
    ApprovalStore(db, {"bob"}).approve(req.id, "bob", HASH, now=T0)
    with pytest.raises(ApproverNotAllowed):
        ApprovalStore(db, {"carol"}).consume(req.id, HASH, now=T0)


def test_self_approval_written_into_the_db_is_still_refused(store: ApprovalStore, db: Path) -> None:
    import sqlite3

    req = ask(store)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE approvals SET status='approved', approver='alice' WHERE id=?", [req.id])
    with pytest.raises(ApprovalTampered):  # no MAC for a row Warden never approved
        store.consume(req.id, HASH, now=T0)


def test_pending_or_denied_cannot_be_consumed(store: ApprovalStore) -> None:
    pending = ask(store)
    with pytest.raises(ApprovalNotGranted, match="pending"):
        store.consume(pending.id, HASH, now=T0)
    denied = ask(store)
    store.deny(denied.id, "bob", "job is about to checkpoint", now=T0)
    with pytest.raises(ApprovalNotGranted, match="denied"):
        store.consume(denied.id, HASH, now=T0)
    with pytest.raises(ApprovalAlreadyDecided):
        store.approve(denied.id, "bob", HASH, now=T0)
    got = store.get(denied.id)
    assert (got.status, got.approver, got.reason) == ("denied", "bob", "job is about to checkpoint")


def test_double_approve_and_unknown_id(store: ApprovalStore) -> None:
    req = ask(store)
    store.approve(req.id, "bob", HASH, now=T0)
    with pytest.raises(ApprovalAlreadyDecided):
        store.approve(req.id, "bob", HASH, now=T0)
    with pytest.raises(ApprovalNotFound):
        store.approve("feedfacecafe", "bob", HASH, now=T0)
    with pytest.raises(ApprovalNotFound):
        store.consume("' OR 1=1 --", HASH, now=T0)


def test_deny_by_stranger_refused_but_requester_may_withdraw(store: ApprovalStore) -> None:
    req = ask(store, requester="carol")
    with pytest.raises(ApproverNotAllowed):
        store.deny(req.id, "mallory", "no", now=T0)
    assert store.deny(req.id, "carol", "withdrawn", now=T0).status == "denied"


def test_list_pending_hides_expired_and_decided(store: ApprovalStore) -> None:
    a = ask(store, ttl_s=60)
    b = ask(store, ttl_s=3600)
    c = ask(store, ttl_s=3600)
    store.deny(c.id, "bob", "no", now=T0)
    assert [r.id for r in store.list_pending(now=T0 + timedelta(seconds=30))] == [a.id, b.id]
    assert [r.id for r in store.list_pending(now=T0 + timedelta(seconds=61))] == [b.id]


def test_error_messages_are_one_line(store: ApprovalStore) -> None:
    req = ask(store)
    errors: list[ApprovalError] = []
    for call in (
        lambda: store.approve(req.id, "alice", HASH, now=T0),
        lambda: store.approve(req.id, "eve", HASH, now=T0),
        lambda: store.approve(req.id, "bob", OTHER_HASH, now=T0),
        lambda: store.approve(req.id, "bob", HASH, now=T0 + timedelta(days=1)),
    ):
        with pytest.raises(ApprovalError) as info:
            call()
        errors.append(info.value)
    assert all("\n" not in str(e) and req.id in str(e) for e in errors)


def test_naive_datetime_rejected(store: ApprovalStore) -> None:
    with pytest.raises(ValueError, match="timezone"):
        store.request_approval(HASH, "drain_node", {}, "alice", "r", 60, now=datetime(2026, 1, 1))


# ---- surviving a new process ---------------------------------------------------------------


def test_state_survives_a_fresh_store_object(db: Path) -> None:
    req = ask(ApprovalStore(db, {"bob"}))
    assert [r.id for r in ApprovalStore(db, {"bob"}).list_pending(now=T0)] == [req.id]
    ApprovalStore(db, {"bob"}).approve(req.id, "bob", HASH, now=T0)
    assert ApprovalStore(db, {"bob"}).consume(req.id, HASH, now=T0).status == "consumed"
    with pytest.raises(ApprovalReused):
        ApprovalStore(db, {"bob"}).consume(req.id, HASH, now=T0)


def _run(script: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


RESUMABLE_RUN = textwrap.dedent(
    '''
    import hashlib, json, sys
    from pydantic_ai import (Agent, DeferredToolRequests, DeferredToolResults, ModelMessagesTypeAdapter,
                             ModelResponse, TextPart, ToolCallPart, ToolDenied, ToolReturnPart)
    from pydantic_ai.models.function import FunctionModel
    from agent.approvals import ApprovalError, ApprovalStore, PendingToolCall

    def model(messages, info):
        rets = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not rets:
            return ModelResponse(parts=[ToolCallPart("cancel_job", {"job": "4242"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(" | ".join(str(r.content) for r in rets))])

    agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def cancel_job(job: str) -> str:
        return f"cancelled {job}"

    def plan_hash(name, args):
        return hashlib.sha256(json.dumps([name, args], sort_keys=True).encode()).hexdigest()

    phase, db, run_id = sys.argv[1], sys.argv[2], "run-42"
    store = ApprovalStore(db, allowed_approvers={"bob"})
    if phase == "pause":
        result = agent.run_sync("Job 4242 is stuck")
        assert isinstance(result.output, DeferredToolRequests)
        pending = []
        for call in result.output.approvals:
            req = store.request_approval(plan_hash(call.tool_name, call.args_as_dict()), call.tool_name,
                                         call.args_as_dict(), "alice", run_id, 900)
            pending.append(PendingToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                           args=call.args_as_dict(), approval_id=req.id))
        store.save_run_state(run_id, result.all_messages_json(), pending)
        print(json.dumps([[p.approval_id, plan_hash(p.tool_name, p.args)] for p in pending]))
    elif phase == "approve":
        approval_id, h = sys.argv[3], sys.argv[4]
        print(store.approve(approval_id, "bob", h).status)
    elif phase == "resume":
        state = store.load_run_state(run_id)
        approvals = {}
        for p in state.pending_tool_calls:
            try:
                store.consume(p.approval_id, plan_hash(p.tool_name, p.args))
                approvals[p.tool_call_id] = True
            except ApprovalError as e:
                approvals[p.tool_call_id] = ToolDenied(str(e))
        history = ModelMessagesTypeAdapter.validate_json(state.messages_json)
        result = agent.run_sync(message_history=history, deferred_tool_results=DeferredToolResults(approvals=approvals))
        print(result.output)
    '''
)


def test_paused_run_resumes_in_another_process(tmp_path: Path, db: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(RESUMABLE_RUN)
    [[approval_id, plan_hash]] = json.loads(_run(script, "pause", str(db)))
    assert [r.id for r in ApprovalStore(db).list_pending()] == [approval_id]
    assert _run(script, "approve", str(db), approval_id, plan_hash) == "approved"
    assert _run(script, "resume", str(db)) == "cancelled 4242"
    # Replaying the same paused run cannot reuse the approval: the tool call is denied.
    second = _run(script, "resume", str(db))
    assert second.startswith(f"approval {approval_id}: already used")


def test_run_state_round_trip_and_garbage_refused(store: ApprovalStore, db: Path) -> None:
    history = b'[{"parts":[{"content":"hi","timestamp":"2026-03-04T10:15:00Z","part_kind":"user-prompt"}],"kind":"request"}]'
    calls = [PendingToolCall(tool_call_id="c1", tool_name="drain_node", args={"node": "gpu017"}, approval_id="abc")]
    store.save_run_state("run-7", history, calls)
    loaded = ApprovalStore(db).load_run_state("run-7")
    assert loaded.messages_json == history
    assert loaded.pending_tool_calls == calls
    with pytest.raises(ValueError):
        store.save_run_state("run-8", b"not json", [])
    with pytest.raises(ApprovalNotFound):
        store.load_run_state("run-8")


# ---- audit trail ---------------------------------------------------------------------------


def test_every_step_and_refusal_is_audited_before_it_takes_effect(db: Path, tmp_path: Path) -> None:
    import sqlite3

    from agent.audit import AuditIntegrityError, AuditLog

    audit = AuditLog(tmp_path / "audit.db")
    store = ApprovalStore(db, {"alice", "bob"}, audit=audit)
    req = ask(store)
    with pytest.raises(SelfApprovalRefused):
        store.approve(req.id, "alice", HASH, now=T0)
    store.approve(req.id, "bob", HASH, now=T0)
    store.consume(req.id, HASH, now=T0)
    with pytest.raises(ApprovalReused):
        store.consume(req.id, HASH, now=T0)
    events = [(r.kind, r.payload.get("event"), r.payload.get("error")) for r in audit.records()]
    assert events == [
        ("approval_request", None, None),
        ("approval", "refused", "SelfApprovalRefused"),
        ("approval", "approve", None),
        ("approval", "consume", None),
        ("approval", "refused", "ApprovalReused"),
    ]
    assert all(r.run_id == "run-1" for r in audit.records())
    assert audit.verify().ok

    # When the audit store cannot record the approval, the approval does not happen.
    second = ask(store)
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        conn.execute("DROP TRIGGER audit_head_no_delete")
        conn.execute("DELETE FROM audit_head")
    with pytest.raises(AuditIntegrityError):
        store.approve(second.id, "bob", HASH, now=T0)
    assert store.get(second.id).status == "pending"
