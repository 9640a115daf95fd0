"""Runs that may execute: start one, pause it on approval, resume it (also from another process).

    start_run ──► run_agent(execution=setup) ──► Diagnosis
                                            └──► DeferredToolRequests: approval ids in metadata
                                                 ──► save_run_state(messages, pending calls)
    warden approve ID / warden deny ID --reason ...
    resume_run(run_id) ──► load_run_state ──► DeferredToolResults from the approvals' outcomes
                       ──► run_agent(message_history=..., deferred_tool_results=...)

The DeferredToolResults are built only from Warden's approval store: an approved request gives
``True`` plus ``{"approval_id": ...}`` metadata (the tool then consumes that approval for the plan
its arguments render); a denied or expired one gives ``ToolDenied`` with the reason. Nothing the
model wrote decides what is approved.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic_ai import DeferredToolResults, ModelMessagesTypeAdapter, ToolDenied

from agent.approvals import ApprovalNotGranted, ApprovalStore, PendingToolCall
from agent.diagnose import DEFAULT_QUESTION, RunOutcome, run_agent
from agent.execute import ExecutionSetup
from tools.read.context import ReadContext

__all__ = ["start_run", "resume_run", "deferred_results"]


def _save(approvals: ApprovalStore, out: RunOutcome) -> None:
    if out.paused is None:
        return
    pending = []
    for call in out.paused.approvals:
        meta = out.paused.metadata.get(call.tool_call_id) or {}
        pending.append(PendingToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                       args=call.args_as_dict(), approval_id=meta.get("approval_id")))
    approvals.save_run_state(out.run_id, out.messages_json, pending)


def start_run(ctx: ReadContext, question: str = DEFAULT_QUESTION, *, setup: ExecutionSetup,
              **kwargs: Any) -> RunOutcome:
    """Run the agent with the execute_action tool enabled; a paused run is saved for resume_run.

    ``kwargs`` go to :func:`agent.diagnose.run_agent` (model, model_override, store, limits ...);
    the audit log is the setup's.
    """
    out = run_agent(ctx, question, execution=setup, audit=setup.audit, **kwargs)
    _save(setup.approvals, out)
    return out


def deferred_results(approvals: ApprovalStore, pending: list[PendingToolCall], *,
                     now: datetime | None = None) -> DeferredToolResults:
    """DeferredToolResults for a paused run's calls, from the approval store alone.

    Raises:
        ApprovalNotGranted: some approval is still pending (the run cannot resume yet).
    """
    now = now or datetime.now(timezone.utc)
    results = DeferredToolResults()
    for call in pending:
        req = approvals.get(call.approval_id) if call.approval_id else None
        if req is None:
            results.approvals[call.tool_call_id] = ToolDenied("no approval was requested for this call")
        elif req.status == "pending" and req.expires_at > now:
            raise ApprovalNotGranted(f"approval {req.id}: still pending; approve or deny it first")
        elif req.status == "approved":
            results.approvals[call.tool_call_id] = True
            results.metadata[call.tool_call_id] = {"approval_id": req.id}
        elif req.status == "denied":
            results.approvals[call.tool_call_id] = ToolDenied(f"denied by {req.approver}: {req.reason}")
        elif req.status == "consumed":
            results.approvals[call.tool_call_id] = ToolDenied(f"approval {req.id} was already used")
        else:
            results.approvals[call.tool_call_id] = ToolDenied(f"approval {req.id} expired")
    return results


def resume_run(run_id: str, ctx: ReadContext, *, setup: ExecutionSetup, **kwargs: Any) -> RunOutcome:
    """Resume a paused run (possibly saved by another process) once its approvals are decided.

    Raises:
        ApprovalNotFound: no paused run with that id.
        ApprovalNotGranted: an approval of the run is still pending.
    """
    state = setup.approvals.load_run_state(run_id)
    results = deferred_results(setup.approvals, state.pending_tool_calls, now=setup.clock())
    history = ModelMessagesTypeAdapter.validate_json(state.messages_json)
    out = run_agent(ctx, None, execution=setup, audit=setup.audit, run_id=run_id, message_history=history,
                    deferred_tool_results=results, **kwargs)
    _save(setup.approvals, out)
    return out
