"""The terminal loop of `warden chat`: read a line, answer it, print it safely.

Everything shown that came from the cluster or a model passes :func:`agent.render.safe.clean`
(escapes, bidi overrides and invisible characters made visible) and is printed with rich markup off;
a Diagnosis is drawn by agent.render.terminal like `warden diagnose` draws it. A Warden error in one
turn is one ``error:`` line, and the session goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from agent.chat.approve import ChatApprovals
from agent.chat.commands import parse_command, run_command
from agent.chat.session import ChatSession, Reply
from agent.render.safe import clean, clean_line
from agent.render.terminal import print_diagnosis
from agent.render.view import build_view
from tools.errors import WardenError

__all__ = ["run_repl", "PROMPT"]

PROMPT = "warden> "


def _say(console: Console, text: str, style: str = "") -> None:
    for line in clean(text).split("\n"):
        console.print(Text(line, style=style), soft_wrap=True, crop=False)


def show_reply(console: Console, reply: Reply, root: Path | None) -> None:
    """Print one answer: a Diagnosis drawn in full, text line by line."""
    if reply.note:
        _say(console, f"({reply.note})", "dim")
    if reply.diagnosis is not None:
        print_diagnosis(build_view(reply.diagnosis, root=root), console)
        if reply.diagnosis.proposed_actions:
            _say(console, "/plan N shows a fix's exact commands; /approve N approves it.", "dim")
        return
    _say(console, reply.text)


def _history(console: Console, session: ChatSession) -> None:
    if session.run_id is None:
        return
    turns = session.log.turns(session.run_id)
    if turns:
        _say(console, f"(resumed: {len(turns) // 2} earlier exchange(s))", "dim")
        for t in turns[-6:]:
            first = t.text.split("\n", 1)[0]
            _say(console, f"{'you' if t.role == 'user' else 'warden'}: {first[:200]}", "dim")
    if session.diagnosis is not None:
        show_reply(console, Reply(text=session.diagnosis.summary, by="diagnosis", diagnosis=session.diagnosis),
                   session.root)


def run_repl(session: ChatSession, approvals: Callable[[], ChatApprovals], *, console: Console,
             read_line: Callable[[str], str] = input, first: str | None = None, default_question: str | None = None) -> None:
    """Run the session until /quit or end of input.

    Args:
        approvals: builds the approval side on first use.
        read_line: reads one line after printing the prompt (``input``; EOFError ends the session).
        first: a first question given on the command line.
        default_question: asked when the first line is empty (an incident's own question).
    """
    _say(console, clean_line(f"warden chat: {session.target} (model {session.model}). Ask a question; /help lists "
                             "the commands."), "bold")
    if default_question and session.diagnosis is None:
        _say(console, f"Enter alone asks the incident's question: {default_question}", "dim")
    _history(console, session)
    pending = first
    while True:
        if pending is not None:
            line, pending = pending, None
        else:
            try:
                line = read_line(PROMPT)
            except EOFError:
                break
        line = line.strip()
        if not line and default_question and session.diagnosis is None:
            line = default_question
        if not line:
            continue
        try:
            if line.startswith("/"):
                try:
                    cmd = parse_command(line)
                except ValueError as e:
                    _say(console, str(e), "yellow")
                    continue
                if cmd.name == "quit":
                    break
                for out in run_command(cmd, session.diagnosis, approvals, root=session.root):
                    _say(console, out)
                continue
            if session.diagnosis is None:
                _say(console, "diagnosing…", "dim")
            show_reply(console, session.ask(line), session.root)
        except WardenError as e:
            _say(console, f"error: {' '.join(str(e).split())}", "red")
    if session.run_id:
        _say(console, f"session {session.run_id} kept: warden chat --resume {session.run_id[:12]}", "dim")
