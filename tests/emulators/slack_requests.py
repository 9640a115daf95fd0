"""Slack's requests to an app, signed as Slack signs them: what the emulator "serves" to Warden.

Slack signs every request it sends (docs: "Verifying requests from Slack"): the header
``X-Slack-Request-Timestamp`` and ``X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{ts}:{raw body}"
keyed by the app's signing secret>``. Slash commands and interactions are form-encoded (an
interaction as one ``payload`` field of JSON); Events API callbacks are JSON. The payload shapes
follow Slack's reference for slash commands, ``event_callback`` / ``app_mention`` and
``block_actions`` / ``view_submission``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import httpx

__all__ = ["SlackRequests"]

TEAM = {"id": "T0WARDEN", "domain": "warden-test"}


class SlackRequests:
    """Sends signed requests to an app's request URL (``http://127.0.0.1:PORT/slack/events``).

    Args:
        url: the app's request URL.
        signing_secret: the secret the app verifies with (a wrong one tests refusal).
        emulator: the SlackEmulator whose trigger ids views.open will accept.
    """

    def __init__(self, url: str, signing_secret: str, emulator: Any = None) -> None:
        self.url, self.secret, self.emulator = url, signing_secret, emulator

    def signed_headers(self, body: str, content_type: str, *, ts: int | None = None) -> dict[str, str]:
        """The headers Slack sends with ``body``."""
        stamp = str(ts if ts is not None else int(time.time()))
        sig = hmac.new(self.secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
        return {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={sig}"}

    def _send(self, body: str, content_type: str, **kw: Any) -> httpx.Response:
        return httpx.post(self.url, content=body.encode(), headers=self.signed_headers(body, content_type, **kw),
                          timeout=15)

    def _trigger(self) -> str:
        tid = f"{int(time.time())}.{secrets.randbelow(10**9)}.{secrets.token_hex(8)}"
        if self.emulator is not None:
            self.emulator.trigger_ids.add(tid)
        return tid

    def command(self, text: str, *, user_id: str, channel_id: str = "C0WARDEN", command: str = "/warden",
                **kw: Any) -> httpx.Response:
        """A slash command, form-encoded as Slack sends it."""
        body = urlencode({"token": "deprecated", "team_id": TEAM["id"], "team_domain": TEAM["domain"],
                          "channel_id": channel_id, "channel_name": "oncall", "user_id": user_id,
                          "user_name": user_id.lower(), "command": command, "text": text, "api_app_id": "A0WARDEN",
                          "response_url": "http://127.0.0.1:9/commands/T0WARDEN/1/x", "trigger_id": self._trigger()})
        return self._send(body, "application/x-www-form-urlencoded", **kw)

    def mention(self, text: str, *, user_id: str, channel: str = "C0WARDEN", ts: str | None = None) -> httpx.Response:
        """An Events API ``app_mention`` callback (JSON)."""
        ts = ts or f"{time.time():.6f}"
        body = json.dumps({"token": "deprecated", "team_id": TEAM["id"], "api_app_id": "A0WARDEN",
                           "event": {"type": "app_mention", "user": user_id, "text": f"<@U0WARDEN> {text}", "ts": ts,
                                     "channel": channel, "event_ts": ts},
                           "type": "event_callback", "event_id": f"Ev{secrets.token_hex(5).upper()}",
                           "event_time": int(time.time()), "authorizations": [{"team_id": TEAM["id"],
                                                                               "user_id": "U0WARDEN", "is_bot": True}]})
        return self._send(body, "application/json")

    def press(self, message: dict[str, Any], action_id: str, *, user_id: str, **kw: Any) -> httpx.Response:
        """A ``block_actions`` payload for pressing the button ``action_id`` of a posted ``message``
        (as the emulator recorded it: channel, ts, blocks, thread_ts). The button's value is taken
        from the message; ``value=`` overrides it (a forged button)."""
        button, block_id = None, None
        for b in message.get("blocks") or []:
            for el in b.get("elements", []) if b.get("type") == "actions" else []:
                if el.get("action_id") == action_id and (kw.get("block_id") in (None, b.get("block_id"))):
                    button, block_id = el, b.get("block_id")
                    break
            if button:
                break
        if button is None:
            raise AssertionError(f"no {action_id} button in the message")
        msg = {"type": "message", "ts": message["ts"], "text": message.get("text"), "blocks": message.get("blocks"),
               "user": "U0WARDEN", "bot_id": "B0WARDEN"}
        if message.get("thread_ts"):
            msg["thread_ts"] = message["thread_ts"]
        payload = {"type": "block_actions", "user": {"id": user_id, "username": user_id.lower(), "team_id": TEAM["id"]},
                   "api_app_id": "A0WARDEN", "token": "deprecated", "team": TEAM, "trigger_id": self._trigger(),
                   "container": {"type": "message", "message_ts": message["ts"], "channel_id": message["channel"],
                                 "is_ephemeral": False},
                   "channel": {"id": message["channel"], "name": "oncall"}, "message": msg,
                   "response_url": "http://127.0.0.1:9/actions/T0WARDEN/1/x",
                   "actions": [{"action_id": action_id, "block_id": block_id, "type": "button",
                                "value": kw.get("value", button.get("value")), "text": button.get("text"),
                                "action_ts": f"{time.time():.6f}"}]}
        return self._send(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded",
                          **{k: v for k, v in kw.items() if k == "ts"})

    def submit_view(self, view: dict[str, Any], values: dict[str, dict[str, str]], *, user_id: str) -> httpx.Response:
        """A ``view_submission`` of a modal Warden opened, with ``values`` as block_id -> action_id -> text."""
        state = {"values": {b: {a: {"type": "plain_text_input", "value": v} for a, v in acts.items()}
                            for b, acts in values.items()}}
        payload = {"type": "view_submission", "team": TEAM, "api_app_id": "A0WARDEN", "token": "deprecated",
                   "trigger_id": self._trigger(),
                   "user": {"id": user_id, "username": user_id.lower(), "team_id": TEAM["id"]},
                   "view": {**view, "id": "V00000001", "state": state, "team_id": TEAM["id"]}}
        return self._send(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")
