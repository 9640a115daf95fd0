"""The slack_bolt App: routes Slack's requests to the Responder, and runs it.

Socket Mode (the default: a WebSocket out to Slack with the app-level token, no public URL) or HTTP
mode (Slack POSTs to ``/slack/events``; bolt verifies each request's ``X-Slack-Signature`` with the
signing secret and refuses stale timestamps). Either way the listeners only acknowledge and hand the
work to the Responder's bounded pool, well inside Slack's 3-second limit.

Registered: the ``/warden`` slash command, ``app_mention`` events, the ``warden_approve`` and
``warden_deny`` buttons and the deny-reason modal (``view_submission``).
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import Ack, App, BoltRequest
from slack_bolt.response import BoltResponse

from agent.slackapp.blocks import APPROVE, DENY
from agent.slackapp.client import SlackCredentials, web_client
from agent.slackapp.responder import DENY_VIEW, Responder

__all__ = ["build_app", "dispatch", "run_socket_mode", "socket_mode_handler"]

_MENTION = re.compile(r"<@[A-Z0-9]+>")


def _pressed(body: dict[str, Any]) -> dict[str, Any]:
    msg = body.get("message") or {}
    container = body.get("container") or {}
    return {"user_id": (body.get("user") or {}).get("id", ""),
            "channel": (body.get("channel") or {}).get("id") or container.get("channel_id", ""),
            "message_ts": msg.get("ts") or container.get("message_ts", ""),
            "thread_ts": msg.get("thread_ts") or container.get("thread_ts"),
            "blocks": list(msg.get("blocks") or []), "trigger_id": body.get("trigger_id"),
            "text": str(msg.get("text") or "Warden")}


def build_app(creds: SlackCredentials, responder: Responder, *, socket_mode: bool = False) -> App:
    """The bolt App with Warden's listeners (auth.test is called once, on creation).

    Raises:
        slack_bolt.error.BoltError: Slack (or the emulator) refused the bot token.
    """
    app = App(signing_secret=creds.signing_secret or None, client=web_client(creds),
              request_verification_enabled=not socket_mode, name="warden")

    @app.command("/warden")
    def _command(ack: Ack, command: dict[str, Any]) -> None:
        text = (command.get("text") or "").strip()
        if not text:
            ack("Usage: /warden <question>, e.g. /warden why is job 4242 stuck?")
            return
        ack()
        responder.ask(text, channel=command.get("channel_id", ""), user_id=command.get("user_id", ""))

    @app.event("app_mention")
    def _mention(event: dict[str, Any]) -> None:
        text = _MENTION.sub("", event.get("text") or "").strip()
        responder.ask(text, channel=event.get("channel", ""), user_id=event.get("user", ""),
                      thread_ts=event.get("thread_ts") or event.get("ts"))

    @app.action(APPROVE)
    def _approve(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        responder.press("approve", action.get("value"), **_pressed(body))

    @app.action(DENY)
    def _deny(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        responder.press("deny", action.get("value"), **_pressed(body))

    @app.view(DENY_VIEW)
    def _deny_reason(ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        ack()
        reason = (((view.get("state") or {}).get("values") or {}).get("reason") or {}).get("reason") or {}
        responder.deny_submitted(view.get("private_metadata") or "", str(reason.get("value") or ""),
                                 user_id=(body.get("user") or {}).get("id", ""))

    return app


def dispatch(app: App, body: bytes, headers: dict[str, str], query: str = "") -> BoltResponse:
    """Hand one HTTP request to bolt (signature check, routing, ack) and return its answer."""
    return app.dispatch(BoltRequest(body=body.decode("utf-8", "replace"), query=query, headers=headers))


def socket_mode_handler(app: App, creds: SlackCredentials) -> Any:
    """bolt's Socket Mode handler (slack_sdk's built-in client, through the app's WebClient, so
    WARDEN_SLACK_API_URL applies to apps.connections.open too); ``.connect()`` returns once connected,
    ``.close()`` disconnects."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    return SocketModeHandler(app, creds.app_token)


def run_socket_mode(app: App, creds: SlackCredentials) -> None:
    """Connect to Slack over Socket Mode and serve until interrupted (blocks)."""
    socket_mode_handler(app, creds).start()
