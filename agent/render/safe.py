"""Cluster text made safe to show: escapes, bidi overrides and invisible characters shown escaped.

Job names, log lines, drain reasons and a user's question reach the terminal, Markdown and Slack.
Such text may carry ANSI/OSC escape sequences (which recolour, retitle or rewrite a terminal, or
plant hyperlinks), bidi overrides (U+202E makes ``gpu017`` display as ``710upg``), zero-width
characters (two names that look equal but are not) and Unicode tag characters. Everything that is
not printable is shown as an escape (``\\x1b``, ``\\u202e``) so the reader sees that it is there.

Commands get the same care with a different goal: :func:`shell_command` quotes each argument so a
pasted line runs exactly the argument list Warden planned, writing unprintable bytes as bash's
``$'\\xHH'`` so the line is both safe to display and exact to paste.
"""

from __future__ import annotations

import shlex

__all__ = ["clean", "clean_line", "shell_command", "shell_quote"]


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def clean(text: str) -> str:
    """``text`` with every unprintable character escaped, keeping newlines (tabs become a space).

    Unprintable follows ``str.isprintable``: C0/C1 controls (ESC, BEL, CR, DEL ...), format characters
    (bidi embeddings, overrides and isolates, zero-width space/joiners, word joiner, BOM, soft hyphen,
    tag characters), line/paragraph separators, unassigned and private-use code points, and spaces
    other than U+0020.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == "\n":
            out.append(ch)
        elif ch == "\t":
            out.append(" ")
        else:
            out.append(_escape(ch))
    return "".join(out)


def clean_line(text: str) -> str:
    """Like :func:`clean`, for text shown on one line: newlines become ``\\n`` too."""
    return clean(text).replace("\n", "\\n")


def shell_quote(arg: str) -> str:
    """One argument quoted for bash: ``shlex.quote``, or ANSI-C ``$'...'`` when it holds an unprintable
    character or a newline (each such character written as its UTF-8 bytes, ``\\xHH``)."""
    if arg.isprintable():
        return shlex.quote(arg)
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "!":  # never a history expansion when pasted into an interactive shell
            out.append("\\x21")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return "$'" + "".join(out) + "'"


def shell_command(argv: list[str]) -> str:
    """An argument list as one bash command line that pastes and runs exactly ``argv``."""
    return " ".join(shell_quote(a) for a in argv)
