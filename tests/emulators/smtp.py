"""A real local SMTP server (aiosmtpd) that keeps every message it accepts, for tests."""

from __future__ import annotations

import socket
from email import message_from_bytes, policy
from email.message import EmailMessage

from aiosmtpd.controller import Controller

__all__ = ["SmtpSink"]


class _Keep:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        msg = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        self.messages.append((list(envelope.rcpt_tos), msg))  # type: ignore[arg-type]
        return "250 Message accepted for delivery"


class SmtpSink:
    """aiosmtpd on 127.0.0.1 (a free port); ``messages`` holds (recipients, parsed message)."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._keep = _Keep()
        self._ctl = Controller(self._keep, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[tuple[list[str], EmailMessage]]:
        return self._keep.messages

    def __enter__(self) -> SmtpSink:
        self._ctl.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctl.stop()
