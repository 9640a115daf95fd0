"""Docs as contract: every CLI command, check id and format id is documented in the README."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.main import get_command

from agent.cli.app import app
from tools.checks import CHECKS
from tools.models.ids import FORMAT_IDS
from tools.parsers import PARSERS

README = (Path(__file__).resolve().parents[3] / "README.md").read_text()


def _commands(cmd, prefix: str = ""):
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _commands(sub, f"{prefix} {name}".strip())
    else:
        yield prefix


COMMANDS = sorted(_commands(get_command(app)))


def test_there_are_commands():
    assert "diagnose" in COMMANDS and len(COMMANDS) >= 10


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_documented(command: str):
    assert f"warden {command}" in README


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_ends_with_an_example(command: str):
    cmd = get_command(app)
    for part in command.split():
        cmd = cmd.commands[part]
    assert "Example: warden " in (cmd.help or ""), f"{command}: help has no example"


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_check_is_documented(check: str):
    assert f"`{check}`" in README


@pytest.mark.parametrize("format_id", sorted(FORMAT_IDS))
def test_every_format_is_documented_and_parsed(format_id: str):
    assert f"`{format_id}`" in README
    assert format_id in PARSERS
