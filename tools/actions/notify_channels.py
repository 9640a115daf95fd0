"""Where notify_owner's messages go: a Slack DM, an e-mail over SMTP, or a webhook.

``NotifyConfig`` is the typed ``[notify]`` table of warden.toml (agent/live/config.py reads the
file; tools/ never does). ``Channels`` sends one message and returns a :class:`Delivery` saying
whether the channel accepted it — that acceptance is what notify_owner's verify checks:

- Slack: ``conversations.open`` with the owner's Slack user id, then ``chat.postMessage`` to that
  DM, through slack_sdk's ``WebClient``; the base URL is ``$WARDEN_SLACK_API_URL`` when set (the
  Slack front end shares it, and tests point it at a local Web API emulator). Accepted = ``ok`` and
  a message ``ts``.
- E-mail: smtplib to the configured relay (STARTTLS and login when configured). Accepted = the
  relay refused no recipient; the Message-ID is kept.
- Webhook: a JSON POST through httpx. Accepted = a 2xx answer.

Secrets are never in the file: the Slack token and the SMTP password are read from the
environment variables the config names.
"""

from __future__ import annotations

import os
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChannelKind", "Contact", "NotifyConfig", "Delivery", "Channels", "SLACK_API_URL_ENV"]

ChannelKind = Literal["slack", "email", "webhook"]
SLACK_API_URL_ENV = "WARDEN_SLACK_API_URL"
_DEFAULT_SLACK_API = "https://slack.com/api/"


class Contact(BaseModel):
    """How to reach one person or team (an entry of ``[notify.directory]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slack: str | None = Field(default=None, pattern=r"^[UW][A-Z0-9]{2,20}$")
    """Slack user id (``U012AB3CD``), as Slack shows it in a profile."""
    email: str | None = Field(default=None, pattern=r"^[^@\s<>,;]{1,64}@[A-Za-z0-9.-]{1,253}$")
    webhook: bool = False
    """Send to the site webhook (``webhook_url``) naming this owner."""


class NotifyConfig(BaseModel):
    """``[notify]`` of warden.toml: the channel order, the channels' settings, the site directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: list[ChannelKind] = Field(default_factory=lambda: ["slack", "email", "webhook"])
    """Preference order: the first channel the owner's contact has is used."""
    directory: dict[str, Contact] = Field(default_factory=dict)
    """Slurm user name (or the owner a namespace label names) -> contact."""
    namespace_owner_label: str = "owner"
    node_owners: dict[str, str] = Field(default_factory=dict)
    """Who runs which hosts: a shell-style pattern of node names (``oss*``, ``slurmctl0[12]``) -> a name in
    ``directory`` (``storage-oncall``); the first matching pattern wins, in the table's order."""
    oncall: str | None = None
    """The name in ``directory`` told about a host no ``node_owners`` pattern matches."""
    """Label of a Kubernetes namespace that names its owner (a directory key)."""
    slack_token_env: str = "WARDEN_SLACK_TOKEN"
    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_from: str = "warden@localhost"
    smtp_starttls: bool = False
    smtp_user: str | None = None
    smtp_password_env: str = "WARDEN_SMTP_PASSWORD"
    webhook_url: str | None = Field(default=None, pattern=r"^https?://")
    timeout_s: float = Field(default=15.0, gt=0, le=300)


class Delivery(BaseModel):
    """What the channel answered for one message."""

    channel: ChannelKind
    recipient: str
    accepted: bool
    detail: str
    """Slack ``ts``, the e-mail's Message-ID, or the webhook's HTTP status; the error when refused."""


class Channels:
    """Sends notifications through the configured channels (the "runner" of notify_owner)."""

    def __init__(self, cfg: NotifyConfig) -> None:
        self.cfg = cfg

    def send(self, channel: ChannelKind, recipient: str, subject: str, text: str) -> Delivery:
        """Send ``text`` to ``recipient`` (Slack user id, e-mail address, or owner name for the webhook).

        Never raises for a channel failure: a refusal or a connection error is ``accepted=False``
        with the reason in ``detail``.
        """
        if channel == "slack":
            return self._slack(recipient, text)
        if channel == "email":
            return self._email(recipient, subject, text)
        return self._webhook(recipient, subject, text)

    def _slack(self, user_id: str, text: str) -> Delivery:
        from slack_sdk import WebClient  # imported when a message is sent, not with the action catalogue
        from slack_sdk.errors import SlackApiError, SlackClientError

        token = os.environ.get(self.cfg.slack_token_env)
        base = os.environ.get(SLACK_API_URL_ENV) or _DEFAULT_SLACK_API
        client = WebClient(token=token, base_url=base.rstrip("/") + "/", timeout=int(self.cfg.timeout_s))
        try:
            dm = client.conversations_open(users=[user_id])
            resp = client.chat_postMessage(channel=dm["channel"]["id"], text=text)
        except SlackApiError as e:
            return Delivery(channel="slack", recipient=user_id, accepted=False,
                            detail=f"Slack refused: {e.response.get('error', 'error')}")
        except (SlackClientError, OSError, KeyError, TypeError) as e:
            return Delivery(channel="slack", recipient=user_id, accepted=False, detail=f"{type(e).__name__}: {e}"[:300])
        ok = bool(resp.get("ok")) and bool(resp.get("ts"))
        return Delivery(channel="slack", recipient=user_id, accepted=ok,
                        detail=f"ts={resp.get('ts')} channel={resp.get('channel')}")

    def _email(self, address: str, subject: str, text: str) -> Delivery:
        c = self.cfg
        if not c.smtp_host:
            return Delivery(channel="email", recipient=address, accepted=False, detail="no [notify] smtp_host configured")
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = c.smtp_from, address, subject
        msg["Message-ID"] = make_msgid(domain=c.smtp_from.rpartition("@")[2] or "localhost")
        msg.set_content(text)
        try:
            with smtplib.SMTP(c.smtp_host, c.smtp_port, timeout=c.timeout_s) as smtp:
                if c.smtp_starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if c.smtp_user:
                    smtp.login(c.smtp_user, os.environ.get(c.smtp_password_env, ""))
                refused = smtp.send_message(msg)
        except (smtplib.SMTPException, OSError) as e:
            return Delivery(channel="email", recipient=address, accepted=False, detail=f"{type(e).__name__}: {e}"[:300])
        return Delivery(channel="email", recipient=address, accepted=not refused,
                        detail=f"Message-ID {msg['Message-ID']}" + (f"; refused {sorted(refused)}" if refused else ""))

    def _webhook(self, owner: str, subject: str, text: str) -> Delivery:
        import httpx

        if not self.cfg.webhook_url:
            return Delivery(channel="webhook", recipient=owner, accepted=False, detail="no [notify] webhook_url configured")
        try:
            r = httpx.post(self.cfg.webhook_url, json={"owner": owner, "subject": subject, "text": text},
                           timeout=self.cfg.timeout_s)
        except httpx.HTTPError as e:
            return Delivery(channel="webhook", recipient=owner, accepted=False, detail=f"{type(e).__name__}: {e}"[:300])
        return Delivery(channel="webhook", recipient=owner, accepted=200 <= r.status_code < 300,
                        detail=f"HTTP {r.status_code}")
