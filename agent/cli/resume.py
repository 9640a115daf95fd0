"""Resuming a paused run after `warden approve` / `warden deny` (shared by both commands)."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai import ModelMessagesTypeAdapter, ToolReturnPart
from rich.console import Console

from agent.approvals import ApprovalNotFound, ApprovalStore
from agent.audit import AuditLog
from agent.execute import ExecutionSetup
from agent.render.safe import clean, clean_line
from agent.runs import resume_run
from agent.settings import WardenSettings
from agent.store import RunStore
from tools.read.context import ReadContext

__all__ = ["resume_if_ready", "snapshot_dir"]


def snapshot_dir(target: str) -> Path | None:
    """The snapshot directory of an incident or snapshot path, or None."""
    p = Path(target)
    for cand in (p, p / "snapshot"):
        if (cand / "manifest.yaml").is_file():
            return cand
    return None


def resume_if_ready(run_id: str, settings: WardenSettings, audit: AuditLog, approvals: ApprovalStore, *,
                    execute: bool, db: Path | None, console: Console) -> None:
    """Resume the paused run ``run_id`` when none of its approvals is still pending; say why not otherwise.

    Raises:
        WardenError: the evidence cannot be read, or the policy cannot be loaded (PolicyError).
    """
    try:
        state = approvals.load_run_state(run_id)
    except ApprovalNotFound:
        console.print(f"no paused run {run_id} to resume", markup=False)
        return
    ids = [c.approval_id for c in state.pending_tool_calls if c.approval_id]
    waiting = [i for i in ids if approvals.get(i).status == "pending"]
    if waiting:
        console.print(f"run {run_id} still waits for: {', '.join(waiting)}", markup=False)
        return
    store = RunStore(db)
    row = next(iter(store.db["runs"].rows_where("id = ?", [run_id])), None) if "runs" in store.db.table_names() else None
    snap = snapshot_dir(row["target"]) if row and row.get("target") else None
    if snap is None:
        console.print(f"run {run_id}: its evidence is unknown here; resume it where it was started", markup=False)
        return
    requester = approvals.get(ids[0]).requester if ids else "warden"
    runner = None
    if execute:
        from tools.sources.local import LocalSource

        runner = LocalSource()
    setup = ExecutionSetup(engine=settings.engine(), approvals=approvals, audit=audit, requester=requester,
                           groups=settings.groups_of(requester), approver_groups=settings.approvers, runner=runner,
                           dry_run=not execute, approval_ttl_s=settings.approval_ttl_s, autonomy=settings.autonomy,
                           fleet=settings.fleet)
    out = resume_run(run_id, ReadContext.from_snapshot(snap), setup=setup, model=row["model"], store=store,
                     limits=settings.limits)
    calls = {c.tool_call_id for c in state.pending_tool_calls}
    for m in ModelMessagesTypeAdapter.validate_json(out.messages_json) if out.messages_json else []:
        for part in m.parts:
            if isinstance(part, ToolReturnPart) and part.tool_call_id in calls:
                console.print(clean_line(f"  {part.tool_name}: {part.model_response_str()}"), markup=False)
    if out.paused is not None:
        console.print(f"run {run_id} paused again for approval", markup=False)
    elif out.diagnosis is not None:
        console.print(clean(f"run {run_id} resumed{' (dry run)' if not execute else ''}: {out.diagnosis.summary}"),
                      markup=False)
