"""A Diagnosis and its plans as Slack Block Kit: what Warden posts, never what a model writes.

One message per answer::

    header    "<root cause>" (plain text)
    section   root cause, confidence, GPU-hours lost, culprits, the question
    section   the summary
    section   evidence lines (text, file:line, time)
    context   evidence that could not be read (when any)
    per plan  section: description, reversibility, decision, the exact commands (shell-quoted)
              actions: Approve / Deny, bound to the approval id and the whole plan hash
              (only for a plan waiting for approval)
    context   run id, autonomy mode, model

Every piece of cluster text passes through agent.slackapp.mrkdwn. Slack's limits hold: at most 50
blocks, 3,000 characters per section, 75 per button label, 2,000 per button value.
"""

from __future__ import annotations

import json
from typing import Any

from agent.execute import ActionOutcome
from agent.render.safe import shell_command
from agent.slackapp import mrkdwn
from tools.models.findings import Diagnosis

__all__ = ["APPROVE", "DENY", "ButtonValue", "diagnosis_blocks", "fallback_text", "button_value", "parse_value",
           "decided_blocks", "MAX_PLANS"]

APPROVE, DENY = "warden_approve", "warden_deny"
"""action_id of the two buttons."""
MAX_PLANS = 15
"""Plans shown per message (two blocks each; Slack allows 50 blocks)."""
_MAX_EVIDENCE = 6
_STATUS = {"pending_approval": "waiting for approval", "executed": "executed and verified", "failed": "FAILED",
           "denied": "denied by policy", "refused": "refused", "observed": "observe mode: not carried out",
           "dry_run": "not run"}

ButtonValue = dict[str, str]


def button_value(approval_id: str, plan_hash: str) -> str:
    """The value a button carries: the approval id and the whole plan hash, as JSON."""
    return json.dumps({"approval_id": approval_id, "plan_hash": plan_hash}, separators=(",", ":"))


def parse_value(value: str | None) -> ButtonValue | None:
    """The approval id and plan hash of a button's value, or None when it is not one of Warden's."""
    try:
        doc = json.loads(value or "")
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    aid, ph = doc.get("approval_id"), doc.get("plan_hash")
    if not (isinstance(aid, str) and isinstance(ph, str) and aid.isalnum() and ph.isalnum()):
        return None
    return {"approval_id": aid, "plan_hash": ph}


def fallback_text(d: Diagnosis) -> str:
    """The notification text (shown where blocks are not): cause, culprits, confidence."""
    return mrkdwn.line(f"Warden: {d.root_cause}: {', '.join(d.culprits) or 'no culprit'} "
                       f"(confidence {d.confidence:.2f}, {d.gpu_hours_lost:g} GPU-h lost)", 300)


def _section(md: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn.cut(md, 3000)}}


def _evidence(d: Diagnosis) -> str:
    rows = []
    for e in d.evidence[:_MAX_EVIDENCE]:
        where = e.file + (f":{e.line}" if e.line else "") if e.file else None
        if e.metric:
            where = f"{e.metric}={e.value:g}{e.unit or ''}" if e.value is not None else e.metric
        tail = " — " + " · ".join(f"`{mrkdwn.line(x, 160)}`" for x in (where, e.time) if x) if (where or e.time) else ""
        rows.append(f"• {mrkdwn.line(e.text, 300)}{tail}")
    more = len(d.evidence) - _MAX_EVIDENCE
    if more > 0:
        rows.append(f"_… and {more} more_")
    return "*Evidence*\n" + "\n".join(rows)


