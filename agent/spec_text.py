"""A proposed action's free text made safe to write: one short printable line.

Kept apart from agent.execute (policies, Cedar, the action classes) so that a diagnosis, which only
renders plans, does not import the execution stack.
"""

from __future__ import annotations

import re

from tools.models.findings import ActionSpec

__all__ = ["REASON_MAX_CHARS", "sanitize_spec"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
REASON_MAX_CHARS = 200
"""Longest drain/notify reason Warden writes; longer cluster text is cut."""


def sanitize_spec(spec: ActionSpec) -> ActionSpec:
    """The spec with its free-text ``reason`` made one short, printable line (control characters,
    ANSI escapes and bidi overrides removed, whitespace collapsed, at most REASON_MAX_CHARS)."""
    if spec.reason is None:
        return spec
    text = " ".join(_CONTROL.sub(" ", spec.reason).split())[:REASON_MAX_CHARS]
    return spec.model_copy(update={"reason": text})
