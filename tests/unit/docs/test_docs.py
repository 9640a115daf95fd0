"""Docs as contract: every CLI command, check id and format id is documented in the README."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.main import get_command

from agent.cli.app import app
from typer.core import TyperGroup
from tools.checks import CHECKS
from tools.models.ids import FORMAT_IDS
from tools.parsers import PARSERS

README = (Path(__file__).resolve().parents[3] / "README.md").read_text()


ROOT = get_command(app)
CTX = ROOT.make_context("warden", ["diagnose"])


def _sub(cmd, name: str):
    return cmd.get_command(CTX, name)  # the root group imports a command module only here


def _commands(cmd, prefix: str = ""):
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(CTX):
            yield from _commands(_sub(cmd, name), f"{prefix} {name}".strip())
    else:
        yield prefix


COMMANDS = sorted(_commands(ROOT))


def test_there_are_commands():
    assert "diagnose" in COMMANDS and len(COMMANDS) >= 10


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_documented(command: str):
    assert f"warden {command}" in README


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_ends_with_an_example(command: str):
    cmd = ROOT
    for part in command.split():
        cmd = _sub(cmd, part)
    assert "Example: warden " in (cmd.help or ""), f"{command}: help has no example"


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_check_is_documented(check: str):
    assert f"`{check}`" in README


@pytest.mark.parametrize("format_id", sorted(FORMAT_IDS))
def test_every_format_is_documented_and_parsed(format_id: str):
    assert f"`{format_id}`" in README
    assert format_id in PARSERS
