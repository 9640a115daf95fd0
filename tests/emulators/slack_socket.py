"""Slack's Socket Mode side, emulated: a plain WebSocket server on 127.0.0.1 that says ``hello``,
pushes envelopes (slash commands, events, interactions) to the app and collects its acks.

The app asks the Web API emulator's ``apps.connections.open`` (with the app-level ``xapp-`` token)
for a URL and connects to it; slack_sdk's built-in client speaks plain WebSocket to any port but 443
(its documented testing path), so no TLS is involved. Frames follow RFC 6455 (client frames are
masked; text, ping/pong, close). Envelopes are Slack's: ``{"envelope_id", "type":
"slash_commands" | "events_api" | "interactive", "payload", "accepts_response_payload"}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time
import uuid
from typing import Any

__all__ = ["SocketModeServer"]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


def _read_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _read_frame(conn: socket.socket) -> tuple[int, bytes]:
    b0, b1 = _read_exact(conn, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", _read_exact(conn, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", _read_exact(conn, 8))[0]
    mask = _read_exact(conn, 4) if b1 & 0x80 else b"\0\0\0\0"
    data = bytes(c ^ mask[i % 4] for i, c in enumerate(_read_exact(conn, n)))
    return b0 & 0x0F, data


class SocketModeServer:
    """One Socket Mode endpoint; ``url`` is what apps.connections.open hands out."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._conn: socket.socket | None = None
        self._send_lock = threading.Lock()
        self.acks: dict[str, Any] = {}
        """envelope_id -> the ack's payload (None when the ack carried none)."""
        self.connected = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """``ws://127.0.0.1:PORT/link/?ticket=...``."""
        return f"ws://127.0.0.1:{self._sock.getsockname()[1]}/link/?ticket={uuid.uuid4()}&app_id=A0WARDEN"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        req = b""
        while b"\r\n\r\n" not in req:
            req += conn.recv(4096)
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (ln.partition(":") for ln in req.decode().split("\r\n")[1:] if ":" in ln)}
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + _GUID).encode()).digest()).decode()
        conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
        self._conn = conn
        self._send({"type": "hello", "num_connections": 1, "debug_info": {"host": "emulator"},
                    "connection_info": {"app_id": "A0WARDEN"}})
        self.connected.set()
        try:
            while True:
                op, data = _read_frame(conn)
                if op == 0x8:
                    return
                if op == 0x9:
                    with self._send_lock:
                        conn.sendall(_frame(data, 0xA))
                elif op == 0x1:
                    doc = json.loads(data)
                    if "envelope_id" in doc:
                        self.acks[doc["envelope_id"]] = doc.get("payload")
        except (ConnectionError, OSError):
            return

    def _send(self, doc: dict[str, Any]) -> None:
        assert self._conn is not None
        with self._send_lock:
            self._conn.sendall(_frame(json.dumps(doc).encode()))

    def push(self, kind: str, payload: dict[str, Any], timeout_s: float = 20.0) -> Any:
        """Send one envelope (``slash_commands``, ``events_api`` or ``interactive``) and wait for its ack.

        Raises:
            AssertionError: no ack within ``timeout_s``.
        """
        assert self.connected.wait(timeout_s), "the app never connected"
        eid = str(uuid.uuid4())
        self._send({"envelope_id": eid, "type": kind, "payload": payload, "accepts_response_payload": kind != "events_api"})
        deadline = time.monotonic() + timeout_s
        while eid not in self.acks:
            if time.monotonic() > deadline:
                raise AssertionError(f"no ack for envelope {eid} ({kind})")
            time.sleep(0.02)
        return self.acks[eid]

    def close(self) -> None:
        """Stop listening and drop the connection."""
        self._sock.close()
        if self._conn is not None:
            self._conn.close()
