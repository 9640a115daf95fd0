"""Issue 14 item 4: help written for the terminal (no hard-wrapped docstrings), each with an example."""

from __future__ import annotations

import pytest
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from agent.cli.app import COMMANDS, app
from agent.cli.lazy import terminal_help

ROOT = get_command(app)
CTX = ROOT.make_context("warden", ["diagnose"])


def _leaves(cmd, path=()):
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(CTX):
            yield from _leaves(cmd.get_command(CTX, name), (*path, name))
    else:
        yield path, cmd


LEAVES = list(_leaves(ROOT))


def test_terminal_help_unwraps_paragraphs_and_keeps_indented_blocks():
    doc = """First line
    continues here.

    Second paragraph
    also continues.

    Examples:
      warden a
      warden b
    """
    assert terminal_help(doc) == ("First line continues here.\n\nSecond paragraph also continues.\n\n"
                                  "Examples:\n  warden a\n  warden b")


@pytest.mark.parametrize("path,cmd", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_help_has_no_hard_wraps_and_an_example(path, cmd):
    paragraphs = cmd.help.split("\n\n")
    for para in paragraphs:
        lines = para.split("\n")
        assert len(lines) == 1 or all(ln.startswith((" ", "\t")) for ln in lines[1:]), (path, para)
    assert paragraphs[-1].startswith("Example: warden "), path
    assert cmd.short_help and "\n" not in cmd.short_help


def test_every_command_in_the_table_loads_and_shows_its_help():
    for entry in COMMANDS:
        r = CliRunner().invoke(app, [entry.name, "--help"])
        assert r.exit_code == 0 and "Traceback" not in r.output, entry.name
