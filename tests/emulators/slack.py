"""A local Slack Web API emulator: records what Warden posts, answers as Slack does.

Slack itself cannot be reached from tests, so this serves the Web API methods Warden calls, over
HTTP on 127.0.0.1, with Slack's wire format (form or JSON bodies in, ``{"ok": ...}`` JSON out,
errors as ``{"ok": false, "error": "..."}``)::

    POST /api/auth.test            {"ok": true, "user_id": ..., "team_id": ...}
    POST /api/conversations.open   users=U…  -> {"ok": true, "channel": {"id": "D…"}}
    POST /api/chat.postMessage     channel, text -> {"ok": true, "channel": "D…", "ts": "…", "message": {...}}

A request without a ``Bearer`` token gets ``not_authed``; an unknown user ``user_not_found``; an
unknown channel ``channel_not_found``. Point slack_sdk at it with ``WARDEN_SLACK_API_URL`` (or
``WebClient(base_url=emulator.api_url)``). Reusable by any front end (Slack app tests included):
``messages`` holds every chat.postMessage with its channel, user and text.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

__all__ = ["SlackEmulator"]


class SlackEmulator:
    """The emulated workspace: known users, opened DMs, and every message posted.

    Args:
        users: Slack user ids that exist (conversations.open for any other is ``user_not_found``).
        token: the bot token expected in ``Authorization: Bearer``; None accepts any token.
    """

    def __init__(self, users: set[str] | None = None, *, token: str | None = None) -> None:
        self.users = set(users or {"U012AB3CD"})
        self.token = token
        self.dms: dict[str, str] = {}
        """DM channel id -> user id."""
        self.messages: list[dict[str, Any]] = []
        """Each chat.postMessage: ``{"channel", "user", "text", "ts", "blocks"}``."""
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._seq = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def api_url(self) -> str:
        """Base URL for slack_sdk (``http://127.0.0.1:PORT/api/``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def __enter__(self) -> SlackEmulator:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, args: dict[str, Any], auth: str | None) -> dict[str, Any]:
        """Slack's answer to one Web API call."""
        self.calls.append((method, args))
        if not auth or not auth.startswith("Bearer ") or (self.token and auth != f"Bearer {self.token}"):
            return {"ok": False, "error": "not_authed" if not auth else "invalid_auth"}
        with self._lock:
            if method == "auth.test":
                return {"ok": True, "url": "https://warden-test.slack.com/", "team": "warden-test", "user": "warden",
                        "team_id": "T0WARDEN", "user_id": "U0WARDEN", "bot_id": "B0WARDEN"}
            if method == "conversations.open":
                user = str(args.get("users") or "").split(",")[0]
                if user not in self.users:
                    return {"ok": False, "error": "user_not_found"}
                cid = next((c for c, u in self.dms.items() if u == user), None) or f"D{len(self.dms) + 1:08d}"
                self.dms[cid] = user
                return {"ok": True, "channel": {"id": cid}}
            if method == "chat.postMessage":
                channel = str(args.get("channel") or "")
                user = self.dms.get(channel) or (channel if channel in self.users else None)
                if user is None:
                    return {"ok": False, "error": "channel_not_found"}
                if not args.get("text") and not args.get("blocks"):
                    return {"ok": False, "error": "no_text"}
                self._seq += 1
                ts = f"{int(time.time())}.{self._seq:06d}"
                msg = {"channel": channel, "user": user, "text": args.get("text"), "ts": ts,
                       "blocks": args.get("blocks")}
                self.messages.append(msg)
                return {"ok": True, "channel": channel, "ts": ts,
                        "message": {"type": "message", "text": args.get("text"), "user": "U0WARDEN", "ts": ts,
                                    "bot_id": "B0WARDEN"}}
        return {"ok": False, "error": "unknown_method"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        emu = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode("utf-8") if n else ""
                if (self.headers.get("Content-Type") or "").startswith("application/json"):
                    args = json.loads(raw or "{}")
                else:
                    args = {k: v[0] for k, v in parse_qs(raw).items()}
                method = self.path.split("?", 1)[0].rsplit("/", 1)[-1]
                doc = emu.answer(method, args, self.headers.get("Authorization"))
                data = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
