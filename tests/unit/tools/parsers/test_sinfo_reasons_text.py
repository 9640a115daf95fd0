"""sinfo-reasons-text parser (sinfo -R) on real captures (tests/fixtures/sinfo-reasons-text/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import NodeReason
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sinfo-reasons-text"
GOOD = sorted(FIXTURES.glob("*.txt"))


def _parse(name: str, data: bytes | None = None) -> list[NodeReason]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="sinfo-reasons-text", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_reasons_with_user_time_and_nodes(fixture: Path) -> None:
    reasons = _parse(fixture.name)
    assert reasons and all(r.reason and r.user == "root" and r.nodes for r in reasons)
    assert all(r.timestamp is not None and r.timestamp.tzinfo is not None for r in reasons)


def test_default_layout_real_capture() -> None:
    down, xid, kill = _parse("22.05-default.txt")
    assert (down.reason, down.nodes) == ("Not responding", ["gpu04"])
    assert down.timestamp == datetime(2026, 11, 29, 15, 54, 44, tzinfo=timezone.utc)
    assert (xid.reason, xid.nodes) == ("warden: Xid 79 on GP", ["gpu02"])  # %20E cut
    assert (kill.reason, kill.nodes) == ("Kill task failed", ["gpu03"])


def test_idle_drained_node_reason_cut_at_20_characters() -> None:
    (row,) = _parse("22.05-idle-drained.txt")
    assert row.reason == "warden: GPU 3 row-re" and row.nodes == ["gpu04"]


def test_wide_layout_keeps_the_whole_reason() -> None:
    (row,) = _parse("22.05-wide.txt")
    assert row.reason == "warden: Xid 79 on GPU 2 (fallen off the bus)" and row.nodes == ["gpu02"]


def test_public_report_kill_task_failed() -> None:
    (row,) = _parse("unknown-hyperpod-kill-task-failed.txt")
    assert row.reason == "Kill task failed" and row.user == "root" and row.nodes == ["node001"]
    assert row.timestamp == datetime(2024, 1, 25, 15, 12, 23, tzinfo=timezone.utc)


def test_hostlist_rows_expand() -> None:
    data = b"REASON               USER      TIMESTAMP           NODELIST\nrow remap; $(reboot) slurm     Unknown             gpu[017-019,021]\n"
    (row,) = _parse("h.txt", data=data)
    assert row.reason == "row remap; $(reboot)" and row.timestamp is None
    assert row.nodes == ["gpu017", "gpu018", "gpu019", "gpu021"]


def test_row_cut_short_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-default.txt").read_bytes().rstrip(b"\n")
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=data[:-12])
    assert err.value.path == "slurm/cut.txt" and err.value.line == 4


def test_wrong_header_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("squeue.txt", data=(Path(__file__).parents[3] / "fixtures" / "squeue-text" / "22.05-default.txt").read_bytes())
    assert err.value.line == 1


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"   ")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    data = (FIXTURES / "22.05-default.txt").read_bytes().replace(b"Kill task", b"Kill t\xe2sk")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=data)
    assert err.value.line == 4
