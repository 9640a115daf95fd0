"""tools.read.coverage: what a subject the question names stands for in the snapshot."""

from __future__ import annotations

from datetime import datetime, timezone

from tools.facts import build_facts
from tools.read.coverage import _subject
from tools.sources.base import RawArtifact

NOW = datetime(2026, 5, 12, 11, 16, tzinfo=timezone.utc)
SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up 2-00:00:00      3  alloc hpc-a[01-03]
gpu*         up 2-00:00:00      1   idle hpc-a04
gpu*         up 2-00:00:00      2   idle hpcb[1-2]
"""


def _facts():
    return build_facts([RawArtifact(format="sinfo-text", data=SINFO.encode(), path="slurm/sinfo.txt",
                                    captured_at=NOW)], captured_at=NOW)


def test_a_node_name_without_its_number_is_the_group_of_those_nodes():
    s = _subject(_facts(), "hpc-a")
    assert (s.known, s.kind, s.nodes) == (True, "nodes", ["hpc-a01", "hpc-a02", "hpc-a03", "hpc-a04"])
    assert s.state == "4 node(s): 3 ALLOCATED, 1 IDLE"
    assert _subject(_facts(), "hpcb").nodes == ["hpcb1", "hpcb2"]


def test_an_unknown_numbered_node_is_still_unknown():
    s = _subject(_facts(), "hpc-a09")
    assert (s.known, s.kind) == (False, "node")
    assert not _subject(_facts(), "hpc").known  # "hpc" + "-a01" is no number: not a group
