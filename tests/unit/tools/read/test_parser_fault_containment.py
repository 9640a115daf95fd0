"""One file whose parser fails in an unforeseen way (its own bug, not a ParseError) degrades the facts: the file
is recorded unreadable with the reason and every other file is still read. Fault injected by routing a format
to a module function that raises, through the parsers' own registry."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tools.facts import build_facts
from tools.parsers import PARSERS
from tools.sources.base import RawArtifact

NOW = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)
SQUEUE = """             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             74120       gpu dpo-llam     dave  R    1:10:02      1 gpu012
"""


def _explode(text: str, *, path: str) -> list:
    raise ValueError(f"internal bug while reading {path}")


def test_a_parser_bug_on_one_file_records_it_unreadable_and_keeps_the_rest(monkeypatch):
    monkeypatch.setitem(PARSERS, "lfs-df", (__name__, "_explode"))
    arts = [RawArtifact(format="squeue-text", data=SQUEUE.encode(), path="slurm/squeue.txt", captured_at=NOW),
            RawArtifact(format="lfs-df", data=b"UUID 1K-blocks\n", path="lustre/df.txt", captured_at=NOW)]
    facts = build_facts(arts, captured_at=NOW)
    assert [j.job_id for j in facts.jobs] == ["74120"]
    (bad,) = facts.unreadable
    assert bad.path == "lustre/df.txt" and bad.reason.startswith("parser failed (ValueError): internal bug")
    with pytest.raises(ValueError):
        build_facts(arts, captured_at=NOW, strict=True)
