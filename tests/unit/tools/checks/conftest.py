"""Facts for check tests are built the way replay builds them: raw real-format text through the parsers."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tools.facts import Facts, build_facts
from tools.sources.base import RawArtifact

NOW = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)


def facts_from(*files: tuple[str, str, str], **context: dict[str, str]) -> Facts:
    """``files``: (path, format id, text). ``context[path]`` may give node / job for that file."""
    arts = [RawArtifact(format=fmt, data=text.encode(), path=path, captured_at=NOW, **context.get(path, {}))
            for path, fmt, text in files]
    return build_facts(arts, captured_at=NOW)


@pytest.fixture
def make_facts():
    return facts_from
