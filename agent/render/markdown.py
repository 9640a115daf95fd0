"""A DiagnosisView as Markdown (CommonMark): for tickets, chat, `--output markdown` and reports.

Cluster text is escaped so it can never become a link, an image, HTML or a heading; commands go in
fenced ``bash`` blocks whose fence is longer than any run of backticks inside them.
"""

from __future__ import annotations

import re

from agent.render.view import DiagnosisView

__all__ = ["to_markdown", "md_escape", "md_code"]

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_LINE_START = re.compile(r"^(\s*)(\d*)([#>+\-=]|(?<=\d)[.)])", re.MULTILINE)


def md_escape(text: str) -> str:
    """``text`` with everything that could start CommonMark markup backslash-escaped: emphasis, code,
    links and images, HTML and entities, tables, strike-through, and at a line's start headings,
    quotes, list markers and setext underlines."""
    text = _SPECIAL.sub(r"\\\1", text)
    return _LINE_START.sub(lambda m: m[1] + m[2] + "\\" + m[3], text)


def md_code(text: str) -> str:
    """An inline code span holding ``text`` exactly (fenced by more backticks than it contains)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _block(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=2)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}bash", *lines, fence]


def to_markdown(view: DiagnosisView) -> str:
    """Markdown text of ``view`` (headline as a bold first line, evidence as a list, fixes with code blocks)."""
    out = [f"**{md_escape(view.headline())}**", ""]
    if view.question:
        out += [f"> {md_escape(view.question).replace(chr(10), ' ')}", ""]
    out += [md_escape(view.summary), ""]
    if view.partial:
        out += [f"*Partial result:* {md_escape(view.partial)}", ""]
    if view.evidence:
        out += ["### Evidence", ""]
        for e in view.evidence:
            when = f"{md_code(e.when)} " if e.when else ""
            where = f"{md_code(e.where)}: " if e.where else ""
            out.append(f"- {when}{where}{md_escape(e.text)}")
        out.append("")
    if view.plans:
        out += ["### Fixes (dry run: nothing was executed)", ""]
        for p in view.plans:
            out.append(f"{p.number}. {md_escape(p.title)} ({p.reversibility}, plan {md_code(p.plan_hash[:16])})")
            if p.error:
                out.append(f"   cannot plan: {md_escape(p.error)}")
            if p.commands:
                out += ["", *("   " + line for line in _block(p.commands))]
            out.append("")
    if view.unreadable:
        out += ["### Could not read", "", *(f"- {md_escape(u)}" for u in view.unreadable), ""]
    if view.run_id:
        out += [f"run {md_code(view.run_id)}", ""]
    return "\n".join(out).rstrip() + "\n"
