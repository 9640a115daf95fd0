"""What the approval store keeps, and how it refuses: the request and paused-run models, the
error tree (see agent/approvals.py) and the MAC key."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from tools.errors import WardenError

__all__ = [
    "ApprovalStatus", "ApprovalRequest", "PendingToolCall", "RunState", "ApprovalError", "ApprovalNotFound",
    "ApprovalExpired", "ApprovalReused", "ApprovalNotGranted", "ApprovalAlreadyDecided", "PlanHashMismatch",
    "SelfApprovalRefused", "ApproverNotAllowed", "ApprovalTampered", "load_approval_key",
]

ApprovalStatus = Literal["pending", "approved", "denied", "consumed", "expired"]


class ApprovalError(WardenError):
    """An approval was refused; ``str(err)`` is one line naming the approval id."""


class ApprovalNotFound(ApprovalError):
    """No approval request (or saved run) has that id."""


class ApprovalExpired(ApprovalError):
    """The approval request expired before it was approved or used."""


class ApprovalReused(ApprovalError):
    """The approval was already consumed; approvals are single-use."""


class ApprovalNotGranted(ApprovalError):
    """The request is still pending or was denied, so there is nothing to consume."""


class ApprovalAlreadyDecided(ApprovalError):
    """The request was already approved, denied or consumed."""


class PlanHashMismatch(ApprovalError):
    """The plan hash differs from the one the approval was requested for: the plan changed."""


class SelfApprovalRefused(ApprovalError):
    """The requester tried to approve their own irreversible action."""


class ApproverNotAllowed(ApprovalError):
    """The approver is not in the configured set of allowed approvers."""


class ApprovalTampered(ApprovalError):
    """The stored approval does not carry a valid MAC, or the audit chain holds no such approval."""


def load_approval_key(path: Path) -> bytes:
    """The MAC key at ``path``, created (32 random bytes, mode 0600) when missing (agent.keys).

    Raises:
        ApprovalError: the file is readable or writable by group or others, or is not a key.
    """
    from agent.keys import KeyFileError, load_key_file

    try:
        return load_key_file(path, what="approval key")
    except KeyFileError as e:
        raise ApprovalError(str(e)) from None


class ApprovalRequest(BaseModel):
    """One approval request as stored (times are UTC)."""

    model_config = ConfigDict(frozen=True)

    id: str
    plan_hash: str
    action: str
    """DESIGN.md action id, e.g. ``drain_node``."""
    params: dict[str, JsonValue]
    """The action's parameters, as shown to the approver."""
    requester: str
    run_id: str
    created_at: datetime
    expires_at: datetime
    status: ApprovalStatus
    approver: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    """Why it was denied (deny only)."""
    consumed_at: datetime | None = None
    commands: list[list[str]] = Field(default_factory=list)
    """The exact commands (argument lists) the plan runs, as shown to the approver."""
    mac: str | None = None
    """HMAC-SHA256 of the approved request (set by approve)."""

    @property
    def irreversible(self) -> bool:
        """True unless the action is a known read-only or reversible one (unknown ids count)."""
        from tools.actions import reversibility_of  # the action catalogue (and the Kubernetes client): only here

        return reversibility_of(self.action) == "irreversible"


class PendingToolCall(BaseModel):
    """A tool call of a paused run that waits on an approval (from ``DeferredToolRequests``)."""

    tool_call_id: str
    tool_name: str
    args: dict[str, JsonValue] | str | None = None
    approval_id: str | None = None


class RunState(BaseModel):
    """A paused run: its message history and the tool calls awaiting approval."""

    run_id: str
    messages_json: bytes
    """``result.all_messages_json()``; load with ``ModelMessagesTypeAdapter.validate_json``."""
    pending_tool_calls: list[PendingToolCall] = Field(default_factory=list)
    saved_at: datetime
