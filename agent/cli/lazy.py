"""A typer group whose commands are imported only when one of them runs.

``warden --help`` lists every command from a table (name, one-line summary, help panel) without
importing a single command module; ``warden diagnose ...`` imports ``agent.cli.diagnose`` and
nothing else of the CLI. A command module's own heavy imports (the agent, pydantic-ai, the gateway)
sit inside its functions, so ``warden approvals list`` never pays for the agent.

The group also owns how the CLI fails: a usage error, a Warden error or an unexpected exception
ends as one ``error:`` line on stderr with its exit code (see agent.cli.errors), the same under
``CliRunner`` as from the console script.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer import _click as click  # typer 0.29 carries its own copy of click (pinned in pyproject.toml)
from typer.core import TyperCommand, TyperGroup

from agent.cli.errors import EXIT_ERROR, EXIT_INTERRUPTED, print_error, report
from agent.cli.startup import import_phase

__all__ = ["LazyCommand", "LazyGroup", "terminal_help", "first_sentence", "click"]


@dataclass(frozen=True)
class LazyCommand:
    """One entry of the command table."""

    name: str
    target: str
    """``module:attribute``: a typer.Typer (a command group) or a command function."""
    summary: str
    """One line for the command list (``warden --help``)."""
    panel: str = "Commands"


def terminal_help(text: str | None) -> str:
    """A docstring made for the terminal: each paragraph on one line (no hard wraps), indented lines kept.

    Paragraphs are separated by blank lines; a paragraph whose continuation lines are indented
    (an example block) keeps its line breaks.
    """
    paragraphs = []
    for para in inspect.cleandoc(text or "").split("\n\n"):
        lines = para.split("\n")
        if len(lines) > 1 and all(line.startswith((" ", "\t")) for line in lines[1:]):
            paragraphs.append(para)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(p for p in paragraphs if p.strip())


def first_sentence(text: str) -> str:
    """The first sentence of the first paragraph (for a command list)."""
    first = terminal_help(text).split("\n\n", 1)[0]
    m = re.match(r"(.+?[.!?])(\s|$)", first)
    return (m[1] if m else first).rstrip(".")


def _tidy(cmd: click.Command) -> click.Command:
    """Rewrap the help of ``cmd`` and of its subcommands for the terminal; give each a short help."""
    cmd.help = terminal_help(cmd.help)
    if not cmd.short_help and cmd.help:
        cmd.short_help = first_sentence(cmd.help)
    for sub in getattr(cmd, "commands", {}).values():
        _tidy(sub)
    return cmd


def load_command(entry: LazyCommand) -> click.Command:
    """Import ``entry.target`` and turn it into a click command named ``entry.name``."""
    module, _, attr = entry.target.partition(":")
    with import_phase():
        obj = getattr(importlib.import_module(module), attr)
    if isinstance(obj, typer.Typer):
        cmd = typer.main.get_group(obj)
    else:
        single = typer.Typer(add_completion=False)
        single.command(entry.name)(obj)
        cmd = typer.main.get_command(single)
    cmd.name = entry.name
    setattr(cmd, "rich_help_panel", entry.panel)
    return _tidy(cmd)


class LazyGroup(TyperGroup):
    """The root group: commands from :attr:`table`, loaded on first use."""

    table: ClassVar[tuple[LazyCommand, ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._entries = {e.name: e for e in self.table}
        self._listing = 0

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self._entries, *(n for n in self.commands if n not in self._entries)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        entry = self._entries.get(cmd_name)
        if entry is None:
            return None
        if self._listing:  # a help page or a completion list: the summary is enough
            return TyperCommand(entry.name, help=entry.summary, short_help=entry.summary, rich_help_panel=entry.panel)
        self.commands[cmd_name] = load_command(entry)
        return self.commands[cmd_name]

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as e:
            if args and "Did you mean" not in e.message:
                close = difflib.get_close_matches(args[0], self.list_commands(ctx))
                if close:
                    e.message = f"{e.message.rstrip('.')}. Did you mean {', '.join(map(repr, close))}?"
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, one section per help panel (plain help: no rich import for `warden --help`)."""
        panels: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            entry = self._entries.get(name)
            summary = entry.summary if entry else (self.commands[name].get_short_help_str() if name in self.commands else "")
            panels.setdefault(entry.panel if entry else "Commands", []).append((name, summary))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing += 1
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing -= 1

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        self._listing += 1
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing -= 1

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Run the CLI; in standalone mode every failure ends as one line and an exit code."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # `warden` or `warden gateway` alone: the help page
            e.show()
            sys.exit(e.exit_code)
        except click.exceptions.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else (prog_name or "warden")
            print_error(f"{' '.join(e.format_message().split())} (see: {where} --help)")
            sys.exit(EXIT_ERROR)
        except click.exceptions.ClickException as e:
            print_error(' '.join(e.format_message().split()))
            sys.exit(e.exit_code if e.exit_code != 1 else EXIT_ERROR)
        except (typer.Abort, KeyboardInterrupt):
            print_error("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # `warden ... | head`: the reader left; say nothing more
            sys.stderr.close()
            sys.exit(0)
        except Exception as e:
            sys.exit(report(e))
        sys.exit(rv if isinstance(rv, int) else 0)
