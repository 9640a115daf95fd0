"""What the Slack app does for a question, a mention and a button press (bolt only routes here).

A question (``/warden <question>`` or ``@warden …``) is answered in a thread: the investigation runs
on the bounded worker pool (agent/runbooks/pool.py) and its Diagnosis is posted as Block Kit.

A press of Approve is authorised by the Slack user id Slack verified (the request signature, or the
Socket Mode connection), mapped to an approver name by ``slack_approvers`` in config.yaml; an
unmapped user acts as ``slack:<id>``, which no approver list names, so the approval store refuses
(and audits) it. The store also refuses the requester approving their own irreversible action, an
expired request and a second press. A refusal is posted in the message's thread; an approval is
executed through agent/runbooks/investigate.execute_approval (policy re-decided, approval consumed
once, verify, audit) and the message's buttons are replaced by what was decided (chat.update).
Deny opens a modal (views.open) asking why; the reason goes to the audit log with the denial.
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from agent.approvals import ApprovalError, ApprovalExpired
from agent.autonomy import Mode
from agent.runbooks.investigate import AUDIT_LOCK, execute_approval, investigate
from agent.runbooks.pool import BoundedPool
from agent.runbooks.target import Target
from agent.settings import WardenSettings
from agent.slackapp import mrkdwn
from agent.slackapp.blocks import decided_blocks, parse_value
from agent.slackapp.images import share_report
from agent.slackapp.poster import SlackPoster
from gateway.config import BUILTIN_MODEL
from tools.errors import WardenError

__all__ = ["Responder", "DENY_VIEW", "mention"]

log = logging.getLogger("warden.slack")
DENY_VIEW = "warden_deny_reason"
"""callback_id of the modal that asks why a plan is denied."""
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_ICON = {"executed": ":white_check_mark:", "dry_run": ":information_source:", "failed": ":x:"}


def mention(user_id: str) -> str:
    """``<@U…>`` for a well-formed Slack user id, else the id shown as escaped text."""
    return f"<@{user_id}>" if _USER_ID.match(user_id) else mrkdwn.line(user_id, 40)


class Responder:
    """The Slack app's behaviour over one target.

    Args:
        target: what questions are answered about (live cluster or a recording).
        poster: Warden's Slack poster.
        pool: the bounded pool investigations and executions run on.
        mode: autonomy mode for questions asked in Slack (capped by config.yaml's).
        model: gateway model alias (the built-in model by default: no LLM call).
        settings: loads config.yaml (read per request, so approver changes apply at once).
        images: after each answer, upload the report's heat map and timeline into its thread
            (agent/slackapp/images.py).
    """

    def __init__(self, target: Target, poster: SlackPoster, *, pool: BoundedPool, mode: Mode = "recommend",
                 model: str = BUILTIN_MODEL, settings: Callable[[], WardenSettings] = WardenSettings.load,
                 images: bool = True) -> None:
        self.target, self.poster, self.pool, self.mode, self.model = target, poster, pool, mode, model
        self.settings, self.images = settings, images
        self._pressed: OrderedDict[str, tuple[str, str, list[dict[str, Any]], str]] = OrderedDict()

    def _who(self, settings: WardenSettings, user_id: str) -> str:
        return settings.slack_approvers.get(user_id) or f"slack:{user_id}"

    def _run(self, channel: str, thread_ts: str | None, fn: Callable[..., None], *args: Any) -> None:
        if self.pool.submit(self._guarded, channel, thread_ts, fn, *args) is None:
            self.poster.say(channel, ":hourglass: Warden is busy with other investigations; try again in a few "
                            "minutes.", thread_ts=thread_ts)

    def _guarded(self, channel: str, thread_ts: str | None, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except WardenError as e:
            self.poster.say(channel, f":warning: {mrkdwn.line(str(e), 600)}", thread_ts=thread_ts)
        except Exception as e:  # noqa: BLE001 - a bug must reach the thread and the log, not vanish
            log.exception("Slack handler failed")
            self.poster.say(channel, f":x: internal error ({type(e).__name__}); see Warden's log",
                            thread_ts=thread_ts)
            raise

    # ---- questions ---------------------------------------------------------------------------

    def ask(self, question: str, *, channel: str, user_id: str, thread_ts: str | None = None) -> None:
        """Answer ``question`` in a thread (a new one under a short parent message when ``thread_ts`` is None)."""
        question = " ".join(question.split())[:2000] or (self.target.default_question() or "")
        if thread_ts is None:
            thread_ts = self.poster.say(channel, f"{mention(user_id)} asked: {mrkdwn.line(question, 500)}")
        self._run(channel, thread_ts, self._answer, question, channel, user_id, thread_ts)

    def _answer(self, question: str, channel: str, user_id: str, thread_ts: str) -> None:
        from agent.diagnose import DEFAULT_QUESTION

        settings = self.settings()
        inv = investigate(self.target, question or DEFAULT_QUESTION, settings=settings,
                          requester=self._who(settings, user_id), mode=self.mode, model=self.model)
        self.poster.post_investigation(channel, inv, thread_ts=thread_ts, note=f"asked by {user_id}")
        if self.images:
            share_report(self.poster, channel, thread_ts, inv)

    # ---- buttons -----------------------------------------------------------------------------

    def _remember(self, aid: str, channel: str, ts: str, blocks: list[dict[str, Any]], text: str) -> None:
        self._pressed[aid] = (channel, ts, blocks, text)
        while len(self._pressed) > 256:
            self._pressed.popitem(last=False)

    def _decided(self, aid: str, note_md: str) -> None:
        if aid in self._pressed:
            channel, ts, blocks, text = self._pressed[aid]
            new = decided_blocks(blocks, aid, note_md)
            self.poster.update(channel, ts, new, text=text)  # the notification text stays the Diagnosis'
            self._pressed[aid] = (channel, ts, new, text)

    def press(self, action: str, value: str | None, *, user_id: str, channel: str, message_ts: str,
              thread_ts: str | None, blocks: list[dict[str, Any]], trigger_id: str | None = None,
              text: str = "Warden") -> None:
        """Handle one press of Approve (``approve``) or Deny (``deny``) on a posted plan."""
        thread = thread_ts or message_ts
        v = parse_value(value)
        if v is None:
            self.poster.say(channel, ":no_entry: Refused: that button does not carry a Warden approval.", thread_ts=thread)
            return
        self._remember(v["approval_id"], channel, message_ts, blocks, text)
        if action == "deny" and trigger_id:
            meta = json.dumps({**v, "channel": channel, "thread": thread})
            self.poster.open_view(trigger_id, _deny_view(v["approval_id"], meta))
            return
        fn = self._approve if action == "approve" else self._deny
        self._run(channel, thread, fn, v["approval_id"], v["plan_hash"], user_id, channel, thread, "")

    def deny_submitted(self, private_metadata: str, reason: str, *, user_id: str) -> None:
        """The Deny modal was submitted: deny with the typed reason."""
        meta = json.loads(private_metadata or "{}")
        self._run(meta["channel"], meta["thread"], self._deny, meta["approval_id"], meta["plan_hash"], user_id,
                  meta["channel"], meta["thread"], reason)

    def _refused(self, e: ApprovalError, aid: str, user_id: str, channel: str, thread: str) -> None:
        self.poster.say(channel, f":no_entry: Refused for {mention(user_id)}: {mrkdwn.line(str(e), 500)}",
                        thread_ts=thread)
        if isinstance(e, ApprovalExpired):
            self._decided(aid, f":hourglass: Expired: approval `{aid}` can no longer be used; ask again.")

    def _approve(self, aid: str, plan_hash: str, user_id: str, channel: str, thread: str, _reason: str) -> None:
        settings = self.settings()
        who = self._who(settings, user_id)
        store = settings.open_approvals(settings.open_audit())
        try:
            with AUDIT_LOCK:
                store.approve(aid, who, plan_hash)
        except ApprovalError as e:
            self._refused(e, aid, user_id, channel, thread)
            return
        try:
            out = execute_approval(self.target, settings, aid)
        except ApprovalError as e:
            self._refused(e, aid, user_id, channel, thread)
            return
        icon = _ICON.get(out.status, ":warning:")
        verify = f"\nverify: {mrkdwn.line(out.verification.observed, 400)}" if out.verification else ""
        self.poster.say(channel, f"{icon} Approved by {mention(user_id)} ({mrkdwn.line(who, 60)}): "
                        f"{mrkdwn.line(out.message, 800)}{verify}", thread_ts=thread)
        self._decided_outcome(aid, icon, user_id, who, out.status)

    def _decided_outcome(self, aid: str, icon: str, user_id: str, who: str, status: str) -> None:
        self._decided(aid, f"{icon} Approved by {mention(user_id)} ({mrkdwn.line(who, 60)}): {status}")

    def _deny(self, aid: str, plan_hash: str, user_id: str, channel: str, thread: str, reason: str) -> None:
        settings = self.settings()
        who = self._who(settings, user_id)
        store = settings.open_approvals(settings.open_audit())
        why = " ".join(reason.split())[:300] or f"denied in Slack by {who}"
        try:
            req = store.get(aid)
            if req.plan_hash != plan_hash:
                raise ApprovalError(f"approval {aid}: the button is for another plan")
            with AUDIT_LOCK:
                store.deny(aid, who, why)
        except ApprovalError as e:
            self._refused(e, aid, user_id, channel, thread)
            return
        self.poster.say(channel, f":no_entry_sign: Denied by {mention(user_id)} ({mrkdwn.line(who, 60)}): "
                        f"{mrkdwn.line(why, 300)}", thread_ts=thread)
        self._decided(aid, f":no_entry_sign: Denied by {mention(user_id)}: {mrkdwn.line(why, 200)}")


def _deny_view(aid: str, meta: str) -> dict[str, Any]:
    return {"type": "modal", "callback_id": DENY_VIEW, "private_metadata": meta,
            "title": {"type": "plain_text", "text": "Deny plan"},
            "submit": {"type": "plain_text", "text": "Deny"}, "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [{"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": f"Why deny {aid}?"},
                        "element": {"type": "plain_text_input", "action_id": "reason", "max_length": 300}}]}
