"""Every gateway module declares ``__all__`` naming only what it defines or re-exports, and imports
nothing of Warden's other packages (DESIGN: gateway imports third-party packages only)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import gateway

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(gateway.__path__, "gateway.") if not m.name.startswith("gateway.builtin")
)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_declared_and_resolves(name):
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list), name
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"


@pytest.mark.parametrize("name", MODULES)
def test_imports_no_other_warden_package(name):
    path = Path(importlib.import_module(name).__file__)
    tree = ast.parse(path.read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    banned = {i for i in imported if i.split(".")[0] in {"tools", "agent", "evals", "policies", "sandbox"}}
    assert not banned, f"{name} imports {banned}"
