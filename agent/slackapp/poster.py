"""Warden's own Slack posts: an investigation as Block Kit, thread replies, message updates.

Everything Warden says in Slack goes through :class:`SlackPoster` (slack_sdk's WebClient); a model
never posts. A refused Web API call is a :class:`~tools.errors.WardenError` naming the method and
Slack's error string.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from agent.runbooks.investigate import Investigation
from agent.slackapp import mrkdwn
from agent.slackapp.blocks import diagnosis_blocks, fallback_text
from tools.errors import WardenError

__all__ = ["SlackPostError", "SlackPoster"]


class SlackPostError(WardenError):
    """Slack refused a Web API call (``str(err)`` names the method and Slack's error)."""


class SlackPoster:
    """Posts through one WebClient (base URL from WARDEN_SLACK_API_URL)."""

    def __init__(self, client: WebClient) -> None:
        self.client = client

    def _call(self, method: str, **args: Any) -> dict[str, Any]:
        try:
            resp = self.client.api_call(method, json=args)
        except SlackApiError as e:
            raise SlackPostError(f"Slack {method}: {e.response.get('error', 'error')}") from None
        except (SlackClientError, OSError) as e:
            raise SlackPostError(f"Slack {method}: {type(e).__name__}: {e}"[:300]) from None
        return dict(resp.data) if isinstance(resp.data, dict) else {}

    def post_investigation(self, channel: str, inv: Investigation, *, thread_ts: str | None = None,
                           note: str | None = None) -> str:
        """Post the Diagnosis and its plans (Approve / Deny on each plan awaiting approval); returns the ts."""
        args: dict[str, Any] = {"channel": channel, "text": fallback_text(inv.diagnosis),
                                "blocks": diagnosis_blocks(inv.diagnosis, inv.outcomes, mode=inv.mode, note=note),
                                "unfurl_links": False, "unfurl_media": False}
        if thread_ts:
            args["thread_ts"] = thread_ts
        return str(self._call("chat.postMessage", **args).get("ts", ""))

    def say(self, channel: str, text_md: str, *, thread_ts: str | None = None) -> str:
        """Post ``text_md`` (mrkdwn Warden wrote; untrusted parts already escaped); returns the ts."""
        args: dict[str, Any] = {"channel": channel, "text": mrkdwn.cut(text_md, 3900), "unfurl_links": False}
        if thread_ts:
            args["thread_ts"] = thread_ts
        return str(self._call("chat.postMessage", **args).get("ts", ""))

    def update(self, channel: str, ts: str, blocks: list[dict[str, Any]], text: str) -> None:
        """Replace a posted message's blocks (chat.update)."""
        self._call("chat.update", channel=channel, ts=ts, blocks=blocks, text=mrkdwn.cut(text, 3900))

    def upload(self, channel: str, files: list[tuple[Path, str]], *, thread_ts: str | None = None,
               comment: str | None = None) -> list[str]:
        """Upload ``files`` (path, title) into ``channel`` (a thread when ``thread_ts``) with one comment
        (mrkdwn Warden wrote), through slack_sdk's files_upload_v2 (files.getUploadURLExternal, the upload,
        files.completeUploadExternal); returns the file ids."""
        try:
            resp = self.client.files_upload_v2(
                file_uploads=[{"file": str(p), "filename": p.name, "title": mrkdwn.plain(t, 200)} for p, t in files],
                channel=channel, thread_ts=thread_ts, initial_comment=mrkdwn.cut(comment, 3900) if comment else None)
        except SlackApiError as e:
            raise SlackPostError(f"Slack files_upload_v2: {e.response.get('error', 'error')}") from None
        except (SlackClientError, OSError) as e:
            raise SlackPostError(f"Slack files_upload_v2: {type(e).__name__}: {e}"[:300]) from None
        return [str(f.get("id")) for f in (resp.get("files") or [])]

    def open_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        """Open a modal (views.open) for the person who pressed a button."""
        self._call("views.open", trigger_id=trigger_id, view=view)
