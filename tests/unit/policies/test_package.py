"""The policies package: its public names resolve, and it imports only third-party code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import policies

PACKAGE_DIR = Path(policies.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__")
WARDEN_PACKAGES = {"agent", "tools", "gateway", "evals", "sandbox"}


@pytest.mark.parametrize("module", ["__init__", *MODULES])
def test_all_names_resolve(module: str) -> None:
    mod = policies if module == "__init__" else importlib.import_module(f"policies.{module}")
    assert mod.__all__, module
    for name in mod.__all__:
        assert hasattr(mod, name), f"policies.{module}.{name}"


@pytest.mark.parametrize("module", MODULES)
def test_imports_only_third_party_and_itself(module: str) -> None:
    tree = ast.parse((PACKAGE_DIR / f"{module}.py").read_text())
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in WARDEN_PACKAGES, f"policies/{module}.py imports {name}"


def test_policy_and_schema_files_ship_with_the_package() -> None:
    assert (PACKAGE_DIR / "default.cedar").is_file()
    assert (PACKAGE_DIR / "warden.cedarschema").is_file()
