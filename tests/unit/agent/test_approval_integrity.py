"""Issue 15, item 1: an approval is authenticated, not asserted. Each attack from the report is
reproduced here and refused: an approved row inserted or edited by hand in approvals.db, a short
plan-hash prefix, a readable key, an expiry that leaves no trace."""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agent.approvals import (ApprovalError, ApprovalStore, ApprovalTampered, PlanHashMismatch, load_approval_key)
from agent.audit import AuditLog

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)
HASH = "ab" * 32


@pytest.fixture()
def store(tmp_path: Path) -> ApprovalStore:
    return ApprovalStore(tmp_path / "approvals.db", {"bob", "carol"}, audit=AuditLog(tmp_path / "audit.db"))


def ask(store: ApprovalStore, action: str = "cancel_job"):
    return store.request_approval(HASH, action, {"type": action, "job": "4242"}, "alice", "run-1", 600, now=T0,
                                  commands=[["scancel", "4242"]])


def test_key_file_is_created_0600_and_a_readable_key_is_refused(tmp_path: Path) -> None:
    ApprovalStore(tmp_path / "approvals.db")
    key = tmp_path / "approval.key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    os.chmod(key, 0o644)
    with pytest.raises(ApprovalError, match="chmod 600"):
        load_approval_key(key)


def test_a_row_inserted_by_hand_is_refused(store: ApprovalStore, tmp_path: Path) -> None:
    req = ask(store)
    with sqlite3.connect(tmp_path / "approvals.db") as c:
        c.execute("UPDATE approvals SET status='approved', approver='bob', mac=? WHERE id=?", ["00" * 32, req.id])
    with pytest.raises(ApprovalTampered, match="MAC"):
        store.consume(req.id, HASH, now=T0)


def test_an_approved_row_edited_to_another_approver_is_refused(store: ApprovalStore, tmp_path: Path) -> None:
    req = ask(store)
    store.approve(req.id, "bob", HASH, now=T0)
    with sqlite3.connect(tmp_path / "approvals.db") as c:
        c.execute("UPDATE approvals SET approver='carol' WHERE id=?", [req.id])
    with pytest.raises(ApprovalTampered):
        store.consume(req.id, HASH, now=T0)


def test_a_forged_mac_without_its_audit_record_is_refused(store: ApprovalStore, tmp_path: Path) -> None:
    # Someone holding the key but not the audit chain: a valid MAC on a row Warden never approved.
    req = ask(store)
    mac = store._mac(req, "bob")
    with sqlite3.connect(tmp_path / "approvals.db") as c:
        c.execute("UPDATE approvals SET status='approved', approver='bob', mac=? WHERE id=?", [mac, req.id])
    with pytest.raises(ApprovalTampered, match="audit chain"):
        store.consume(req.id, HASH, now=T0)


def test_a_genuine_approval_is_used_once(store: ApprovalStore) -> None:
    req = ask(store)
    done = store.approve(req.id, "bob", HASH, now=T0)
    assert done.mac and done.commands == [["scancel", "4242"]]
    assert store.consume(req.id, HASH, now=T0).status == "consumed"


def test_plan_hashes_are_matched_whole(store: ApprovalStore) -> None:
    req = ask(store)
    with pytest.raises(PlanHashMismatch, match="compared whole"):
        store.approve(req.id, "bob", HASH[:12], now=T0)


def test_expired_request_is_recorded_in_the_audit_log(store: ApprovalStore, tmp_path: Path) -> None:
    req = ask(store)
    assert store.list_pending(now=T0 + timedelta(seconds=601)) == []
    assert store.get(req.id).status == "expired"
    events = [r.payload for r in AuditLog(tmp_path / "audit.db").records() if r.kind == "approval"]
    assert [e["event"] for e in events] == ["expired"] and events[0]["approval_id"] == req.id
    store.list_pending(now=T0 + timedelta(seconds=900))
    assert len([r for r in AuditLog(tmp_path / "audit.db").records() if r.kind == "approval"]) == 1  # once


def test_denial_is_recorded(store: ApprovalStore, tmp_path: Path) -> None:
    req = ask(store)
    store.deny(req.id, "bob", "not now", now=T0)
    events = [r.payload for r in AuditLog(tmp_path / "audit.db").records() if r.kind == "approval"]
    assert events[-1]["event"] == "deny" and events[-1]["reason"] == "not now"


def test_a_configured_secret_replaces_the_key_file(tmp_path: Path, monkeypatch) -> None:
    from agent.settings import WardenSettings
    from tools.errors import ConfigError

    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    s = WardenSettings(approvers={"bob": ["oncall"]}, approval_key_env="WARDEN_APPROVAL_SECRET")
    monkeypatch.setenv("WARDEN_APPROVAL_SECRET", "short")
    with pytest.raises(ConfigError, match="WARDEN_APPROVAL_SECRET"):
        s.open_approvals()
    monkeypatch.setenv("WARDEN_APPROVAL_SECRET", "a-long-enough-service-secret")
    audit = s.open_audit()
    store = s.open_approvals(audit)
    req = store.request_approval(HASH, "drain_node", {}, "alice", "r", 60, now=T0)
    store.approve(req.id, "bob", HASH, now=T0)
    assert not (tmp_path / "approval.key").exists()
    monkeypatch.setenv("WARDEN_APPROVAL_SECRET", "another-long-secret-value")  # a store with another key
    with pytest.raises(ApprovalTampered):
        s.open_approvals(audit).consume(req.id, HASH, now=T0)