def _plan_blocks(i: int, o: ActionOutcome) -> list[dict[str, Any]]:
    plan = o.plan
    title = plan.description if plan else o.spec.type
    rev = f" ({plan.reversibility})" if plan and plan.reversibility else ""
    status = _STATUS.get(o.status, o.status)
    cmds = "\n".join("$ " + shell_command(argv) for argv in (plan.commands if plan else []))
    md = f"*{i}. {mrkdwn.line(title, 200)}*{rev} — {status}\n{mrkdwn.line(o.message, 600)}"
    if cmds:
        md += f"\n```{mrkdwn.code(cmds, 2000)}```"
    out = [_section(md)]
    if o.status == "pending_approval" and o.approval_id and plan:
        value = button_value(o.approval_id, plan.plan_hash)
        approve: dict[str, Any] = {"type": "button", "action_id": APPROVE, "style": "primary", "value": value,
                                   "text": {"type": "plain_text", "text": "Approve"}}
        if plan.reversibility == "irreversible":
            approve["confirm"] = {
                "title": {"type": "plain_text", "text": "Irreversible action"},
                "text": {"type": "mrkdwn", "text": mrkdwn.cut(f"This cannot be undone:\n```{mrkdwn.code(cmds, 250)}```", 300)},
                "confirm": {"type": "plain_text", "text": "Approve"}, "deny": {"type": "plain_text", "text": "Cancel"}}
        out.append({"type": "actions", "block_id": f"plan:{o.approval_id}", "elements": [
            approve,
            {"type": "button", "action_id": DENY, "style": "danger", "value": value,
             "text": {"type": "plain_text", "text": "Deny"}},
        ]})
    return out


def diagnosis_blocks(d: Diagnosis, outcomes: list[ActionOutcome], *, mode: str, note: str | None = None) -> list[dict[str, Any]]:
    """The message blocks for one answer (see the module docstring).

    Args:
        d: the Diagnosis.
        outcomes: what the execution path decided for each proposed plan (in execution order); an
            empty list with plans in ``d`` shows the plans as proposed (observe mode).
        mode: the autonomy mode applied (shown in the footer).
        note: one line above the footer (e.g. which alert led here); untrusted text is escaped.
    """
    culprits = ", ".join(f"`{mrkdwn.line(c, 80)}`" for c in d.culprits[:12]) or "none"
    head = (f"*Root cause:* `{d.root_cause}` · confidence {d.confidence:.2f} · *{d.gpu_hours_lost:g} GPU-h lost*\n"
            f"*Culprits:* {culprits}\n*Question:* {mrkdwn.line(d.question, 400)}")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": mrkdwn.plain(f"Warden: {d.root_cause}", 150)}},
        _section(head), _section(mrkdwn.text(d.summary, 2900) or "_no summary_"),
    ]
    if d.evidence:
        blocks.append(_section(_evidence(d)))
    if d.unreadable:
        what = "; ".join(mrkdwn.line(f"{u.where()}: {u.reason}", 160) for u in d.unreadable[:5])
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": mrkdwn.cut(f"Could not read: {what}", 2900)}]})
    if outcomes or d.proposed_actions:
        blocks.append({"type": "divider"})
    if outcomes:
        for i, o in enumerate(outcomes[:MAX_PLANS], 1):
            blocks += _plan_blocks(i, o)
    else:
        for i, a in enumerate(d.proposed_actions[:MAX_PLANS], 1):
            cmds = "\n".join("$ " + shell_command(argv) for argv in a.commands)
            md = f"*{i}. {mrkdwn.line(a.description, 200)}* ({a.reversibility}) — proposed, not carried out"
            blocks.append(_section(md + (f"\n```{mrkdwn.code(cmds, 2000)}```" if cmds else "")))
    hidden = max(len(outcomes or d.proposed_actions) - MAX_PLANS, 0)
    foot = f"run `{d.run_id or '-'}` · {mode} mode · model {mrkdwn.line(d.model, 60)}"
    if hidden:
        foot += f" · {hidden} more plans: `warden runs show {d.run_id}`"
    if note:
        foot = mrkdwn.line(note, 400) + " · " + foot
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": foot}]})
    return blocks


def decided_blocks(blocks: list[dict[str, Any]], approval_id: str, note_md: str) -> list[dict[str, Any]]:
    """``blocks`` (a posted message's, from the interaction payload) with the buttons of
    ``approval_id`` replaced by a context line saying what was decided (``note_md`` is mrkdwn
    Warden wrote, untrusted parts already escaped)."""
    out = []
    for b in blocks:
        if b.get("type") == "actions" and b.get("block_id") == f"plan:{approval_id}":
            out.append({"type": "context", "block_id": f"decided:{approval_id}",
                        "elements": [{"type": "mrkdwn", "text": mrkdwn.cut(note_md, 2900)}]})
        else:
            out.append(b)
    return out
