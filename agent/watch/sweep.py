"""One sweep of ``warden watch``: diagnose with the built-in model, post only new or changed findings.

A sweep asks the target the default question with the deterministic engine (the built-in model: no
LLM call, no cost). Its answer is keyed by root cause and culprits
(``finding:<target>:<root cause>:<sorted culprits>``); a key already posted within the cool-down
(kept in the run store, so restarts and cron runs agree) is not posted again, so an unchanged
finding is posted once and a new or changed one (another cause, another culprit) at once.
``healthy`` is never posted. Only a finding that is posted is sent through the execution path (in
the chosen mode, so ``recommend`` posts Approve / Deny buttons), so quiet sweeps create no approvals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agent.autonomy import Mode
from agent.runbooks.cooldown import Cooldowns
from agent.runbooks.investigate import decide, diagnose_target
from agent.runbooks.model import Post
from agent.runbooks.post import Delivery, deliver
from agent.runbooks.target import Target
from agent.settings import WardenSettings
from gateway.config import BUILTIN_MODEL
from tools.models.findings import Diagnosis

__all__ = ["SweepResult", "finding_key", "sweep", "parse_post", "parse_every"]


class SweepResult(BaseModel):
    """What one sweep found and did."""

    root_cause: str
    culprits: list[str]
    run_id: str | None
    key: str
    posted: bool
    why: str
    """``new``, ``healthy: nothing to post``, ``unchanged: posted within the cool-down``."""
    deliveries: list[Delivery] = []


def finding_key(target: Target, d: Diagnosis) -> str:
    """The dedup key of a Diagnosis: target, root cause and sorted culprits."""
    return f"finding:{target.name}:{d.root_cause}:{','.join(sorted(d.culprits))}"


def sweep(target: Target, posts: list[Post], *, cooldowns: Cooldowns, cooldown_s: float, mode: Mode = "observe",
          settings: Callable[[], WardenSettings] = WardenSettings.load, question: str | None = None,
          slack: Callable[[], Any] | None = None) -> SweepResult:
    """Run one sweep (see the module docstring).

    Raises:
        WardenError: the evidence cannot be read, the config or policy is invalid.
    """
    from agent.diagnose import DEFAULT_QUESTION

    s = settings()
    q = question or target.default_question() or DEFAULT_QUESTION
    d, facts, live_cfg = diagnose_target(target, q, settings=s, model=BUILTIN_MODEL)
    key = finding_key(target, d)
    base = {"root_cause": d.root_cause, "culprits": d.culprits, "run_id": d.run_id, "key": key}
    if d.root_cause == "healthy":
        return SweepResult(posted=False, why="healthy: nothing to post", **base)
    if not cooldowns.claim([key], cooldown_s, note="watch"):
        return SweepResult(posted=False, why="unchanged: posted within the cool-down", **base)
    inv = decide(target, d, facts, live_cfg, settings=s, requester="warden-watch", mode=mode)
    note = f"warden watch · new finding on {target.name}"
    out = [deliver(inv, p, runbook="watch", note=note, slack=slack) for p in posts]
    if posts and not any(x.ok for x in out):
        cooldowns.release([key])  # nothing reached anyone: try again next sweep
    return SweepResult(posted=any(x.ok for x in out), why="new", deliveries=out, **base)


def parse_post(text: str) -> Post:
    """``slack:C0123``, ``webhook:https://…`` or ``file:PATH`` as a Post.

    Raises:
        ValueError: another form (the message names the accepted ones).
    """
    kind, _, where = text.partition(":")
    if kind not in ("slack", "webhook", "file") or not where:
        raise ValueError(f"--post {text!r}: use slack:CHANNEL_ID, webhook:URL or file:PATH")
    return Post.model_validate({kind: where})


def parse_every(text: str) -> float:
    """``30s``, ``5m``, ``1h`` (or plain seconds) as seconds, at least 10.

    Raises:
        ValueError: not a duration, or shorter than 10 s.
    """
    t = text.strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(t[-1:], None)
    try:
        value = float(t[:-1]) * mult if mult else float(t)
    except ValueError:
        raise ValueError(f"--every {text!r}: give a duration like 30s, 5m or 1h") from None
    if value < 10:
        raise ValueError(f"--every {text!r}: at least 10 s between sweeps")
    return value
