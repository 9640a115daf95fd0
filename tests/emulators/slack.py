"""A local Slack Web API emulator: records what Warden posts, answers as Slack does.

Slack itself cannot be reached from tests, so this serves the Web API methods Warden calls, over
HTTP on 127.0.0.1, with Slack's wire format (form or JSON bodies in, ``{"ok": ...}`` JSON out,
errors as ``{"ok": false, "error": "..."}``)::

    POST /api/auth.test            {"ok": true, "user_id": ..., "team_id": ...}
    POST /api/conversations.open   users=U…  -> {"ok": true, "channel": {"id": "D…"}}
    POST /api/chat.postMessage     channel, text, blocks, thread_ts -> {"ok": true, "channel": …, "ts": "…", ...}
    POST /api/chat.update          channel, ts, text, blocks -> {"ok": true, "channel": …, "ts": …}
    POST /api/views.open           trigger_id, view -> {"ok": true, "view": {"id": "V…", ...}}
    POST /api/apps.connections.open   (app-level token) -> {"ok": true, "url": "ws://…"} (Socket Mode;
                                   tests/emulators/slack_socket.py serves that URL)
    POST /api/files.getUploadURLExternal  filename, length -> {"ok": true, "upload_url": …, "file_id": "F…"}
    POST /upload/F…                the file's bytes (length as announced) -> 200 "OK - <length>"
    POST /api/files.completeUploadExternal  files=[{"id", "title"}], channel_id, thread_ts,
                                   initial_comment -> {"ok": true, "files": [{"id", "title", "name"}]}

A request without a ``Bearer`` token gets ``not_authed``; an unknown user ``user_not_found``; an
unknown channel ``channel_not_found``; chat.update of a message that was never posted
``message_not_found``; views.open with a trigger id Slack did not issue (one per press sent)
``invalid_trigger_id``. Point slack_sdk at it with ``WARDEN_SLACK_API_URL`` (or
``WebClient(base_url=emulator.api_url)``). Reusable by any front end (Slack app tests included):
``messages`` holds every chat.postMessage with its channel, user, text, blocks and thread_ts;
``updates`` every chat.update; ``views`` every views.open; ``uploads`` every completed file upload
(files_upload_v2's three steps; an upload never sent, of another length, or completed twice is
refused as Slack refuses it).

The other direction — Slack calling the app — is in tests/emulators/slack_requests.py: slash
commands, app_mention events and block_actions / view_submission payloads, signed as Slack signs
them (``X-Slack-Signature: v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

__all__ = ["SlackEmulator"]


def _json_arg(value: Any) -> Any:
    """Form-encoded calls carry blocks/views as JSON strings; JSON calls as objects."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class SlackEmulator:
    """The emulated workspace: known users, opened DMs, and every message posted.

    Args:
        users: Slack user ids that exist (conversations.open for any other is ``user_not_found``).
        token: the bot token expected in ``Authorization: Bearer``; None accepts any token.
    """

    def __init__(self, users: set[str] | None = None, *, token: str | None = None,
                 channels: set[str] | None = None, app_token: str | None = None, socket_url: str | None = None,
                 port: int = 0) -> None:
        self.users = set(users or {"U012AB3CD"})
        self.token = token
        self.channels = set(channels or {"C0WARDEN"})
        self.app_token, self.socket_url = app_token, socket_url
        """Socket Mode: the app-level token apps.connections.open accepts, and the URL it hands out."""
        """Public channel ids that exist (chat.postMessage to one is accepted)."""
        self.updates: list[dict[str, Any]] = []
        """Each accepted chat.update: ``{"channel", "ts", "text", "blocks"}``."""
        self.views: list[dict[str, Any]] = []
        """Each accepted views.open: ``{"trigger_id", "view"}``."""
        self.trigger_ids: set[str] = set()
        """Trigger ids handed out with the interactions sent (each valid once)."""
        self.dms: dict[str, str] = {}
        """DM channel id -> user id."""
        self.messages: list[dict[str, Any]] = []
        """Each chat.postMessage: ``{"channel", "user", "text", "ts", "blocks"}``."""
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.uploads: list[dict[str, Any]] = []
        """Each files.completeUploadExternal: ``{"channel", "thread_ts", "comment", "files": [{"id", "title",
        "filename", "data"}]}`` (``data`` the bytes uploaded)."""
        self._pending: dict[str, dict[str, Any]] = {}
        """file id -> {"filename", "length", "data"} between getUploadURLExternal and completion."""
        self._lock = threading.Lock()
        self._seq = self._files = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
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
        if method == "apps.connections.open":
            if not self.app_token or auth != f"Bearer {self.app_token}":
                return {"ok": False, "error": "invalid_auth" if auth else "not_authed"}
            return {"ok": True, "url": self.socket_url}
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
                if user is None and channel in self.channels:
                    user = ""
                if user is None:
                    return {"ok": False, "error": "channel_not_found"}
                if not args.get("text") and not args.get("blocks"):
                    return {"ok": False, "error": "no_text"}
                self._seq += 1
                ts = f"{int(time.time())}.{self._seq:06d}"
                msg = {"channel": channel, "user": user, "text": args.get("text"), "ts": ts,
                       "blocks": _json_arg(args.get("blocks")), "thread_ts": args.get("thread_ts"),
                       "at": time.monotonic()}
                self.messages.append(msg)
                return {"ok": True, "channel": channel, "ts": ts,
                        "message": {"type": "message", "text": args.get("text"), "user": "U0WARDEN", "ts": ts,
                                    "bot_id": "B0WARDEN"}}
            if method == "chat.update":
                return self._update(args)
            if method == "files.getUploadURLExternal":
                return self._upload_url(args)
            if method == "files.completeUploadExternal":
                return self._complete(args)
            if method == "views.open":
                trigger = str(args.get("trigger_id") or "")
                if trigger not in self.trigger_ids:
                    return {"ok": False, "error": "invalid_trigger_id"}
                self.trigger_ids.discard(trigger)
                view = _json_arg(args.get("view")) or {}
                self.views.append({"trigger_id": trigger, "view": view})
                return {"ok": True, "view": {"id": f"V{len(self.views):08d}", **view}}
        return {"ok": False, "error": "unknown_method"}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
        msg = next((m for m in self.messages if m["channel"] == channel and m["ts"] == ts), None)
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg["text"], msg["blocks"] = args.get("text", msg["text"]), _json_arg(args.get("blocks")) or msg["blocks"]
        self.updates.append({"channel": channel, "ts": ts, "text": args.get("text"), "blocks": msg["blocks"]})
        return {"ok": True, "channel": channel, "ts": ts, "text": msg["text"]}

    def _upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        name, length = str(args.get("filename") or ""), str(args.get("length") or "")
        if not name or not length.isdigit() or int(length) <= 0:
            return {"ok": False, "error": "invalid_arguments"}
        self._files += 1
        fid = f"F{self._files:08d}"
        self._pending[fid] = {"filename": name, "length": int(length), "data": None}
        port = self._server.server_address[1]
        return {"ok": True, "upload_url": f"http://127.0.0.1:{port}/upload/{fid}", "file_id": fid}

    def receive_upload(self, fid: str, data: bytes) -> tuple[int, str]:
        """Step 2 of an upload: the bytes for ``fid`` (HTTP status, body)."""
        with self._lock:
            f = self._pending.get(fid)
            if f is None:
                return 404, "file not found"
            if len(data) != f["length"]:
                return 400, f"length {len(data)} is not the announced {f['length']}"
            f["data"] = data
            return 200, f"OK - {len(data)}"

    def _complete(self, args: dict[str, Any]) -> dict[str, Any]:
        items = _json_arg(args.get("files"))
        if not isinstance(items, list) or not items:
            return {"ok": False, "error": "invalid_arguments"}
        channel = str(args.get("channel_id") or "")
        if channel and channel not in self.channels and channel not in self.dms:
            return {"ok": False, "error": "channel_not_found"}
        done = []
        for it in items:
            f = self._pending.get(str(it.get("id") if isinstance(it, dict) else ""))
            if f is None or f["data"] is None:
                return {"ok": False, "error": "file_not_found" if f is None else "file_upload_not_complete"}
            done.append({"id": it["id"], "title": it.get("title") or f["filename"], "filename": f["filename"],
                         "data": f["data"]})
        for it in done:
            del self._pending[it["id"]]
        self.uploads.append({"channel": channel or None, "thread_ts": args.get("thread_ts"),
                             "comment": args.get("initial_comment"), "files": done})
        return {"ok": True, "files": [{"id": f["id"], "title": f["title"], "name": f["filename"]} for f in done]}

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The replies posted in the thread under message ``ts`` of ``channel``, oldest first."""
        return [m for m in list(self.messages) if m["channel"] == channel and m.get("thread_ts") == ts]

    def wait_for(self, pred: Any, timeout_s: float = 30.0) -> dict[str, Any]:
        """The first posted message for which ``pred(message)`` holds, waiting up to ``timeout_s``.

        Raises:
            AssertionError: none did in time (naming the messages seen).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for m in list(self.messages):
                if pred(m):
                    return m
            time.sleep(0.05)
        raise AssertionError(f"no matching Slack message within {timeout_s} s; saw {[m['text'] for m in self.messages]}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        emu = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                # Not Slack's: what was posted, for a person or a script driving the emulator by hand
                # (tests/emulators/slack_cli.py press).
                if self.path != "/_emulator/messages":
                    self.send_error(404)
                    return
                data = json.dumps([{k: v for k, v in m.items() if k != "at"} for m in list(emu.messages)]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                n = int(self.headers.get("Content-Length") or 0)
                if self.path.startswith("/upload/"):  # step 2 of an upload: raw bytes, plain-text answer
                    status, text = emu.receive_upload(self.path.rsplit("/", 1)[-1], self.rfile.read(n) if n else b"")
                    body = text.encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
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
