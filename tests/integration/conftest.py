"""Fixtures for tests against the sandbox Slurm cluster (``python -m sandbox up``).

Every test here is marked ``sandbox`` and is skipped, with the reason, when the sandbox at
``$WARDEN_SANDBOX_STATE`` (default: the sandbox's default state folder) is not up.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import cluster
from sandbox.layout import Layout, SandboxConfig
from tools.sources.local import LocalSource


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.sandbox)


@pytest.fixture(scope="session")
def state_dir() -> Path:
    """The state folder of a running sandbox; skips the test when the sandbox is not up."""
    lay = Layout.of(os.environ.get("WARDEN_SANDBOX_STATE") or None)
    st = cluster.status(lay.root)
    if not st.up:
        down = [c.name for c in st.components if not c.running]
        why = f"daemons not running: {', '.join(down)}" if down else f"nodes not responding: {st.nodes}"
        pytest.skip(f"sandbox at {lay.root} is not up ({why}); start it with `python -m sandbox up`")
    return lay.root


@pytest.fixture(scope="session")
def config(state_dir: Path) -> SandboxConfig:
    """The running sandbox's settings (ports, nodes)."""
    return Layout.of(state_dir).load_config()


@pytest.fixture(scope="session")
def slurm(state_dir: Path) -> LocalSource:
    """A LocalSource pointed at the sandbox's slurm.conf."""
    return LocalSource(env=cluster.env(state_dir))
