"""agent.render is shared by every front end: each module declares ``__all__``, and importing it pulls in
neither a front end (agent.cli, typer) nor the agent loop (pydantic-ai)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import agent.render

MODULES = sorted(m.name for m in pkgutil.walk_packages(agent.render.__path__, "agent.render."))
REPO = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("name", ["agent.render", *MODULES])
def test_all_is_declared_and_resolves(name: str):
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list)
    assert all(hasattr(module, attr) for attr in module.__all__)


def test_rendering_needs_no_front_end_and_no_agent_loop():
    code = "import sys, agent.render; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
           "('typer', 'pydantic_ai', 'openai') or m.startswith('agent.cli')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={"PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"
