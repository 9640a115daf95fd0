"""/approve N and /deny N: a plan of the Diagnosis through Warden's approval flow, never around it.

    /approve N ─► ExecutionSetup.propose (gates, blast radius, Cedar; audited "policy_decision")
                  ├─ denied / refused / observed ───► said, nothing else
                  ├─ allowed without approval ──────► runs only with --live --execute
                  └─ needs approval ─► pending request (audited) ─► approve as the OS login user
                                       (MAC, audited; a requester cannot approve their own
                                       irreversible plan: a second person runs `warden approve ID`)
                                     ─► execute_approved: plan re-hashed, policy re-checked with the
                                       approver, approval consumed once, executed and verified —
                                       or, on a snapshot or without --execute, a dry run that leaves
                                       the approval unused
    /deny N [reason] ─► the pending request (made first if there is none) denied, audited

The approver is :func:`agent.identity.os_user`, never a name typed into the chat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agent.approvals import ApprovalError, SelfApprovalRefused
from agent.execute import ActionOutcome, ExecutionSetup
from agent.render.safe import shell_command
from tools.errors import ActionError
from tools.models.findings import ActionSpec, Diagnosis, PlannedAction

__all__ = ["ChatApprovals"]


@dataclass
class ChatApprovals:
    """The approval side of one chat session.

    Args:
        propose_setup: decides and requests approvals (``dry_run`` False); its runner is None unless
            the session may execute, so an allowed action cannot run by accident.
        run_setup: executes approved plans (a dry-run setup when the session may not execute).
        approver: the OS login user.
        live_spec: refines a plan's spec against the live cluster (a resubmission's checkpoint
            verified now); None on a snapshot.
        can_execute: whether anything can actually run (``--live --execute``).
    """

    propose_setup: ExecutionSetup
    run_setup: ExecutionSetup
    approver: str
    can_execute: bool = False
    live_spec: Callable[[PlannedAction], ActionSpec | None] | None = None
    requested: dict[str, str] = field(default_factory=dict)
    """plan hash -> approval id, for the plans this session asked approval for."""

    def _plan(self, d: Diagnosis, n: int) -> PlannedAction:
        if not 1 <= n <= len(d.proposed_actions):
            raise ValueError(f"there is no plan {n}: the diagnosis has {len(d.proposed_actions)} (see /plan)")
        return d.proposed_actions[n - 1]

    def _request(self, d: Diagnosis, n: int) -> tuple[ActionSpec, str | None, list[str]]:
        """(spec, approval id or None, lines said) for plan ``n``: an existing request, or a new one."""
        planned = self._plan(d, n)
        spec = self.live_spec(planned) if self.live_spec else planned.spec
        if spec is None:
            return planned.spec, None, [f"plan {n} is not acted on live (Warden's own diagnostic job)"]
        known = self.requested.get(planned.plan_hash)
        if known and self.propose_setup.approvals.get(known).status in ("pending", "approved"):
            return spec, known, []
        self.propose_setup.diagnosis, self.propose_setup.condition = d, d.root_cause
        try:
            o = self.propose_setup.propose(spec, run_id=d.run_id)
        except ActionError as e:  # allowed by policy, but nothing here can run it
            return spec, None, [f"plan {n}: the policy allows it without approval, but this session cannot execute "
                                f"({e}); start `warden chat --live --execute` to run it"]
        lines = [self._outcome(o)]
        if o.status == "pending_approval" and o.approval_id:
            if o.plan is not None:
                self.requested[o.plan.plan_hash] = o.approval_id
            return spec, o.approval_id, lines
        return spec, None, lines

    def _outcome(self, o: ActionOutcome) -> str:
        return f"[{o.status}] {o.message}"  # the message names the autonomy mode already

    def approve(self, d: Diagnosis, n: int) -> list[str]:
        """Approve plan ``n`` as the OS user and carry it out as far as this session may (see the module
        docstring). Returns the lines to show; refusals are lines too, never exceptions."""
        try:
            spec, aid, lines = self._request(d, n)
        except (ValueError, ApprovalError) as e:
            return [str(e)]
        if aid is None:
            return lines
        store = self.propose_setup.approvals
        req = store.get(aid)
        lines.append(f"approval {aid} for plan {req.plan_hash[:16]}:")
        lines += [f"    $ {shell_command(argv)}" for argv in req.commands]
        if req.status == "pending":
            try:
                req = store.approve(aid, self.approver, req.plan_hash)
            except SelfApprovalRefused:
                return lines + [f"{self.approver} asked for this irreversible plan and cannot approve it; a second "
                                f"person approves it with `warden approve {aid}`"]
            except ApprovalError as e:
                return lines + [f"not approved: {e}"]
            lines.append(f"approved by {self.approver} (single use, expires {req.expires_at:%Y-%m-%d %H:%M}Z)")
        try:
            o = self.run_setup.execute_approved(aid, spec, run_id=d.run_id)
        except ApprovalError as e:
            return lines + [f"not executed: {e}"]
        lines.append(self._outcome(o))
        if o.verification is not None:
            lines.append(f"    verify: {'ok' if o.verification.ok else 'FAILED'}: {o.verification.observed}")
        if not self.can_execute and o.status == "dry_run":
            lines.append("nothing ran: this session reads a snapshot or was started without --live --execute; the "
                         f"approval stays valid until it expires (`warden act --approved {aid} --execute` on the live "
                         "cluster)")
        return lines

    def deny(self, d: Diagnosis, n: int, reason: str) -> list[str]:
        """Deny plan ``n`` (its pending request, made first if needed) as the OS user, with ``reason``."""
        try:
            _, aid, lines = self._request(d, n)
            if aid is None:
                return lines
            req = self.propose_setup.approvals.deny(aid, self.approver, reason or "denied in warden chat")
        except (ValueError, ApprovalError) as e:
            return [str(e)]
        return lines + [f"denied {req.id} by {self.approver}: {req.reason}"]
