"""Pending approvals and paused runs, kept in SQLite (through sqlite-utils) so that another
process can approve and resume after a restart.

An approval is bound to one plan: it names the plan's hash, the approver and an expiry, and is
single-use (DESIGN.md, safety invariant 2). The life of one request::

    request_approval() -> pending --approve()--> approved --consume()--> consumed
                                  \\--deny()---> denied
                                  \\--(expiry)-> expired     (recorded once in the audit log)

An approval carries a MAC (HMAC-SHA256 over id, plan hash, action, requester, approver and
expiry) made with a key only Warden's service identity can read: ``approval.key`` beside the
database, created with mode 0600 (or a configured secret). ``consume`` recomputes it and, when the
store has an audit log, finds the approval's own "approve" record in the hash chain, so a row
edited or inserted in ``approvals.db`` by hand is refused (:class:`ApprovalTampered`). Plan
hashes are compared whole, never by prefix.

Every refusal is a typed :class:`ApprovalError` with a one-line message, raised before anything
changes in the database:

    ApprovalError (tools.errors.WardenError)
    ├── ApprovalNotFound       no request with that id (or no saved run with that run id)
    ├── ApprovalExpired        the request's expiry has passed
    ├── ApprovalReused         the approval was already consumed
    ├── ApprovalNotGranted     consume() on a request that is still pending or was denied
    ├── ApprovalAlreadyDecided approve()/deny() on a request that is no longer pending
    ├── PlanHashMismatch       the plan hash differs from the one approval was requested for
    ├── SelfApprovalRefused    the requester approving their own irreversible action
    ├── ApproverNotAllowed     the approver is not in the allowed set (from config)
    └── ApprovalTampered       the row's MAC does not verify, or its approval is not in the audit chain

Given an :class:`agent.audit.AuditLog`, the store appends every request, approval, denial, use
and refusal to it before the database changes; if the audit store cannot record, nothing changes.

A paused pydantic-ai run (a ``DeferredToolRequests`` output) is saved with
:meth:`ApprovalStore.save_run_state`: the message history from ``result.all_messages_json()``
and the tool calls awaiting approval, each tied to its approval id. A later process loads it
with :meth:`ApprovalStore.load_run_state`, builds ``DeferredToolResults`` from the approvals'
outcomes and resumes with ``agent.run(message_history=..., deferred_tool_results=...)``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pydantic import JsonValue
from sqlite_utils import Database
from sqlite_utils.db import NotFoundError

from agent.approval_records import (
    ApprovalAlreadyDecided,
    ApprovalError,
    ApprovalExpired,
    ApprovalNotFound,
    ApprovalNotGranted,
    ApprovalRequest,
    ApprovalReused,
    ApprovalStatus,
    ApprovalTampered,
    ApproverNotAllowed,
    PendingToolCall,
    PlanHashMismatch,
    RunState,
    SelfApprovalRefused,
    load_approval_key,
)
from agent.audit import AuditLog

__all__ = [
    "ApprovalStatus", "ApprovalRequest", "PendingToolCall", "RunState", "ApprovalStore", "ApprovalError",
    "ApprovalNotFound", "ApprovalExpired", "ApprovalReused", "ApprovalNotGranted", "ApprovalAlreadyDecided",
    "PlanHashMismatch", "SelfApprovalRefused", "ApproverNotAllowed", "ApprovalTampered", "load_approval_key"
]


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(timezone.utc)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (UTC)")
    return now.astimezone(timezone.utc)


def _ts(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


class ApprovalStore:
    """Approval requests and paused runs in one SQLite file.

    Args:
        db_path: SQLite file; created with its tables if missing. Several processes may share it.
        allowed_approvers: user names who may approve or deny (from config). Empty means nobody
            can approve: the store fails closed.
        audit: when given, every request, approval, denial, expiry, use and refusal is appended to it
            (kind ``approval_request`` or ``approval``) before the database changes, and consume
            checks the approval is in that chain.
        key: the MAC key; None reads (or creates, mode 0600) ``approval.key`` beside ``db_path``.
    """

    def __init__(
        self, db_path: Path | str, allowed_approvers: Iterable[str] = (), audit: AuditLog | None = None,
        *, key: bytes | None = None,
    ) -> None:
        self._audit = audit
        self._key = key if key is not None else load_approval_key(Path(db_path).with_name("approval.key"))
        # Usable from the worker threads pydantic-ai runs sync tools in (one call at a time per run).
        self._db = Database(sqlite3.connect(str(db_path), check_same_thread=False))
        self._db.execute("PRAGMA busy_timeout = 5000")
        self.allowed_approvers = frozenset(allowed_approvers)
        self._db["approvals"].create(
            {
                "id": str, "plan_hash": str, "action": str, "params": str, "requester": str,
                "run_id": str, "created_at": str, "expires_at": str, "status": str,
                "approver": str, "decided_at": str, "reason": str, "consumed_at": str,
                "commands": str, "mac": str,
            },
            pk="id",
            not_null=["plan_hash", "action", "params", "requester", "run_id", "created_at", "expires_at", "status"],
            if_not_exists=True,
        )
        for col in ("commands", "mac"):  # stores made before these columns existed
            if col not in self._db["approvals"].columns_dict:
                self._db["approvals"].add_column(col, str)
        self._db["run_states"].create(
            {"run_id": str, "messages_json": str, "pending_tool_calls": str, "saved_at": str},
            pk="run_id",
            not_null=["messages_json", "pending_tool_calls", "saved_at"],
            if_not_exists=True,
        )

    # ---- approvals ---------------------------------------------------------------------------

    def request_approval(
        self,
        plan_hash: str,
        action: str,
        params: dict[str, JsonValue],
        requester: str,
        run_id: str,
        ttl_s: float,
        *,
        now: datetime | None = None,
        commands: list[list[str]] | None = None,
    ) -> ApprovalRequest:
        """Store a new pending request for one plan and return it (``id`` is new, 12 hex digits).

        Raises:
            ValueError: an empty plan hash, action or requester, or ``ttl_s`` not positive.
        """
        if not plan_hash or not action or not requester or ttl_s <= 0:
            raise ValueError("plan_hash, action and requester are required and ttl_s must be > 0")
        created = _utc(now)
        request = ApprovalRequest(
            id=secrets.token_hex(6), plan_hash=plan_hash, action=action, params=params,
            requester=requester, run_id=run_id, created_at=created,
            expires_at=created + timedelta(seconds=ttl_s), status="pending", commands=list(commands or []),
        )
        row = request.model_dump(mode="json")
        row["params"] = json.dumps(params, sort_keys=True, separators=(",", ":"))
        row["commands"] = json.dumps(request.commands)
        row["created_at"], row["expires_at"] = _ts(request.created_at), _ts(request.expires_at)
        if self._audit is not None:
            self._audit.append("approval_request", request.model_dump(mode="json"), run_id=run_id)
        self._db["approvals"].insert(row)
        return request

    def get(self, approval_id: str) -> ApprovalRequest:
        """Return one request by id.

        Raises:
            ApprovalNotFound: no request has that id.
        """
        try:
            row = self._db["approvals"].get(approval_id)
        except NotFoundError as exc:
            raise ApprovalNotFound(f"approval {approval_id}: no such approval request") from exc
        row["params"] = json.loads(row["params"])
        row["commands"] = json.loads(row.get("commands") or "[]")
        return ApprovalRequest.model_validate(row)

    def list_pending(self, *, now: datetime | None = None) -> list[ApprovalRequest]:
        """Pending requests that have not expired, oldest first."""
        moment = _utc(now)
        self.expire_due(now=moment)
        rows = self._db["approvals"].rows_where("status = ?", ["pending"], order_by="created_at")
        pending = [self.get(row["id"]) for row in rows]
        return [r for r in pending if r.expires_at > moment]

    def expire_due(self, *, now: datetime | None = None) -> list[str]:
        """Mark pending requests past their expiry ``expired``, recording each in the audit log once."""
        moment = _utc(now)
        due = [r["id"] for r in self._db["approvals"].rows_where("status = ? AND expires_at <= ?",
                                                                  ["pending", _ts(moment)])]
        done = []
        for aid in due:
            req = self.get(aid)
            self._record("expired", aid, req.run_id, action=req.action, plan_hash=req.plan_hash,
                         expires_at=_ts(req.expires_at))
            if self._db.execute("UPDATE approvals SET status = 'expired', decided_at = ? WHERE id = ? AND "
                                "status = 'pending'", [_ts(moment), aid]).rowcount == 1:
                done.append(aid)
        return done

    def _mac(self, req: ApprovalRequest, approver: str) -> str:
        body = json.dumps({"id": req.id, "plan_hash": req.plan_hash, "action": req.action, "requester": req.requester,
                           "approver": approver, "expires_at": _ts(req.expires_at)}, sort_keys=True)
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def _check_integrity(self, req: ApprovalRequest) -> None:
        if not req.mac or not hmac.compare_digest(req.mac, self._mac(req, req.approver or "")):
            raise ApprovalTampered(f"approval {req.id}: its MAC does not verify (row edited or inserted outside Warden)")
        if self._audit is None:
            return
        for r in self._audit.records(run_id=req.run_id):
            p = r.payload
            if (r.kind == "approval" and p.get("event") == "approve" and p.get("approval_id") == req.id
                    and p.get("plan_hash") == req.plan_hash and p.get("approver") == req.approver
                    and p.get("mac") == req.mac):
                return
        raise ApprovalTampered(f"approval {req.id}: no matching approval in the audit chain")

    def _record(self, event: str, approval_id: str, run_id: str | None, **fields: str | None) -> None:
        if self._audit is not None:
            self._audit.append("approval", {"event": event, "approval_id": approval_id, **fields}, run_id=run_id)

    @contextmanager
    def _refusals_recorded(self, event: str, approval_id: str, **fields: str | None) -> Iterator[None]:
        try:
            yield
        except ApprovalError as exc:
            run_id = None
            if not isinstance(exc, ApprovalNotFound):
                run_id = self.get(approval_id).run_id
            self._record("refused", approval_id, run_id, attempted=event, error=type(exc).__name__, message=str(exc), **fields)
            raise

    def _check_approver(self, request: ApprovalRequest, approver: str) -> None:
        if approver not in self.allowed_approvers:
            raise ApproverNotAllowed(f"approval {request.id}: {approver!r} is not an allowed approver")
        if request.irreversible and approver == request.requester:
            raise SelfApprovalRefused(
                f"approval {request.id}: {approver!r} requested this irreversible {request.action} and cannot approve it"
            )

    def _decide(self, request: ApprovalRequest, status: ApprovalStatus, approver: str, moment: datetime, reason: str | None) -> ApprovalRequest:
        cursor = self._db.execute(
            "UPDATE approvals SET status = ?, approver = ?, decided_at = ?, reason = ? WHERE id = ? AND status = 'pending'",
            [status, approver, _ts(moment), reason, request.id],
        )
        if cursor.rowcount != 1:
            raise ApprovalAlreadyDecided(f"approval {request.id}: already decided by another approver")
        return self.get(request.id)

    def approve(self, approval_id: str, approver: str, plan_hash: str, now: datetime | None = None) -> ApprovalRequest:
        """Approve a pending request for exactly the plan hash the approver was shown.

        Raises:
            ApprovalNotFound, ApprovalExpired, ApprovalAlreadyDecided, PlanHashMismatch,
            ApproverNotAllowed, SelfApprovalRefused (irreversible actions only).
        """
        moment = _utc(now)
        with self._refusals_recorded("approve", approval_id, approver=approver, plan_hash=plan_hash):
            request = self.get(approval_id)
            if request.status != "pending":
                raise ApprovalAlreadyDecided(f"approval {approval_id}: already {request.status}")
            if moment >= request.expires_at:
                self.expire_due(now=moment)
                raise ApprovalExpired(f"approval {approval_id}: expired at {_ts(request.expires_at)}")
            if not hmac.compare_digest(plan_hash, request.plan_hash):
                raise PlanHashMismatch(
                    f"approval {approval_id}: plan hash {plan_hash[:16]} does not match the requested plan {request.plan_hash[:16]}"
                    " (hashes are compared whole)"
                )
            self._check_approver(request, approver)
            mac = self._mac(request, approver)
            self._record("approve", approval_id, request.run_id, approver=approver, plan_hash=plan_hash,
                         expires_at=_ts(request.expires_at), mac=mac)
            done = self._decide(request, "approved", approver, moment, None)
            self._db.execute("UPDATE approvals SET mac = ? WHERE id = ?", [mac, approval_id])
            return done.model_copy(update={"mac": mac})

    def deny(self, approval_id: str, approver: str, reason: str, now: datetime | None = None) -> ApprovalRequest:
        """Deny a pending request; an allowed approver or the requester (withdrawing it) may deny.

        Raises:
            ApprovalNotFound, ApprovalAlreadyDecided, ApproverNotAllowed.
        """
        moment = _utc(now)
        with self._refusals_recorded("deny", approval_id, approver=approver, reason=reason):
            request = self.get(approval_id)
            if request.status != "pending":
                raise ApprovalAlreadyDecided(f"approval {approval_id}: already {request.status}")
            if approver not in self.allowed_approvers and approver != request.requester:
                raise ApproverNotAllowed(f"approval {approval_id}: {approver!r} may not deny it")
            self._record("deny", approval_id, request.run_id, approver=approver, reason=reason)
            return self._decide(request, "denied", approver, moment, reason)

    def consume(self, approval_id: str, plan_hash: str, now: datetime | None = None) -> ApprovalRequest:
        """Use an approval once, for the plan about to run; a second call raises ApprovalReused.

        The approver is checked again (an allowed set that shrank, or a row edited in the
        database, does not slip through). The update is atomic, so two processes racing to
        consume the same approval cannot both succeed.

        Raises:
            ApprovalNotFound, ApprovalReused, ApprovalNotGranted, ApprovalExpired,
            PlanHashMismatch, ApproverNotAllowed, SelfApprovalRefused.
        """
        moment = _utc(now)
        with self._refusals_recorded("consume", approval_id, plan_hash=plan_hash):
            return self._consume(approval_id, plan_hash, moment)

    def _consume(self, approval_id: str, plan_hash: str, moment: datetime) -> ApprovalRequest:
        request = self.get(approval_id)
        if request.status == "consumed":
            raise ApprovalReused(f"approval {approval_id}: already used at {_ts(request.consumed_at or moment)}")
        if request.status != "approved":
            raise ApprovalNotGranted(f"approval {approval_id}: {request.status}, not approved")
        if moment >= request.expires_at:
            raise ApprovalExpired(f"approval {approval_id}: expired at {_ts(request.expires_at)}")
        if not hmac.compare_digest(plan_hash, request.plan_hash):
            raise PlanHashMismatch(
                f"approval {approval_id}: plan hash {plan_hash[:16]} does not match the approved plan {request.plan_hash[:16]}"
            )
        self._check_integrity(request)
        self._check_approver(request, request.approver or "")
        self._record("consume", approval_id, request.run_id, approver=request.approver, plan_hash=plan_hash)
        cursor = self._db.execute(
            "UPDATE approvals SET status = 'consumed', consumed_at = ? WHERE id = ? AND status = 'approved'",
            [_ts(moment), approval_id],
        )
        if cursor.rowcount != 1:
            raise ApprovalReused(f"approval {approval_id}: already used by another process")
        return self.get(approval_id)

    # ---- paused runs -------------------------------------------------------------------------

    def save_run_state(
        self, run_id: str, messages_json: bytes | str, pending_tool_calls: Sequence[PendingToolCall]
    ) -> RunState:
        """Save (or replace) a paused run's message history and its tool calls awaiting approval.

        Raises:
            ValueError: ``messages_json`` is not a pydantic-ai message history.
        """
        raw = messages_json.encode() if isinstance(messages_json, str) else messages_json
        from pydantic_ai import ModelMessagesTypeAdapter  # here: `approvals list` starts without pydantic-ai

        ModelMessagesTypeAdapter.validate_json(raw)  # refuse anything that could not be resumed
        state = RunState(
            run_id=run_id, messages_json=raw, pending_tool_calls=list(pending_tool_calls),
            saved_at=datetime.now(timezone.utc),
        )
        calls = json.dumps([c.model_dump(mode="json") for c in state.pending_tool_calls], sort_keys=True)
        self._db["run_states"].insert(
            {"run_id": run_id, "messages_json": raw.decode(), "pending_tool_calls": calls, "saved_at": _ts(state.saved_at)},
            replace=True,
        )
        return state

    def load_run_state(self, run_id: str) -> RunState:
        """Load a paused run saved by :meth:`save_run_state` (possibly in another process).

        Raises:
            ApprovalNotFound: no run with that id was saved.
        """
        try:
            row = self._db["run_states"].get(run_id)
        except NotFoundError as exc:
            raise ApprovalNotFound(f"run {run_id}: no saved run state") from exc
        return RunState(
            run_id=row["run_id"],
            messages_json=row["messages_json"].encode(),
            pending_tool_calls=[PendingToolCall.model_validate(c) for c in json.loads(row["pending_tool_calls"])],
            saved_at=datetime.fromisoformat(row["saved_at"]),
        )

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()
