"""`warden chat [PATH | --live]`: an interactive session; the first question diagnoses, follow-ups reuse it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.gateway_option import GatewayConfigOption

__all__ = ["chat_cmd"]


def chat_cmd(
    path: Annotated[Path | None, typer.Argument(help="Incident or snapshot directory; omit with --live or --resume.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Chat about the live cluster that warden.toml describes.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Gateway model alias (default warden-builtin, or the resumed session's).")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue a session (or a diagnosis) from the run store: a run id, prefix or `last`.")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="With --live: approved fixes run for real (default: dry run).")] = False,
    question: Annotated[str | None, typer.Option("--question", "-q", help="The first question, asked at once.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Run store (SQLite); default $WARDEN_HOME/warden.db.")] = None,
    gateway_config: GatewayConfigOption = None,
) -> None:
    """Chat with Warden about an incident, a snapshot or the live cluster. The first question runs a
    diagnosis; follow-ups ("why not gpu005?", "show the log lines", "what would draining cost?")
    reuse the same evidence and conversation. /plan N shows a fix's exact commands, /approve N and
    /deny N decide it through the approval flow as your login user (audited; nothing runs on a
    snapshot, and live only with --execute), /evidence, /help, /quit. The session is kept in the
    run store: --resume RUN continues it.

    Example: warden chat evals/incidents/xid79-nccl-watchdog-other-rank
    """
    console = Console(highlight=False, soft_wrap=True)
    with warden_errors():
        from agent.chat.repl import run_repl
        from agent.chat.start import open_chat

        start = open_chat(path, live=live, config=config, model=model, resume=resume, execute=execute, db=db,
                          gateway_config=gateway_config)
    if sys.stdin.isatty() and os.environ.get("TERM", "dumb") != "dumb":
        import readline  # noqa: F401 - line editing and history for input()
    try:
        with warden_errors():
            run_repl(start.session, start.approvals, console=console, first=question,
                     default_question=start.default_question)
    except KeyboardInterrupt:
        console.print("")
    finally:
        start.session.close()
