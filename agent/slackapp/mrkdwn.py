"""Cluster text made safe for Slack's mrkdwn: no markup, no mentions, no broken code blocks.

Slack reads ``&``, ``<`` and ``>`` as control characters in message text (``<@U123>`` mentions a
person, ``<!channel>``/``<!here>`` pings everyone, ``<https://x|label>`` hides a link); its
formatting docs say to escape exactly these three as ``&amp;``, ``&lt;`` and ``&gt;``. A plain
``@channel``/``@here``/``@everyone`` is also turned into a broadcast when a client parses names, so a
zero-width joiner is put after the ``@``. Job names, log lines and drain reasons are untrusted: they
go through :func:`text` (or :func:`code` inside a code block, where a stray triple backtick would
end the block early). Unprintable characters are shown escaped first (agent.render.safe.clean).
"""

from __future__ import annotations

import re

from agent.render.safe import clean, clean_line

__all__ = ["text", "line", "code", "plain", "cut"]

_BROADCAST = re.compile(r"@(?=(channel|here|everyone)\b)", re.IGNORECASE)
_WJ = "\u2060"  # WORD JOINER: invisible, breaks the word Slack would match


def _escape(s: str) -> str:
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@" + _WJ, s)


def cut(s: str, n: int) -> str:
    """``s`` at most ``n`` characters, an ellipsis marking a cut."""
    return s if len(s) <= n else s[: max(n - 1, 0)] + "…"


def text(s: str, n: int = 2800) -> str:
    """Untrusted text for a mrkdwn field: unprintables shown escaped, ``& < >`` escaped, broadcasts
    defused, mrkdwn emphasis characters left literal only where harmless; at most ``n`` characters."""
    return _escape(cut(clean(str(s)), n))


def line(s: str, n: int = 300) -> str:
    """Like :func:`text`, on one line (newlines shown as ``\\n``)."""
    return _escape(cut(clean_line(str(s)), n))


def code(s: str, n: int = 2800) -> str:
    """Text for inside a ``` code block: escaped like :func:`text`, and a triple backtick in it broken
    up so it cannot close the block."""
    return text(s, n).replace("```", "`\u200b``")


def plain(s: str, n: int = 150) -> str:
    """Untrusted text for a ``plain_text`` object (buttons, headers): no markup is read there, but
    broadcasts are still defused and the length is capped."""
    return _BROADCAST.sub("@" + _WJ, cut(clean_line(str(s)), n))
