"""The ``execute_action`` tool, registered only when the caller enables execution.

A model may ask to execute one proposed action. What happens is decided here and in
agent/execute.py, never by the model:

- the policy denies it -> the tool returns the denial as text (the model can report it);
- the policy needs an approval -> a pending approval is stored for the exact plan hash and the
  tool raises ``ApprovalRequired`` (its metadata names the approval id), so the run ends with
  ``DeferredToolRequests`` and is saved to be resumed;
- on resume the call arrives approved (``ctx.tool_call_approved``) with the approval id in
  ``ctx.tool_call_metadata`` — both put there by Warden from its own store, never by the model —
  and the approval is consumed for the plan these arguments render; any mismatch is refused;
- the policy allows it -> it runs (unless dry run) and is verified.

Every step is audited by the ExecutionSetup before it takes effect.
"""

from __future__ import annotations

from pydantic_ai import ApprovalRequired, FunctionToolset, RunContext

from agent.approvals import ApprovalError
from agent.deps import WardenDeps
from tools.errors import ActionError
from tools.models.findings import ActionSpec

__all__ = ["exec_toolset", "EXECUTE_TOOL"]

EXECUTE_TOOL = "execute_action"

exec_toolset: FunctionToolset[WardenDeps] = FunctionToolset()


@exec_toolset.tool(name=EXECUTE_TOOL)
def execute_action(ctx: RunContext[WardenDeps], action: ActionSpec) -> str:
    """Ask Warden to execute one remediation (same fields as a proposed action). Warden checks the
    policy; reversible and irreversible actions wait for a human approval, and some are denied.
    You cannot approve anything yourself. Returns what happened, in one line."""
    setup = ctx.deps.execution
    if setup is None:
        return "refused: execution is not enabled for this run"
    run_id = ctx.deps.run_id
    try:
        if ctx.tool_call_approved:
            approval_id = (ctx.tool_call_metadata or {}).get("approval_id")
            if not isinstance(approval_id, str):
                return "refused: no approval is recorded for this call"
            return setup.execute_approved(approval_id, action, run_id=run_id).message
        outcome = setup.propose(action, run_id=run_id)
    except (ApprovalError, ActionError) as e:
        return f"refused: {e}"
    if outcome.status == "pending_approval":
        raise ApprovalRequired(metadata={"approval_id": outcome.approval_id,
                                         "plan_hash": outcome.plan.plan_hash if outcome.plan else None,
                                         "message": outcome.message})
    return outcome.message
