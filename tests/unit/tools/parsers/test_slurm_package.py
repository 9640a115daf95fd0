"""The Slurm parser package: every registry entry resolves, and each module's __all__ holds."""

from __future__ import annotations

import importlib
import inspect

import pytest

from tools.parsers import PARSERS

SLURM_FORMATS = [fmt for fmt, (module, _) in PARSERS.items() if module.startswith("tools.parsers.slurm.")]
COLUMN_FORMATS = {"squeue-text", "sinfo-text", "sacct-text"}
PRIVATE = ["_values", "_states", "_table", "_json", "_keyvalue"]


def test_all_eleven_slurm_formats_are_registered() -> None:
    assert sorted(SLURM_FORMATS) == sorted([
        "squeue-json", "squeue-text", "sinfo-json", "sinfo-text", "sinfo-reasons-text",
        "scontrol-job-text", "scontrol-node-text", "sacct-json", "sacct-text", "sdiag-text", "sacctmgr-qos-text",
    ])


@pytest.mark.parametrize("fmt", SLURM_FORMATS)
def test_registry_function_exists_with_the_parser_signature(fmt: str) -> None:
    module_name, func_name = PARSERS[fmt]
    module = importlib.import_module(module_name)
    func = getattr(module, func_name)
    assert func_name in module.__all__
    params = inspect.signature(func).parameters
    assert list(params)[0] == "text" and params["path"].kind is inspect.Parameter.KEYWORD_ONLY
    assert ("columns" in params) == (fmt in COLUMN_FORMATS)
    assert func.__doc__ and "Raises:" in func.__doc__


@pytest.mark.parametrize("name", [m.rsplit(".", 1)[1] for m, _ in (PARSERS[f] for f in SLURM_FORMATS)] + PRIVATE)
def test_module_all_names_exist(name: str) -> None:
    module = importlib.import_module(f"tools.parsers.slurm.{name}")
    assert module.__all__ and all(hasattr(module, n) for n in module.__all__)
