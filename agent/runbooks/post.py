"""Where an investigation is posted: a Slack channel, a webhook, a file (a runbook's ``post:``).

Slack gets Block Kit with Approve / Deny buttons (agent/slackapp/poster.py); a webhook a JSON POST
(httpx); a file one JSON line appended. The JSON document is the same for both::

    {"schema_version": 1, "runbook": "gpu-xid", "note": "...", "mode": "recommend",
     "diagnosis": {...Diagnosis...},
     "plans": [{"type", "status", "message", "approval_id", "plan_hash", "commands"}]}

A destination that refuses is reported (:class:`Delivery` with ``ok`` False and why); the others are
still tried.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from agent.runbooks.investigate import Investigation
from agent.runbooks.model import Post
from agent.store import warden_home
from tools.errors import WardenError

__all__ = ["Delivery", "document", "deliver", "posts_dir"]

_FILE_LOCK = threading.Lock()


class Delivery(BaseModel):
    """What one destination did with a post."""

    where: str
    ok: bool
    detail: str = ""
    """The Slack ts, the HTTP status, the file path; or why it failed."""


def posts_dir() -> Path:
    """``$WARDEN_HOME/posts``: where relative ``file:`` destinations are written."""
    return warden_home() / "posts"


def document(inv: Investigation, *, runbook: str, note: str) -> dict[str, Any]:
    """The JSON document posted to webhooks and files."""
    return {"schema_version": 1, "runbook": runbook, "note": note, "mode": inv.mode, "target": inv.target,
            "diagnosis": inv.diagnosis.model_dump(mode="json", exclude={"findings"}),
            "plans": [{"type": o.spec.type, "status": o.status, "message": o.message, "approval_id": o.approval_id,
                       "plan_hash": o.plan.plan_hash if o.plan else None,
                       "commands": o.plan.commands if o.plan else []} for o in inv.outcomes]}


def deliver(inv: Investigation, post: Post, *, runbook: str, note: str,
            slack: Callable[[], Any] | None = None, images: bool = False) -> Delivery:
    """Post ``inv`` to one destination. ``slack`` makes the SlackPoster (only when a Slack post is due);
    ``images``: a Slack post also gets the report's pictures in its thread (a failed upload is noted
    in ``detail``; the message itself was delivered)."""
    where = post.describe()
    try:
        if post.slack:
            if slack is None:
                return Delivery(where=where, ok=False, detail="no Slack client (WARDEN_SLACK_TOKEN not set)")
            poster = slack()
            ts = poster.post_investigation(post.slack, inv, note=note)
            detail = f"ts {ts}"
            if images and ts:
                from agent.slackapp.images import share_report

                try:
                    detail += f", images {','.join(share_report(poster, post.slack, ts, inv)) or 'none drawn'}"
                except WardenError as e:
                    detail += f", images not uploaded: {e}"[:300]
            return Delivery(where=where, ok=bool(ts), detail=detail)
        doc = document(inv, runbook=runbook, note=note)
        if post.webhook:
            r = httpx.post(post.webhook, json=doc, timeout=15)
            return Delivery(where=where, ok=r.is_success, detail=f"HTTP {r.status_code}")
        assert post.file is not None
        path = post.file if post.file.is_absolute() else posts_dir() / post.file
        path.parent.mkdir(parents=True, exist_ok=True)
        with _FILE_LOCK, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        return Delivery(where=where, ok=True, detail=str(path))
    except (WardenError, httpx.HTTPError, OSError) as e:
        return Delivery(where=where, ok=False, detail=f"{type(e).__name__}: {e}"[:300])
