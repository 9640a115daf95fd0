"""Slack credentials and the Web API client, from the environment (never from a file).

==============================  =====================================================
``WARDEN_SLACK_TOKEN``          the bot token (``xoxb-…``); notify_owner uses the same
``WARDEN_SLACK_SIGNING_SECRET`` HTTP mode: the app's signing secret (request signatures)
``WARDEN_SLACK_APP_TOKEN``      Socket Mode: the app-level token (``xapp-…``)
``WARDEN_SLACK_API_URL``        the Web API base URL (default Slack's); tests point it at
                                a local emulator
==============================  =====================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from slack_sdk import WebClient

from tools.actions.notify_channels import SLACK_API_URL_ENV
from tools.errors import ConfigError

__all__ = ["SlackCredentials", "DEFAULT_API_URL", "web_client"]

DEFAULT_API_URL = "https://slack.com/api/"


@dataclass(frozen=True)
class SlackCredentials:
    """What the Slack app needs to talk to Slack."""

    bot_token: str
    signing_secret: str | None
    app_token: str | None
    api_url: str

    @classmethod
    def from_env(cls, *, http: bool) -> SlackCredentials:
        """Read the variables above.

        Raises:
            ConfigError: naming the variable that is missing for the chosen mode.
        """
        token = os.environ.get("WARDEN_SLACK_TOKEN", "")
        secret = os.environ.get("WARDEN_SLACK_SIGNING_SECRET") or None
        app_token = os.environ.get("WARDEN_SLACK_APP_TOKEN") or None
        if not token:
            raise ConfigError("WARDEN_SLACK_TOKEN is not set: give the Slack app's bot token (xoxb-...)")
        if http and not secret:
            raise ConfigError("WARDEN_SLACK_SIGNING_SECRET is not set: HTTP mode verifies every request's "
                              "signature with the app's signing secret")
        if not http and not (app_token or "").startswith("xapp-"):
            raise ConfigError("WARDEN_SLACK_APP_TOKEN is not set to an app-level token (xapp-...): Socket Mode "
                              "needs one (or use --http with WARDEN_SLACK_SIGNING_SECRET)")
        api = os.environ.get(SLACK_API_URL_ENV) or DEFAULT_API_URL
        return cls(bot_token=token, signing_secret=secret, app_token=app_token, api_url=api.rstrip("/") + "/")


def web_client(creds: SlackCredentials | None = None) -> WebClient:
    """A slack_sdk WebClient with the bot token and base URL (``creds`` or the environment).

    Raises:
        ConfigError: WARDEN_SLACK_TOKEN is not set.
    """
    if creds is None:
        token = os.environ.get("WARDEN_SLACK_TOKEN", "")
        if not token:
            raise ConfigError("WARDEN_SLACK_TOKEN is not set: Warden cannot post to Slack")
        base = (os.environ.get(SLACK_API_URL_ENV) or DEFAULT_API_URL).rstrip("/") + "/"
        return WebClient(token=token, base_url=base, timeout=15)
    return WebClient(token=creds.bot_token, base_url=creds.api_url, timeout=15)
