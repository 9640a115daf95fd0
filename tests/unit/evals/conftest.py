"""Eval-suite tests: eval_helpers in this directory is importable by name, also under
``--import-mode=importlib``; ``home`` gives each test its own $WARDEN_HOME."""

import sys
from pathlib import Path

import pytest

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private $WARDEN_HOME."""
    h = tmp_path / "home"
    monkeypatch.setenv("WARDEN_HOME", str(h))
    monkeypatch.delenv("WARDEN_GATEWAY_URL", raising=False)
    return h
